"""Public fixtures for implementers' own tests (documented in docs/writing-tests.md).

Bodies import lazily, so defining them costs nothing when unused.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["dws_context"]


@pytest.fixture(scope="session")
def dws_context(pytestconfig: pytest.Config) -> Any:
    """The contract :class:`~pytest_dws.context.Context` of this run (needs ``--dws-contract``), or one
    built from the same options/ini for a plain run, so user tests see the configured target."""
    from pytest_dws.plugin import contract

    run = contract(pytestconfig)
    if run is not None:
        yield run.ctx
        return
    from pytest_dws.session import ContractSession

    run = ContractSession(pytestconfig)
    yield run.ctx
    run.ctx.close()
