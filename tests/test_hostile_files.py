"""The implementation sees only its own files (issue 45): a target that reads the real user's HOME finds it empty,
and nothing of it reaches a recording, a report or the terminal; a write outside its own folders writes nothing;
a fork flood and a disk flood stop at the invocation's limits, are reaped, are its facts, and the run goes on to
its verdict. Where the kernel refuses a mount namespace, the run says so (isolation.files) and these tests say
why they cannot show it (pytest_dws.launch.contain.jail.probe)."""

from __future__ import annotations

import errno
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_hostile_targets import _alive_with, recorded_text

from pytest_dws.launch import Runner
from pytest_dws.launch.contain.containment import probe
from pytest_dws.launch.contain.jail import Limits
from tests.conftest import REPO

PY = sys.executable
REFERENCE = REPO / "fixtures" / "reference" / "dws"

CONTAINED, WHY = probe()
needs_mounts = pytest.mark.skipif(not CONTAINED, reason=f"this machine refuses a mount namespace: {WHY}")

#: A dws that first reads a secret of the real HOME and says what it found on both streams, then is the reference.
NOSY = """#!{python}
import os, sys
try:
    found = open({secret!r}).read()
except OSError as exc:
    found = "nothing: errno " + str(exc.errno)
sys.stderr.write("NOSY " + found + "\\n")
sys.stdout.write("NOSY " + found + "\\n")
sys.stdout.flush()
os.execv({python!r}, [{python!r}, "-I", "-S", {reference!r}, *sys.argv[1:]])
"""


@needs_mounts
def test_a_secret_of_the_real_home_reaches_no_recording_report_or_terminal(run_contract: Any, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"  # the user's HOME of this run: hidden from the target
    (home / ".ssh").mkdir(parents=True)
    token = f"SECRET-{uuid.uuid4().hex}"
    secret = home / ".ssh" / "id_dws_test"
    secret.write_text(token, encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    target = tmp_path / "bin" / "nosy-dws"
    target.parent.mkdir()
    target.write_text(NOSY.format(python=PY, secret=str(secret), reference=str(REFERENCE)), encoding="utf-8")
    target.chmod(0o755)
    rec = tmp_path / "rec"
    run = run_contract("--dws-cli", str(target), "-k", "ERR-PARAM", "--dws-record", str(rec), inprocess=False)
    assert run.report is not None, run.output()[-2000:]
    assert run.report["isolation"]["files"]["mode"] == "mount namespace"
    recorded = recorded_text(rec)
    assert f"NOSY nothing: errno {errno.ENOENT}" in recorded  # it ran, tried, and found an empty folder
    shown = run.output() + json.dumps(run.report, ensure_ascii=False) + recorded
    assert token not in shown
    assert secret.read_text(encoding="utf-8") == token  # (the file is there, outside)


WRITER = """
import errno, json, os, sys
out = {{}}
for name, path in (("outside", {outside!r}), ("suite", {suite!r}), ("own", os.path.join(os.environ["HOME"], "x")),
                   ("relative", "y")):  # its working folder is its HOME: a relative path lands there
    try:
        with open(path, "w") as fh:
            fh.write("written by the target")
        out[name] = "written"
    except OSError as exc:
        out[name] = errno.errorcode[exc.errno]
print(json.dumps(out))
sys.exit(0 if out["outside"] == "written" else 3)
"""


@needs_mounts
def test_a_write_outside_its_own_folders_writes_nothing(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    suite = REPO / "dws-written-by-a-target.txt"  # the suite's own tree (its workspace): hidden and read-only
    runner = Runner([PY, "-c", WRITER.format(outside=str(outside), suite=str(suite))], None, timeout=20)
    try:
        inv = runner.run(globals_=False, check=False)
    finally:
        runner.close()
    assert inv.exit_code == 3, inv.describe()  # its facts: the write refused, nothing else went wrong
    # "relative": its working folder is the HOME of its own view, not the read-only folder beneath that view
    assert inv.stdout_json == {"outside": "EROFS", "suite": "EROFS", "own": "written", "relative": "written"}
    assert not outside.exists() and not suite.exists()


FLOOD = """
import json, os, time
made = refused = 0
for _ in range(500):
    try:
        pid = os.fork()
    except OSError:
        refused += 1
        continue
    if pid == 0:
        time.sleep(600)  # dws-fork-flood-sleeper
        os._exit(0)
    made += 1
print(json.dumps({"made": made, "refused": refused}))
"""


def test_a_fork_flood_of_500_sleepers_is_capped_reaped_and_reported() -> None:
    limits = Limits()
    runner = Runner([PY, "-c", FLOOD], None, timeout=30, limits=limits)
    bound = runner.jails.to_dict()["processes_by"]
    if bound != "pids cgroup" and os.getuid() == 0:
        runner.close()
        pytest.skip(f"uid 0 is exempt from RLIMIT_NPROC and no pids cgroup can be made here ({bound})")
    try:
        inv = runner.run(globals_=False, check=False)
    finally:
        runner.close()
    assert inv.exit_code == 0, inv.describe()
    assert inv.stdout_json["made"] < limits.processes and inv.stdout_json["refused"] > 0
    if bound == "pids cgroup":  # RLIMIT_NPROC refuses as well, but the kernel keeps no count of it
        assert inv.limited == ["processes"]
    time.sleep(0.2)
    assert not _alive_with(b"dws-fork-flood-sleeper"), "the flood's sleepers outlived the invocation"


DISK_FLOOD = """
import os
chunk = b"x" * (1 << 20)
with open(os.path.join(os.environ["HOME"], "big"), "wb") as fh:
    for _ in range(2048):  # 2 GB
        fh.write(chunk)
"""


def test_a_2_gb_write_into_its_home_stops_at_the_file_size_limit(tmp_path: Path) -> None:
    limits = Limits(file_size=8 << 20)
    runner = Runner([PY, "-c", DISK_FLOOD], None, timeout=30, limits=limits)
    start = time.perf_counter()
    try:
        inv = runner.run(globals_=False, check=False)
    finally:
        runner.close()
    assert inv.limited == ["file_size"], inv.describe()
    assert inv.exit_code != 0 and time.perf_counter() - start < 20
    with pytest.raises(AssertionError) as failure:
        inv.check()
    assert failure.value.facts["outcome"] == "limited"  # type: ignore[attr-defined]


def test_cpu_seconds_are_a_limit_too() -> None:
    runner = Runner([PY, "-c", "while True: pass"], None, timeout=30, limits=Limits(cpu_seconds=1))
    try:
        inv = runner.run(globals_=False, check=False)
    finally:
        runner.close()
    assert inv.limited == ["cpu_seconds"] and inv.signal is not None and not inv.timed_out, inv.describe()


def _facts(doc: Any) -> list[dict[str, Any]]:
    """Every ``facts`` mapping in a report (the typed facts of each failing case)."""
    if isinstance(doc, dict):
        own = [doc["facts"]] if isinstance(doc.get("facts"), dict) else []
        nested = [f for v in doc.values() for f in _facts(v)]
        found = own + nested
        return [f for f in found if "outcome" in f] + [g for f in found if "outcome" not in f
                                                       for g in f.values() if isinstance(g, dict)]
    if isinstance(doc, list):
        return [f for v in doc for f in _facts(v)]
    return []


#: A dws that, on every invocation, floods forks and its HOME first, then is the reference.
FLOODING_DWS = """#!{python}
import os, sys, time
for _ in range(500):
    try:
        if os.fork() == 0:
            time.sleep(600)  # dws-run-flood-sleeper
            os._exit(0)
    except OSError:
        break
try:
    with open(os.path.join(os.environ["HOME"], "big"), "wb") as fh:
        for _ in range(2048):
            fh.write(b"x" * (1 << 20))
except OSError:
    pass
os.execv({python!r}, [{python!r}, "-I", "-S", {reference!r}, *sys.argv[1:]])
"""


@needs_mounts
def test_a_flooding_target_is_capped_and_the_run_goes_on_to_its_verdict(run_contract: Any, tmp_path: Path) -> None:
    target = tmp_path / "flooding-dws"
    target.write_text(FLOODING_DWS.format(python=PY, reference=str(REFERENCE)), encoding="utf-8")
    target.chmod(0o755)
    start = time.perf_counter()
    run = run_contract("--dws-cli", str(target), "-k", "ERR-PARAM", inprocess=False)
    assert run.ret == 1, run.output()[-2000:]  # a verdict: its gates fail, the run ends normally
    failed = [g for g, v in run.report["gates"].items() if v["status"] == "failed"]
    assert failed, run.report["gates"]
    hit = {str(facts.get("limited")) for facts in _facts(run.report) if facts.get("outcome") == "limited"}
    assert hit and all("file_size" in h.split(",") for h in hit), hit
    assert time.perf_counter() - start < 120
    time.sleep(0.2)
    assert not _alive_with(b"dws-run-flood-sleeper")


ESCAPE = """
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
out = {{}}


def attempt(name, act):
    try:
        act()
        out[name] = "done"
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno, str(exc.errno))


def call(ret):
    if ret != 0:
        raise OSError(ctypes.get_errno(), "")


def same_host_name():  # (writes the value it reads: nothing changes even where it succeeds)
    name = open("/proc/sys/kernel/hostname").read()
    with open("/proc/sys/kernel/hostname", "w") as fh:
        fh.write(name)


attempt("unmount a hiding tmpfs", lambda: call(libc.umount2(b"/root", 2)))
attempt("remount / writable", lambda: call(libc.mount(None, b"/", None, 32 | 4096, None)))
attempt("the suite's environment", lambda: open("/proc/{suite}/environ", "rb").read())
attempt("the suite's view of /", lambda: os.listdir("/proc/{suite}/root/"))
attempt("a sysctl", same_host_name)
print(json.dumps(out))
"""


@needs_mounts
def test_the_target_cannot_undo_its_view_nor_look_through_the_suites_process(tmp_path: Path) -> None:
    runner = Runner([PY, "-c", ESCAPE.format(suite=os.getpid())], None, timeout=20)
    try:
        inv = runner.run(globals_=False, check=False)
    finally:
        runner.close()
    assert inv.exit_code == 0, inv.describe()
    assert inv.stdout_json == {"unmount a hiding tmpfs": "EPERM", "remount / writable": "EPERM",
                               "the suite's environment": "EACCES", "the suite's view of /": "EACCES",
                               "a sysctl": "EROFS"}


def test_where_the_kernel_refuses_the_run_says_so_and_namespace_makes_it_a_usage_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_dws.core.errors import DwsInputError
    from pytest_dws.launch.contain import containment
    from pytest_dws.launch.contain.sandbox import Isolation

    why = "no mount namespace: unshare(CLONE_NEWNS): Operation not permitted"
    monkeypatch.setattr(containment, "_PROBED", (False, why))
    assert containment.files_isolation("auto") == why
    assert containment.files_isolation("proxy") == "--dws-isolation=proxy"
    with pytest.raises(DwsInputError):  # a usage error: exit 4, one line
        containment.files_isolation("namespace")
    files = Isolation("namespace", files=why).to_dict()["files"]
    assert {k: files[k] for k in ("mode", "reason")} == {"mode": "not contained", "reason": why}
    assert why in Isolation("namespace", files=why).files_line
    runner = Runner([PY, "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_FSIZE)[0])"], None,
                    timeout=20)
    try:  # the limits hold without the namespace
        assert int(runner.run(globals_=False).stdout) == Limits().file_size
    finally:
        runner.close()


@needs_mounts
def test_a_generator_in_a_copy_of_the_tree_writes_only_the_copy_and_its_home(tmp_path: Path) -> None:
    """Regeneration and FIN-* run the tree's own commands in a working copy: the copy is theirs, nothing else."""
    from types import SimpleNamespace

    from pytest_dws.observe.sourcetree import run_in_copy

    copy, home, outside = tmp_path / "copy", tmp_path / "home", tmp_path / "outside.txt"
    copy.mkdir()
    home.mkdir()
    body = WRITER.format(outside=str(outside), suite=str(REPO / "dws-written-by-a-generator.txt"))
    body = body.replace('os.path.join(os.environ["HOME"], "x")', repr(str(copy / "generated.json")))
    ctx = SimpleNamespace(settings=SimpleNamespace(env={}, isolation="auto"))
    inv = run_in_copy(ctx, [PY, "-c", body], copy, home, 20)  # type: ignore[arg-type]
    # "relative": its working folder (the copy) is the one of its own view, writable
    assert inv.stdout_json == {"outside": "EROFS", "suite": "EROFS", "own": "written", "relative": "written"}, \
        inv.describe()
    assert (copy / "generated.json").is_file() and not outside.exists()


MANY_FILES = """
import errno, json, os
written = 0
try:
    for i in range(2048):  # 2 GB in files of 1 MB, each far under the file size limit
        with open(os.path.join(os.environ["HOME"], f"part-{i}"), "wb") as fh:
            fh.write(b"x" * (1 << 20))
        written += 1
except OSError as exc:
    print(json.dumps({"written_mb": written, "error": errno.errorcode[exc.errno]}))
"""


@needs_mounts
def test_all_it_writes_into_its_home_together_stops_at_the_home_limit() -> None:
    limits = Limits(home_bytes=16 << 20)
    runner = Runner([PY, "-c", MANY_FILES], None, timeout=30, limits=limits)
    try:
        inv = runner.run(globals_=False, check=False)
    finally:
        runner.close()
    assert inv.stdout_json["error"] == "ENOSPC" and inv.stdout_json["written_mb"] <= 16, inv.describe()
    assert inv.limited == ["home_bytes"]


@needs_mounts
def test_a_shell_wrapper_in_the_workspace_still_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workspace is hidden, but not what the launcher names in it (``./dws`` of a checkout), nor the suite's own
    Python a wrapper execs (a `#!/bin/sh` line is no reason to reveal /, and hides nothing it needs)."""
    wrapper = tmp_path / "dws"
    program = f"import json, os; print(json.dumps(os.listdir({str(tmp_path)!r})))"
    wrapper.write_text(f"#!/bin/sh\nexec {PY} -c \"{program}\"\n", encoding="utf-8")
    wrapper.chmod(0o755)
    (tmp_path / "notes.txt").write_text("beside the launcher: revealed with its folder", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the suite's workspace
    runner = Runner([str(wrapper)], None, timeout=20)
    try:
        inv = runner.run(globals_=False)
    finally:
        runner.close()
    assert sorted(json.loads(inv.stdout)) == ["dws", "notes.txt"]


def test_cgroup_folders_of_gone_suite_processes_are_swept(tmp_path: Path) -> None:
    """A suite process killed before its finalizers ran leaves its pids cgroup folders behind; the next one made
    below the same cgroup removes them (never a live process's)."""
    from pytest_dws.launch.contain.jail import _sweep

    gone = tmp_path / "dws-4194305-abcdef"  # above the kernel's pid_max: no such process
    (gone / "inv-1").mkdir(parents=True)
    live = tmp_path / f"dws-{os.getpid()}-123456"
    live.mkdir()
    _sweep(tmp_path)
    assert not gone.exists() and live.is_dir()
