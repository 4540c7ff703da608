"""Process hygiene of the runner: a target that hangs, crashes, prints garbage or floods its output is a failure
of the gate that ran it (never a crash of the suite), and never leaves a process behind.

Targets are tiny ``python -c`` scripts; the suite-level cases run a whole contract session (one gate, ACC-INFRA,
which needs a single invocation) against them and read the JSON report.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_dws.launch import Runner, TargetFailure

PY = sys.executable


def alive(pid: int) -> bool:
    """A live process (a zombie waiting for its reaper is not alive)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in ("Z", "X")


def group_alive(pgid: int) -> bool:
    """Any live process left in process group ``pgid`` (ps-like scan of /proc)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid and alive(int(entry)):
                    return True
            except (ProcessLookupError, PermissionError):
                continue
    return False


def script(body: str, timeout: float = 10.0) -> Runner:
    """A runner whose 'implementation' is ``python -c body`` (argv after it is ignored by the script); the
    timeout is generous except where hanging is the point, so a loaded CI machine cannot flip a verdict."""
    return Runner([PY, "-c", body], None, timeout=timeout)


HANG = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(f"PIDS {__import__('os').getpid()} {child.pid}", flush=True)
time.sleep(60)
"""


def test_hang_is_killed_at_the_timeout_with_its_children() -> None:
    runner = script(HANG, timeout=1.0)
    start = time.perf_counter()
    inv = runner.run("chat", "+conversation-list", check=False, globals_=False)
    assert inv.timed_out and time.perf_counter() - start < 10
    leader, child = map(int, inv.stdout.split()[1:3])
    assert not alive(leader) and not alive(child)
    assert not group_alive(leader)
    with pytest.raises(TargetFailure, match="timed out"):
        inv.check()


def test_background_child_does_not_outlive_a_normal_exit() -> None:
    body = ("import subprocess, sys; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            "print(c.pid, flush=True)")
    inv = script(body).run(globals_=False)
    assert inv.exit_code == 0 and not inv.timed_out
    assert not alive(int(inv.stdout))


def test_crash_by_signal_is_a_target_failure() -> None:
    inv = script("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)").run(globals_=False, check=False)
    assert inv.crashed and inv.signal == signal.SIGSEGV
    with pytest.raises(TargetFailure, match="SIGSEGV"):
        inv.check()


def test_flood_is_cut_at_the_cap() -> None:
    body = "import sys\nchunk = b'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.buffer.write(chunk)\n"
    runner = script(body)
    runner.output_cap = 8 << 20
    inv = runner.run(globals_=False, check=False)
    assert inv.overflow and len(inv.stdout) <= 8 << 20
    with pytest.raises(TargetFailure, match="flooded"):
        inv.check()


def test_garbage_is_not_json_and_not_a_runner_error() -> None:
    inv = script("import sys; sys.stdout.buffer.write(b'\\xff\\xfe{not json'); sys.stderr.write('{oops')").run(
        globals_=False)
    assert inv.exit_code == 0 and inv.stdout_json is None and inv.error is None
    assert "\ufffd" in inv.stdout  # undecodable bytes are replaced, never raised


def test_unstartable_target_is_a_target_failure(tmp_path: Path) -> None:
    with pytest.raises(TargetFailure, match="cannot start"):
        Runner([str(tmp_path / "no-such-dws")], None).run(globals_=False)


# -- suite level: one gate, judged against a misbehaving "implementation" --------------------------------------
SUITE_TARGETS = {
    "garbage": "import sys; sys.stdout.write('\\x00garbage'); sys.stderr.write('not json'); sys.exit(1)",
    "crash": "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
    "hang": HANG,
    "flood": "import sys\nchunk = b'y' * (1 << 20)\nfor _ in range(100):\n    sys.stderr.buffer.write(chunk)\n",
}


@pytest.mark.parametrize("kind", sorted(SUITE_TARGETS))
def test_misbehaving_target_fails_the_gate_not_the_suite(run_contract, tmp_path: Path, kind: str) -> None:
    target = tmp_path / f"{kind}.py"
    target.write_text(SUITE_TARGETS[kind], encoding="utf-8")
    run = run_contract("--dws-cli", f"{{python}} -I -S {target}", "--dws-timeout", "1", "-k", "ACC-INFRA")
    if kind == "hang":  # issue 28: a target that does not even answer --help is bad input, stopped at once
        assert run.ret == 4 and "did not answer" in run.output(), run.output()[-2000:]
        return
    if kind == "garbage":  # exit 1 and junk for everything, --help included: not a dws (issue 28)
        assert run.ret == 4 and "not a dws" in run.output(), run.output()[-2000:]
        return
    assert run.ret == 1, run.output()[-2000:]
    assert "INTERNALERROR" not in run.output()
    assert run.status("ACC-INFRA") == "failed", run.gates.get("ACC-INFRA")


#: A hung implementation that first records its own pid and its child's (the grandchild of the suite) in a file.
HANG_RECORDED = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open(os.environ["DWS_PIDS_FILE"], "a") as f:
    f.write(f"{os.getpid()} {child.pid}\\n")
time.sleep(float(os.environ.get("DWS_HANG", "120")))
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_kills_every_running_target_and_stops_the_suite(tmp_path: Path, signum: int) -> None:
    """Ctrl-C and a CI cancel (SIGTERM) stop the session promptly: every running target group is killed, the
    grandchildren too, and pytest ends interrupted (exit 2), not after the targets' own timeout."""
    proc, pids = _hanging_suite(tmp_path, subprocess.PIPE)
    try:
        os.kill(proc.pid, signum)
        out = proc.communicate(timeout=60)[0].decode(errors="replace")  # a guard, not a timing assertion
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-2000:]
    started = _all_dead(pids)
    assert not any(group_alive(p) for p in started[::2])


def test_a_target_that_finished_while_the_suite_was_suspended_is_not_hung(monkeypatch: pytest.MonkeyPatch) -> None:
    """The supervisor drains what is ready before it calls a target hung: after a SIGSTOP of the suite (or a
    starved CI runner) every clock reading is past the deadline, yet the target finished long ago."""
    import subprocess
    import time

    from pytest_dws.launch.process import pump

    proc = subprocess.Popen(["sh", "-c", "echo done"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # finished (not reaped) before the supervisor looks
    real = time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() + 100)
    out, err = bytearray(), bytearray()
    timed_out, overflow, _, _ = pump(proc, out, err, real() + 5, 1 << 20)
    assert (timed_out, overflow, bytes(out)) == (False, False, b"done\n")


def test_targets_die_with_a_suite_that_is_killed_outright(tmp_path: Path) -> None:
    """SIGKILL leaves the suite no chance to clean up: its watchdog (pytest_dws.launch.contain.watchdog) sees the
    pipe close and kills every target group still running, grandchildren included."""
    proc, pids = _hanging_suite(tmp_path, subprocess.DEVNULL)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    started = _all_dead(pids)
    assert not any(group_alive(p) for p in started[::2])
    for _ in range(100):  # the watchdog also removes the session's temporary tree (the targets' HOMEs)
        if not list((tmp_path / "tmp").iterdir()):
            break
        time.sleep(0.1)
    assert not list((tmp_path / "tmp").iterdir()), list((tmp_path / "tmp").iterdir())


def _all_dead(pids: Path) -> list[int]:
    """The targets (and their children) the pid file names, once all are gone (a bounded poll: SIGKILL is
    asynchronous); an assertion naming those left behind otherwise."""
    started = [int(p) for p in pids.read_text().split()]
    for _ in range(100):
        if not any(alive(p) for p in started):
            break
        time.sleep(0.1)
    assert not any(alive(p) for p in started), f"left behind: {[p for p in started if alive(p)]}"
    return started


def _hanging_suite(tmp_path: Path, output: int, *extra: str) -> tuple[subprocess.Popen[bytes], Path]:
    """A contract run in its own session whose targets hang (each records its pid and its child's), returned
    once some targets run (a bounded poll on the pid file, not a timing assertion)."""
    target = tmp_path / "hang.py"
    target.write_text(HANG_RECORDED)
    pids = tmp_path / "pids.txt"
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "tmp").mkdir()
    proc = subprocess.Popen(
        [PY, "-m", "pytest", "--dws-contract", "-p", "no:cacheprovider", "-q", "--dws-cli", f"{PY} {target}",
         "--dws-timeout", "110", "--dws-env", f"DWS_PIDS_FILE={pids}", "-m", "dws_err",
         "--dws-isolation=proxy", *extra],  # (proxy: the targets write their pids where the test reads them)
        cwd=tmp_path, stdout=output, stderr=subprocess.STDOUT if output == subprocess.PIPE else output,
        start_new_session=True, env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    for _ in range(300):
        if pids.exists() and len(pids.read_text().split()) >= 2:
            break
        time.sleep(0.1)
    if not pids.exists():
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise AssertionError("no target started")
    return proc, pids


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_signalling_only_the_xdist_controller_stops_the_workers_targets(tmp_path: Path, signum: int) -> None:
    """Issue 29 (2): a CI cancel that signals only the controller's pid (not its process group) of a ``-n 2`` run:
    the workers start no more targets and every target they started dies with the run."""
    from pytest_dws.launch.contain.workers import children

    # Targets that end after 0.3 s: a worker left running keeps starting new ones.
    proc, pids = _hanging_suite(tmp_path, subprocess.DEVNULL, "-n", "2", "-p", "xdist", "--dws-env", "DWS_HANG=0.3")
    workers = [p for p in children(proc.pid) if b"watchdog_process" not in Path(f"/proc/{p}/cmdline").read_bytes()]
    os.kill(proc.pid, signum)
    at_signal = len(pids.read_text().splitlines())
    try:
        proc.wait(timeout=60)  # a guard, not a timing assertion
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for _ in range(100):
        if not any(alive(p) for p in workers):
            break
        time.sleep(0.1)
    assert not any(alive(p) for p in workers), "an xdist worker outlived its controller"
    later = len(pids.read_text().splitlines()) - at_signal
    assert later <= 4, f"{later} targets started after the controller was signalled (in flight: at most 4)"
    _all_dead(pids)


def test_the_sweep_by_tag_reads_the_pids_given_out_after_the_leader_and_all_of_them_after_a_wrap() -> None:
    """kill_tagged(since=LEADER) reads only the environments of pids after the leader (what the invocation started
    got a later pid); when the pid counter may have wrapped since the leader (the last pid given out is below it),
    it reads every process again, so a daemon with a low pid after a wrap is still found (issue 44)."""
    from pytest_dws.launch.process import TAG_VAR, _wrapped_since, kill_tagged

    tag = f"sweep-{os.getpid()}-{time.monotonic_ns()}"
    proc = subprocess.Popen([PY, "-c", "import time; time.sleep(60)"], env={**os.environ, TAG_VAR: tag})
    try:
        later = subprocess.run([PY, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                               check=True)
        leader = int(later.stdout)  # a pid given out after the tagged process's
        assert not _wrapped_since(leader) and _wrapped_since(2**31 - 1)
        assert kill_tagged(tag, since=leader) == 0 and alive(proc.pid)  # before the leader: not read
        assert kill_tagged(tag, since=2**31 - 1) == 1  # "after a wrap": everything is read again
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()
