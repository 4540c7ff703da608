"""Shared probe side of the benchmarks that measure a whole contract session from inside it.

A bench module loads itself into the measured pytest process with ``-p <module>`` and takes its session
hooks from here: the clock starts at session start, and the runner's pool size is pinned from an env var.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_clock = {"t0": 0.0}


def elapsed() -> float:
    """Seconds since the measured session started."""
    return time.perf_counter() - _clock["t0"]


def probe_hooks(workers_env: str) -> tuple[Callable[[Any], None], Callable[[Any], None]]:
    """``pytest_sessionstart`` and ``pytest_collection_finish`` for a bench plugin module."""

    def pytest_sessionstart(session: Any) -> None:
        _clock["t0"] = time.perf_counter()

    def pytest_collection_finish(session: Any) -> None:
        from pytest_dws.plugin import contract

        run = contract(session.config)
        if run is not None and os.environ.get(workers_env):
            run.ctx.cli().workers = int(os.environ[workers_env])

    return pytest_sessionstart, pytest_collection_finish


def session_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a measured pytest process: this one's, with the bench directory on PYTHONPATH and a
    bytecode cache of its own (``PYTHONPYCACHEPREFIX`` under ``tmp``, outside the repository).

    A machine with ``PYTHONDONTWRITEBYTECODE=1`` would otherwise recompile the suite's modules in every
    round (~0.2 s of a ~5 s session), a cost users do not pay: their installs keep ``__pycache__``. The first
    round fills the cache; the best round is reported. Nothing else changes: the target's own processes run
    with ``-I`` and build their environment from scratch either way.
    """
    env = {**os.environ, **extra,
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]),
           "PYTHONPYCACHEPREFIX": str(tmp / "pycache")}
    if env.pop("PYTHONDONTWRITEBYTECODE", None) is not None and not _clock.get("noted"):
        _clock["noted"] = 1.0
        print("note: PYTHONDONTWRITEBYTECODE is set here; the measured sessions keep a bytecode cache of their "
              f"own in {tmp / 'pycache'}", file=sys.stderr)
    return env


def whole_process(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, Any]:
    """(wall seconds, exit code, resource usage) of one whole process a user runs, timed with ``perf_counter``
    around ``wait4``: the usage is the process's own and every descendant it reaped. A failure stops the bench with
    the tail of its stderr."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        err = proc.stderr.read().decode(errors="replace")[-600:] if proc.stderr else ""
        raise SystemExit(f"{' '.join(argv[:8])} ... exited {code} in {cwd}:\n{err}")
    return wall, code, usage
