"""Repository conftest: the plugin's own tests use pytester; the contract target is set in pyproject.toml.

The embedded reference (``fixtures/reference``, the default target) runs jailed with its tree read-only
(pytest_dws.launch.contain.jail): a Python target cannot write its bytecode cache there, so, on a fresh clone, every
invocation compiled its modules again (issue 44: the telemetry variant's test, 1,316 invocations, took 69 s of user
CPU without the cache and 37 s with it). The cache is made here, once per session, as the first run of the
reference outside a jail would make it; an up-to-date cache costs a stat per module.
"""

from __future__ import annotations

import compileall
from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parent / "fixtures" / "reference"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the xdist controller (or a plain session) makes it before any worker
        compileall.compile_dir(REFERENCE, quiet=2)  # a read-only checkout: no cache, the same verdicts, slower
