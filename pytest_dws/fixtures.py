"""Public fixtures for implementers' own tests (documented in docs/writing-tests.md).

Bodies import lazily, so defining them costs nothing when unused.

Example (an implementer's test)::

    def test_outage_is_classified(fake_mcp, dws_run):
        fake_mcp.load({"name": "outage", "overrides": [{"tool": "list_all_conversations", "reply": {
            "kind": "business", "preset": "NETWORK_ERROR_QUERYTOOLMETA"}}]})
        inv = dws_run("chat", "+conversation-list", "--page-all")
        assert_error_classified(inv, reason="backend_dependency_unavailable", exit_code=1)
        assert len(fake_mcp.transcript.calls("list_all_conversations")) <= 2
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["FakeMCPHandle", "dws_context", "dws_fake_mcp_server", "dws_run", "fake_mcp"]


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


class FakeMCPHandle:
    """What the ``fake_mcp`` fixture yields: the server, the environment an implementation needs, and the
    per-test transcript. ``env`` = the server's endpoint + trusted-loopback variables and the isolation
    variables (temp HOME, config and keychain dirs, dead proxy) of this test."""

    def __init__(self, server: Any, home: Path) -> None:
        from fake_mcp import isolation_env

        self.server = server
        self.home = home
        self.env: dict[str, str] = {**server.env(), **isolation_env(home)}

    @property
    def transcript(self) -> Any:
        """The requests received during this test (a fake_mcp Transcript)."""
        return self.server.transcript

    def load(self, scenario: Any) -> Any:
        """Replace the backend state with ``scenario`` (a Scenario, a dict, or a JSON/TOML file path)."""
        return self.server.load(scenario)

    def reset(self) -> None:
        """Back to the last loaded scenario's fresh state (transcript cleared)."""
        self.server.reset()


@pytest.fixture(scope="session")
def dws_fake_mcp_server() -> Iterator[Any]:
    """One fake MCP server per session and per xdist worker (each worker is its own process, port 0)."""
    from fake_mcp import FakeMCPServer

    server = FakeMCPServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fake_mcp(dws_fake_mcp_server: Any, tmp_path: Path) -> Iterator[FakeMCPHandle]:
    """A loopback fake MCP backend with a clean state for this test (an empty scenario until ``.load``)."""
    from fake_mcp import Scenario

    server = dws_fake_mcp_server
    server.load(Scenario.empty())
    yield FakeMCPHandle(server, tmp_path / "dws-home")
    server.load(Scenario.empty())


@pytest.fixture
def dws_run(dws_context: Any, fake_mcp: FakeMCPHandle) -> Any:
    """``dws_run(*args, **kw)`` runs the configured implementation against this test's ``fake_mcp`` and returns
    an :class:`~pytest_dws.target.Invocation` (``--token t --format json`` are put before ``args``; keyword
    arguments as :meth:`pytest_dws.target.Runner.run`). Skipped, with the reason, when no implementation is
    configured (``--dws-cli``, the ``dws_cli`` ini key, or the ``pytest_dws_cli_command`` hook)."""
    from pytest_dws.registry import NotApplicable

    try:
        runner = dws_context.cli()
    except NotApplicable as exc:
        pytest.skip(f"not applicable: {exc}")

    def run(*args: str, **kw: Any) -> Any:
        kw.setdefault("backend", fake_mcp.server)
        return runner.run(*args, **kw)

    return run
