"""Jailed targets are started by the spawner, a small process of the runner's own (issue 44,
pytest_dws.launch.contain.spawner): the suite's process never forks for them. What a target sees of its start is
what ``subprocess`` gave it before: a session and process group of its own, only its three standard streams,
the signals at their defaults, its stdin; what the suite reads of its end is the same (exit, signal, timeout)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from pytest_dws.launch import Runner
from pytest_dws.launch.contain.containment import probe
from pytest_dws.launch.invocation import TargetFailure

PY = sys.executable

pytestmark = pytest.mark.skipif(not probe()[0], reason=f"no jail on this machine: {probe()[1]}")

SHOW = """
import json, os, sys
print(json.dumps({"ppid": os.getppid(), "pid": os.getpid(), "pgid": os.getpgid(0), "sid": os.getsid(0),
                  "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
                  "stdin": sys.stdin.read(),
                  "cwd": os.getcwd(), "home": os.environ.get("HOME"), "path": os.environ.get("PATH")}))
"""


def _cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


def test_a_jailed_target_is_the_spawners_child_with_only_its_streams_and_default_signals() -> None:
    runner = Runner([PY, "-c", SHOW], None, timeout=20)
    try:
        inv = runner.run(globals_=False, stdin=b"piped", check=False)
        seen = json.loads(inv.stdout)
        spawner = runner.live.spawner._proc
        assert inv.exit_code == 0 and spawner is not None
        assert seen["ppid"] == spawner.pid != os.getpid() and b"spawner_process.py" in _cmdline(spawner.pid)
        assert seen["pid"] == seen["pgid"] == seen["sid"]  # its own session and group: killed as one
        assert seen["fds"] == [0, 1, 2, 3]  # its streams, and the folder it lists: nothing of the suite's
        assert seen["stdin"] == "piped" and seen["path"] and seen["cwd"] == seen["home"]  # its env, run in its HOME
        # no signal ignored or blocked across the exec: the spawner ignores SIGINT, SIGPIPE and SIGXFSZ, and a suite
        # started as a shell's background job (`cmd &` in a script) has SIGINT and SIGQUIT ignored
        shown = runner.run("-c", "exec grep -E 'Sig(Ign|Blk)' /proc/self/status", globals_=False, prefix=["/bin/sh"])
        assert [int(word, 16) for word in shown.stdout.split()[1::2]] == [0, 0]
    finally:
        runner.close()
    assert spawner.wait(timeout=10) == 0  # the runner closed: the spawner ended


def test_the_end_of_a_target_reads_as_before_exit_signal_timeout() -> None:
    runner = Runner([PY, "-c", "import os, sys, time\nif sys.argv[1:] == ['hang']: time.sleep(60)\n"
                                "if sys.argv[1:] == ['segv']: os.kill(os.getpid(), 11)\nsys.exit(7)"],
                    None, timeout=2)
    try:
        exited = runner.run(globals_=False, check=False)
        crashed = runner.run("segv", globals_=False, check=False)
        hung = runner.run("hang", globals_=False, check=False)
    finally:
        runner.close()
    assert (exited.exit_code, exited.signal, exited.crashed, exited.timed_out) == (7, None, False, False)
    assert exited.cpu > 0  # its CPU, from the spawner's reaping
    assert (crashed.signal, crashed.crashed) == (signal.SIGSEGV, True)
    assert hung.timed_out and not hung.crashed


def test_a_program_that_cannot_start_is_a_target_failure_naming_it(tmp_path: Path) -> None:
    runner = Runner([str(tmp_path / "no-such-dws")], None, timeout=20)
    try:
        with pytest.raises(TargetFailure) as info:
            runner.run(globals_=False)
    finally:
        runner.close()
    assert "no-such-dws" in str(info.value) and "FileNotFoundError" in str(info.value)


def test_a_spawner_that_dies_mid_run_ends_that_invocation_and_the_runner_forks_from_then_on() -> None:
    runner = Runner([PY, "-c", "import sys, time\nif sys.argv[1:] == ['hang']: time.sleep(60)\nprint('ok')"],
                    None, timeout=30)
    try:
        first = runner.run(globals_=False, check=False)
        spawner = runner.live.spawner._proc
        assert first.stdout == "ok\n" and spawner is not None
        killer = threading.Timer(1.0, os.kill, (spawner.pid, signal.SIGKILL))
        killer.start()
        hung = runner.run("hang", globals_=False, check=False)
        killer.join()
        assert not hung.timed_out and hung.signal == signal.SIGKILL  # ended with its spawner, killed with its group
        later = runner.run(globals_=False, check=False)
        assert later.stdout == "ok\n" and runner.live.spawner.failed
    finally:
        runner.close()
