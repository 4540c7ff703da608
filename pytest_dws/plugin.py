"""pytest wiring of the dws contract suite. Logic lives in the sibling modules; nothing heavy is imported
unless ``--dws-contract`` is given (the public fixtures import lazily too)."""

from __future__ import annotations

from typing import Any

import pytest

# Before anything imports the helpers, so their plain `assert`s get pytest's rendering (pytest_dws.core.compare).
pytest.register_assert_rewrite("pytest_dws.assertions")

from pytest_dws import hookspecs  # noqa: E402 - after the rewrite registration
from pytest_dws.inputs.settings import addoptions  # noqa: E402
from pytest_dws.session.runstate import SESSION, contract  # noqa: E402, F401 - contract(): the public accessor

FAMILIES = ("err", "tgt", "ali", "fin", "smk", "acc", "fit", "ds", "met", "rel", "sch", "schcli", "wire",
            "eval")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    addoptions(parser)


def pytest_configure(config: pytest.Config) -> None:
    for name in (*FAMILIES, "data", "bin", "mcp", "src", "agent"):
        config.addinivalue_line("markers", f"dws_{name}: dws contract gates of {name.upper()}")
    if not config.getoption("dws_contract"):
        return
    from pytest_dws.inputs.settings import require_target
    from pytest_dws.session.run import ContractSession

    run = ContractSession(config)
    require_target(run.settings, config)  # a contract run that judges nothing is a usage error (fixtures just skip)
    config.stash[SESSION] = run
    # pytest-xdist's way: the session object is a plugin and its methods are the hooks (collection, reports,
    # summary, finish); nothing is registered, and no module state exists, when the suite is off.
    config.pluginmanager.register(run, "dws-contract-session")
    # syrupy relates a snapshot to a test by its name; ours is named by the gate id in the release folder on
    # purpose (pytest_dws.observe.snapshots), so its "can not relate" heuristic does not apply.
    config.addinivalue_line("filterwarnings", r"ignore:\s*Can not relate snapshot name:UserWarning")
    run.install_signal_handlers()
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args = []  # `pytest --dws-contract` runs the gates only, not the testpaths
        # ... so hypothesis' own plugin has no test to serve, and its terminal summary would import all of
        # hypothesis (~0.3 s, more without a bytecode cache) into a run that may never generate a value.
        blocked = config.pluginmanager.get_plugin("hypothesispytest")
        if blocked is not None:
            config.pluginmanager.unregister(blocked)
            # ... but end its "still initialising" phase as its own session-start hook would, or hypothesis
            # warns about slow plugin code at every strategy the variant dataset builds.
            getattr(blocked, "pytest_sessionstart", lambda session: None)(None)


@pytest.hookimpl(tryfirst=True)
def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any) -> list[str] | None:
    # Only the suite's own value types (Expected, CallList ...): user dicts keep pytest's rendering.
    from pytest_dws.core.compare import explain

    return explain(op, left, right)


from pytest_dws.fixtures import *  # noqa: E402, F403 - public fixtures (lazy bodies)
