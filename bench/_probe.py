"""Shared probe side of the benchmarks that measure a whole contract session from inside it.

A bench module loads itself into the measured pytest process with ``-p <module>`` and takes its session
hooks from here: the clock starts at session start, and the runner's pool size is pinned from an env var.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
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
