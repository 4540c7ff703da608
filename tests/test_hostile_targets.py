"""Containment against hostile targets (issue 29): what an implementation starts, even in a session of its own,
never outlives its invocation; a daemon that keeps the output pipes open is not a false "timed out"; what it
writes to its temporary directory stays in the run's tree and goes with it; a crash is a crash.
(The garbage and silent targets are tests/test_nothing_judged.py's; network isolation by namespace is not built.)"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_target_hygiene import alive

from pytest_dws.launch import Runner

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
    run = run_contract("--dws-cli", str(target), "--dws-timeout=2", inprocess=False)
    assert run.ret == 4 and words in run.output(), run.output()[-1500:]
    assert time.perf_counter() - start < 60
    assert not _alive_with(str(target).encode())



def test_the_targets_control_characters_are_escaped_when_shown() -> None:
    body = "import sys; sys.stdout.write('\\x1b]0;pwned\\x07\\x00garbage'); sys.exit(1)"
    inv = Runner([PY, "-c", body], None, timeout=20).run(globals_=False, check=False)
    shown = inv.describe()
    assert "\\x1b]0;pwned\\x07\\x00garbage" in shown
    assert not any(c in shown for c in "\x1b\x07\x00")
