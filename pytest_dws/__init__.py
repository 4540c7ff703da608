"""pytest-dws: the black-box conformance and policy suite of the DingTalk Workspace CLI (``dws``).

Run it with ``pytest --dws-contract --dws-cli ./dws``. The plugin module (:mod:`pytest_dws.plugin`) only wires
pytest; gates live in :mod:`pytest_dws.gates`, public assertions in :mod:`pytest_dws.assertions`, public fixtures
and :func:`load_catalog` in :mod:`pytest_dws.fixtures` (guide: docs/writing-tests.md), adapter hooks in
:mod:`pytest_dws.hookspecs`.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["load_catalog"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the package must not import the catalog layer (nor the assertion module, which pytest
    # must register for rewriting first).
    if name == "load_catalog":
        from pytest_dws.inputs.catalog import load_catalog

        return load_catalog
    raise AttributeError(f"module 'pytest_dws' has no attribute {name!r}")
