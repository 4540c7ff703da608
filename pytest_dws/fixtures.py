"""Public fixtures and the catalog loader for implementers' own tests (guide: docs/writing-tests.md).

Bodies import lazily, so defining them costs nothing when unused; this module never imports
:mod:`pytest_dws.assertions` at module level (the plugin star-imports it, and the assertion module must be
imported only after pytest registered it for assertion rewriting).

==========================  ===================================================================================
fixture                     what it gives
==========================  ===================================================================================
``dws_context``             the :class:`~pytest_dws.observe.context.Context` of the configured target (session)
``dws_catalog``             the target's catalog as a :class:`~pytest_dws.inputs.catalog.Release` (session)
``dws_tool``                ``dws_tool("chat.search_messages")`` -> that tool's full schema leaf
``fake_mcp``                a loopback fake MCP backend with a clean state for this test (:class:`FakeMCPHandle`)
``dws_fake_mcp_server``     the session's :class:`fake_mcp.FakeMCPServer` behind ``fake_mcp``
``dws_run``                 ``dws_run(*args)`` runs the configured implementation against ``fake_mcp``
==========================  ===================================================================================

:func:`load_catalog` (also ``pytest_dws.load_catalog``) reads any catalog: a source tree, a catalog file, a saved
``dws schema --all`` output, or an already parsed document.

Example (an implementer's test)::

    from fake_mcp import Scenario
    from pytest_dws.assertions import assert_error_classified

    def test_outage_is_classified(fake_mcp, dws_run):
        fake_mcp.load(Scenario.builder("outage")
                      .override("list_all_conversations", {"kind": "business", "preset": "NETWORK_ERROR_QUERYTOOLMETA"})
                      .build())
        inv = dws_run("chat", "+conversation-list", "--page-all")
        assert_error_classified(inv, reason="backend_dependency_unavailable", exit_code=1)
        assert len(fake_mcp.transcript.calls("list_all_conversations")) <= 2
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

#: What the plugin star-imports (the fixtures); :func:`pytest_dws.load_catalog` lives with the data layer.
__all__ = ["FakeMCPHandle", "dws_catalog", "dws_context", "dws_fake_mcp_server", "dws_run", "dws_tool", "fake_mcp"]


@pytest.fixture(scope="session")
def dws_context(pytestconfig: pytest.Config) -> Any:
    """The contract :class:`~pytest_dws.observe.context.Context` of this run (needs ``--dws-contract``), or one
    built from the same options/ini for a plain run, so user tests see the configured target."""
    from pytest_dws.session.runstate import contract

    run = contract(pytestconfig)
    if run is not None:
        yield run.ctx
        return
    from pytest_dws.session.run import ContractSession

    run = ContractSession(pytestconfig)
    yield run.ctx
    run.ctx.close()


@pytest.fixture(scope="session")
def dws_catalog(dws_context: Any) -> Any:
    """The catalog of the configured target as a :class:`~pytest_dws.inputs.catalog.Release`: its source tree or catalog
    file (``--dws-source`` / ``--dws-catalog``), else ``dws schema --all`` of the configured CLI. Skipped as
    "not applicable: <reason>" when none is configured; a malformed catalog fails with one line."""
    from pytest_dws.core.errors import DwsInputError, NotApplicable

    settings = dws_context.settings
    try:
        if settings.source is None and settings.catalog is None and settings.cli is not None:
            from pytest_dws.observe.binary.views import bin_release

            return bin_release(dws_context)
        return dws_context.release()  # NotApplicable naming the options when nothing is configured
    except NotApplicable as exc:
        pytest.skip(f"not applicable: {exc}")
    except (DwsInputError, AssertionError) as exc:  # malformed catalog / `schema --all` failed: one clear line
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def dws_tool(dws_catalog: Any, dws_context: Any) -> Callable[[str], dict[str, Any]]:
    """``dws_tool("chat.search_messages")`` -> that tool's full schema leaf from ``dws_catalog`` (fetched with
    ``dws schema <path>`` when the catalog only has summaries). An unknown path fails the test naming the
    catalog and the closest paths."""

    def tool(canonical_path: str) -> dict[str, Any]:
        __tracebackhide__ = True
        tools = dws_catalog.tools
        if canonical_path not in tools:
            import difflib

            close = difflib.get_close_matches(canonical_path, list(tools), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            pytest.fail(f"no tool {canonical_path!r} in {dws_catalog.origin} ({len(tools)} tools){hint}",
                        pytrace=False)
        if dws_catalog.full_leaves:
            return tools[canonical_path]
        inv = dws_context.cli().run("schema", canonical_path, token=None, globals_=False)
        if inv.exit_code != 0 or not isinstance(inv.stdout_json, dict):
            pytest.fail(f"`dws schema {canonical_path}` gave no leaf (exit {inv.exit_code})\n{inv.describe()}",
                        pytrace=False)
        return inv.stdout_json

    return tool


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

    @staticmethod
    def builder(name: str = "test", description: str = "") -> Any:
        """A fluent :class:`fake_mcp.ScenarioBuilder` (validated by ``.build()``, like a scenario file).

        Example::

            fake_mcp.load(fake_mcp.builder("twins")
                          .group("cidTESTtwin0000001", "项目群").group("cidTESTtwin0000002", "项目群")
                          .override("update_group_name", {"kind": "http", "status": 503})
                          .build())
        """
        from fake_mcp import Scenario

        return Scenario.builder(name, description)

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
    an :class:`~pytest_dws.launch.Invocation` (``--token t --format json`` are put before ``args``; keyword
    arguments as :meth:`pytest_dws.launch.Runner.run`). Skipped, with the reason, when no implementation is
    configured (``--dws-cli``, the ``dws_cli`` ini key, or the ``pytest_dws_cli_command`` hook)."""
    from pytest_dws.core.errors import NotApplicable

    try:
        runner = dws_context.cli()
    except NotApplicable as exc:
        pytest.skip(f"not applicable: {exc}")

    def run(*args: str, **kw: Any) -> Any:
        kw.setdefault("backend", fake_mcp.server)
        return runner.run(*args, **kw)

    return run
