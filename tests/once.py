"""Artifacts every pytest-xdist worker of one test run shares: made once, under a file lock, read by the rest.

Why: a module-scoped fixture is made once per worker that runs a test of its module. ``--dist loadgroup`` would keep
a marked module on one worker, but with pytest 9.2 it groups nothing (pytest-dev/pytest-xdist#1386: the group is
written into a node id field pytest no longer reads), so the README main job, its recording and the baseline
agent's evaluation, each a whole contract run of 15-30 s, were made once per worker (issue 44). A folder made here is
made by the first worker that needs it; another waits for it and reads it. A make that raises leaves no folder
marked done, so the next one tries again and fails the same way, by name.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

DONE = ".done"


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this test run shares (the parent of the workers' own temporary roots)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder ``name`` of this test run, filled by ``make(folder)`` once for every worker."""
    folder = shared_root(tmp_path_factory) / name
    with open(f"{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / DONE).is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            make(folder)
            (folder / DONE).write_text("", encoding="utf-8")
    return folder
