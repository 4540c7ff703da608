"""pytest wiring of the dws contract suite. Logic lives in the sibling modules; nothing heavy is imported
unless ``--dws-contract`` is given (the public fixtures import lazily too)."""

from __future__ import annotations

from typing import Any

import pytest

# Before anything imports the helpers, so their plain `assert`s get pytest's rendering (pytest_dws.compare).
pytest.register_assert_rewrite("pytest_dws.assertions")

from pytest_dws import hookspecs  # noqa: E402 - after the rewrite registration
from pytest_dws.settings import addoptions  # noqa: E402

_KEY = pytest.StashKey[Any]()
FAMILIES = ("err", "tgt", "ali", "fin", "smk", "acc", "fit", "ds", "met", "rel", "sch", "schcli")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    addoptions(parser)


def pytest_configure(config: pytest.Config) -> None:
    for name in (*FAMILIES, "data", "bin", "mcp", "src"):
        config.addinivalue_line("markers", f"dws_{name}: dws contract gates of {name.upper()}")
    if not config.getoption("dws_contract"):
        return
    from pytest_dws.session import ContractSession
    from pytest_dws.settings import require_target

    run = ContractSession(config)
    require_target(run.settings)  # a contract run that judges nothing is a usage error (fixtures just skip)
    config.stash[_KEY] = run
    run.install_signal_handlers()
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args = []  # `pytest --dws-contract` runs the gates only, not the testpaths


def pytest_unconfigure(config: pytest.Config) -> None:
    if (run := contract(config)) is not None:
        run.restore_signal_handlers()


def contract(config: pytest.Config) -> Any:
    """The running ContractSession, or None when the suite is off."""
    return config.stash.get(_KEY, None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    if (run := contract(config)) is not None:
        gates = run.items(session)
        # Announce them like collected items, so "collected N items" and --collect-only count them.
        config.hook.pytest_collectreport(report=pytest.CollectReport("dws", "passed", None, gates))
        items[:0] = gates


def pytest_collection_finish(session: pytest.Session) -> None:
    if (run := contract(session.config)) is not None:
        run.ctx.selected_gates = {i.gate.id for i in session.items if hasattr(i, "gate")}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Reports carry the gate id in user_properties; the recorder ignores everything else.
    if _RUNS:
        _RUNS[-1].recorder.record(report)


@pytest.hookimpl(tryfirst=True)
def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any) -> list[str] | None:
    # Only the suite's own value types (Expected, CallList ...): user dicts keep pytest's rendering.
    from pytest_dws.compare import explain

    return explain(op, left, right)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if (run := contract(config)) is not None:
        run.recorder.terminal_summary(terminalreporter)


def pytest_sessionstart(session: pytest.Session) -> None:
    if (run := contract(session.config)) is not None:
        _RUNS.append(run)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if (run := contract(session.config)) is not None:
        run.finish(session)
        _RUNS.remove(run)


_RUNS: list[Any] = []  # pytest_runtest_logreport has no config argument; in-process pytester nests runs

from pytest_dws.fixtures import *  # noqa: E402, F403 - public fixtures (lazy bodies)
