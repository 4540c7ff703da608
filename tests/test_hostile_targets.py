"""Containment against hostile targets (issue 29): what an implementation starts, even in a session of its own,
never outlives its invocation; a daemon that keeps the output pipes open is not a false "timed out"; what it
writes to its temporary directory stays in the run's tree and goes with it; a crash is a crash.
the network it sees is loopback only, with no way out (The garbage and silent targets are
tests/test_nothing_judged.py's.)"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_target_hygiene import alive

from pytest_dws.launch import Runner
from tests.conftest import REFERENCE_CLI, reference_copy

PY = sys.executable

#: Double fork into a new session (setsid), the grandchild sleeping; the target itself exits at once.
DAEMON = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        {keep}
        time.sleep(600)
    os._exit(0)
os.wait()
print(open("/proc/self/stat").read().split()[0], flush=True)
"""


def _alive_with(marker: bytes) -> list[int]:
    """Live processes whose command line holds ``marker``."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker in cmd and alive(int(entry)):
                out.append(int(entry))
    return out


def _daemon_pids() -> list[int]:
    """Processes of this test run still sleeping in a daemon (found by their command line)."""
    return _alive_with(b"time.sleep(600)")


def test_a_daemon_in_its_own_session_does_not_outlive_its_invocation() -> None:
    before = set(_daemon_pids())
    body = DAEMON.format(keep="sys.stdout.close(); sys.stderr.close(); os.close(1); os.close(2)")
    inv = Runner([PY, "-c", body], None, timeout=20).run(globals_=False, check=False)
    assert inv.exit_code == 0 and not inv.timed_out, inv.describe()
    time.sleep(0.2)
    assert set(_daemon_pids()) <= before, "a setsid daemon survived its invocation"


def test_a_daemon_holding_the_output_pipes_is_no_false_timeout() -> None:
    before = set(_daemon_pids())
    start = time.perf_counter()
    inv = Runner([PY, "-c", DAEMON.format(keep="pass")], None, timeout=20).run(globals_=False, check=False)
    assert inv.exit_code == 0 and not inv.timed_out, inv.describe()
    assert time.perf_counter() - start < 10  # the leader's exit ends the invocation, not the 20 s deadline
    time.sleep(0.2)
    assert set(_daemon_pids()) <= before


def test_what_a_target_writes_to_its_tmpdir_stays_in_the_run_and_goes_with_it(tmp_path: Path) -> None:
    body = ("import os, tempfile; fd, p = tempfile.mkstemp(prefix='dws-hostile-'); os.write(fd, b'x'); "
            "print(p, os.environ['TMPDIR'], flush=True)")
    runner = Runner([PY, "-c", body], None, timeout=20)
    inv = runner.run(globals_=False)
    written, tmpdir = inv.stdout.split()
    assert not written.startswith("/tmp/dws-hostile-"), "the target wrote to the machine's /tmp"
    assert Path(written).parent == Path(tmpdir)
    runner.close()
    assert not Path(written).exists(), "the target's temporary file outlived the runner"


def test_a_segfault_is_a_crash_not_an_exit_code() -> None:
    inv = Runner([PY, "-c", "import ctypes; ctypes.string_at(0)"], None, timeout=20).run(globals_=False,
                                                                                      check=False)
    assert inv.crashed and inv.signal == 11 and inv.exit_code != 0


HANGS = "#!/bin/sh\nsleep 600\n"
HANGS_AFTER_HELP = ('#!/bin/sh\nfor a in "$@"; do [ "$a" = "--help" ] && { echo "Usage: dws [command]"; exit 0; }; '
                    'done\nsleep 600\n')


@pytest.mark.parametrize(("body", "words"), [(HANGS, "did not answer"), (HANGS_AFTER_HELP, "in a row timed out")])
def test_a_hanging_target_ends_the_run_as_bad_input_promptly(body: str, words: str, run_contract: Any,
                                                            tmp_path: Path) -> None:
    """Issue 28: before the plan, `--help` must answer within the timeout; during the run, consecutive timeouts
    trip a breaker. Either way: exit 4 with one line, in seconds, and no sleeper left behind."""
    target = tmp_path / "hang.sh"
    target.write_text(body, encoding="utf-8")
    target.chmod(0o755)
    start = time.perf_counter()
    run = run_contract("--dws-cli", str(target), "--dws-timeout=1", inprocess=False)  # 5 in a row: ~5 s of waiting
    assert run.ret == 4 and words in run.output(), run.output()[-1500:]
    assert time.perf_counter() - start < 60
    assert not _alive_with(str(target).encode())



def test_the_targets_control_characters_are_escaped_when_shown() -> None:
    body = "import sys; sys.stdout.write('\\x1b]0;pwned\\x07\\x00garbage'); sys.exit(1)"
    inv = Runner([PY, "-c", body], None, timeout=20).run(globals_=False, check=False)
    shown = inv.describe()
    assert "\\x1b]0;pwned\\x07\\x00garbage" in shown
    assert not any(c in shown for c in "\x1b\x07\x00")


#: Each invocation notes what network it sees: its interfaces, its default routes, and whether a loopback port of
#: the machine OUTSIDE the session (the test's own listener) answers. No packet is ever sent off loopback.
NETWORK_PROBE = """#!{python}
import json, socket, sys
sys.path.insert(0, {repo!r})
from pytest_dws.launch.contain.sandbox import default_routes, interfaces
if "--help" in sys.argv:
    print("Usage: dws [command]")
    sys.exit(0)
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    outside = "connected"
except OSError as exc:
    outside = type(exc).__name__
# (its folders are its own: it says what it saw on stderr, which the recording keeps)
sys.stderr.write(f"NETSEEN {{','.join(interfaces())}} {{default_routes()}} {{outside}}\\n")
print("{{}}")
"""


def recorded_text(folder: Path) -> str:
    """Everything a recording folder holds, its gzip parts decompressed (what a shared artifact would show)."""
    import gzip

    return "\n".join(gzip.decompress(p.read_bytes()).decode("utf-8", "replace") if p.suffix == ".gz"
                     else p.read_text(encoding="utf-8", errors="replace")
                     for p in sorted(folder.rglob("*")) if p.is_file())


def test_the_implementation_sees_only_loopback_and_cannot_reach_the_machine(run_contract: Any,
                                                                           tmp_path: Path) -> None:
    """Issue 29 (1): the session runs in a network namespace of its own; proved from inside (interfaces and routes
    the target sees) and with a loopback-only attempt (a port of the machine outside is not reachable)."""
    outside = socket.socket()
    outside.bind(("127.0.0.1", 0))
    outside.listen(8)
    rec = tmp_path / "rec"
    target = tmp_path / "probe.py"
    target.write_text(NETWORK_PROBE.format(python=PY, repo=str(Path(__file__).parents[1]),
                                           port=outside.getsockname()[1]), encoding="utf-8")
    target.chmod(0o755)
    with outside:
        run = run_contract("--dws-cli", str(target), "-k", "ERR-", "--dws-timeout=10", "--dws-record", str(rec),
                           inprocess=False)
    assert run.report, run.output()[-1500:]
    isolation = run.report["isolation"]
    if isolation["mode"] != "namespace":
        pytest.skip(f"network isolation not run: this machine cannot create a network namespace "
                    f"({isolation.get('reason')}); the run said so: {isolation}")
    import re

    seen = re.findall(r"NETSEEN (\S*) (\d+) (\w+)", recorded_text(rec))
    assert seen, "the target was never invoked"
    assert all(s == ("lo", "0", "ConnectionRefusedError") for s in seen), seen[:3]


def test_proxy_only_isolation_is_said_in_the_report(run_contract: Any) -> None:
    run = run_contract("--dws-cli", " ".join(REFERENCE_CLI), "-k", "ERR-PARAM", "--dws-isolation=proxy")
    isolation = run.report["isolation"]
    assert {k: isolation[k] for k in ("mode", "reason")} == {"mode": "proxy only", "reason": "--dws-isolation=proxy"}
    assert isolation["files"]["mode"] == "not contained" and isolation["files"]["reason"] == "--dws-isolation=proxy"


def test_a_flood_keeps_only_its_head_and_says_how_much_it_was(tmp_path: Path) -> None:
    """Issue 29 (3): a capture cut at the cap is not kept whole for the run (7 GB on a flooding target before)."""
    from pytest_dws.launch.process import KEPT_OF_A_FLOOD, run_process

    body = "import sys\nwhile True: sys.stdout.write('x' * 65536)"
    inv = run_process([PY, "-c", body], env={"PATH": os.environ["PATH"]}, cwd=tmp_path, timeout=20, cap=4 << 20)
    assert inv.overflow and inv.captured >= 4 << 20
    assert len(inv.stdout) <= KEPT_OF_A_FLOOD
    assert inv.problem is not None and f"{inv.captured:,} bytes" in inv.problem


def test_a_file_of_the_tree_that_is_not_utf8_is_named_and_judged_as_far_as_it_can_be(run_contract: Any,
                                                                                     tmp_path: Path) -> None:
    """Issue 29 (5): upstream's real tree holds a Skill document with a broken full-width comma; the gates that
    read it name the file and the byte offset and judge the rest; no traceback, no internal error."""

    tree = reference_copy(tmp_path / "tree")
    skill = tree / "skills" / "dingtalk-chat" / "SKILL.md"
    raw = skill.read_bytes()
    cut = raw.index("，".encode()) if "，".encode() in raw else len(raw) // 2
    skill.write_bytes(raw[:cut] + "，".encode()[:2] + raw[cut + 3:])  # the comma's last byte lost
    run = run_contract("--dws-source", str(tree), "--dws-cli", " ".join(REFERENCE_CLI),
                       "-k", "SKILL or FIT-NO-OVERFIT")
    assert run.ret in (0, 1), run.output()[-2000:]
    assert "Traceback" not in run.output() and "UnicodeDecodeError" not in run.output()
    assert run.report["unreadable_files"] == {
        "skills/dingtalk-chat/SKILL.md": f"not valid UTF-8 at byte {cut} (read with U+FFFD there)"}
    judged = {g: v["status"] for g, v in run.gates.items()}
    assert judged and "error" not in judged.values(), judged
    assert "files of the tree judged only as far as they could be read" in run.output()


def test_a_long_call_is_never_silence() -> None:
    """Issue 28 (4): while targets run, a heartbeat line names how many run and the oldest one (the runner sends
    it through the context's announce every 10 s; here every 50 ms, polled with a bound, not timed)."""
    import subprocess

    from pytest_dws.launch.process import LiveGroups

    lines: list[str] = []
    live = LiveGroups()
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        live.add(proc.pid, ["dws", "chat", "--help"])
        live.heartbeat(lines.append, every=0.05)
        for _ in range(200):
            if lines:
                break
            time.sleep(0.05)
    finally:
        live.interrupt()
        live.discard(proc.pid)
        proc.wait()
        live.close()
        live.watchdog.close()
    assert lines and "1 running, 0 finished" in lines[0] and "chat --help" in lines[0], lines
    assert live.status_line() == ""
