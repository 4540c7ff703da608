"""Implementation adapter hooks: how a target's catalog, CLI command and generator are found.

An alternative implementation plugs in from its own ``conftest.py`` without any option::

    # conftest.py of "my-dws"
    def pytest_dws_cli_command(config):
        return ["./build/my-dws"]

Resolution order for the target: command-line options (``--dws-cli`` ...) name it outright; otherwise these
hooks; otherwise the ini keys (``dws_cli`` ...). All hooks are ``firstresult``: return ``None`` to pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_dws.registry import Gate


@pytest.hookspec(firstresult=True)
def pytest_dws_cli_command(config: pytest.Config) -> list[str] | None:
    """The argv prefix that launches the implementation under test.

    Example: ``return ["/opt/dws/bin/dws"]`` or ``return [sys.executable, "-m", "my_dws"]``.
    """


@pytest.hookspec(firstresult=True)
def pytest_dws_source_tree(config: pytest.Config) -> Path | None:
    """The implementation's source tree (catalog files, skills, generator). Never modified by the suite.

    Example: ``return Path(__file__).parent / "upstream-checkout"``.
    """


@pytest.hookspec(firstresult=True)
def pytest_dws_catalog_path(config: pytest.Config) -> Path | None:
    """A single catalog file (cf layout, e81 envelope, or saved ``dws schema --all`` output).

    Example: ``return Path("build/schema_catalog.json")``.
    """


@pytest.hookspec(firstresult=True)
def pytest_dws_generator_command(config: pytest.Config, tree: Path) -> list[str] | None:
    """The command that regenerates the catalog inside a (temporary copy of a) source tree.

    Example: ``return ["make", "generate-schema"]`` (the default for Go trees).
    """


@pytest.hookspec(firstresult=True)
def pytest_dws_gates(config: pytest.Config, gates: list[Gate]) -> list[Gate] | None:
    """The gates this run judges, chosen from every registered one (``None``: all of them).

    A plugin that registers gates of its own (``pytest_dws.registry.gate``) and judges only those narrows the
    list here, instead of patching the suite. Example: ``return [g for g in gates if g.id.startswith("X-")]``.
    """
