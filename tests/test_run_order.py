"""The order the xdist workers take the tests in (tests/conftest.py ``MAKERS_FIRST``, issue 44): the makers of the
artifacts the workers share come first, each one a test that still exists."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import MAKERS_FIRST, pytest_collection_modifyitems


@pytest.mark.parametrize("name", MAKERS_FIRST)
def test_each_maker_named_first_is_a_test_of_the_suite(name: str) -> None:
    path, _, test = name.partition("::")
    function, _, param = test.partition("[")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    assert callable(getattr(module, function, None)), f"{name}: no such test (tests/conftest.py MAKERS_FIRST)"
    if param.endswith("]"):
        marks = [m for m in getattr(module, function).pytestmark if m.name == "parametrize"]
        assert any(param[:-1] in [str(v) or "conforming" for v in m.args[1]] for m in marks), name


def test_under_xdist_the_makers_go_first_and_nothing_is_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    names = ["tests/test_a.py::t1", f"{MAKERS_FIRST[3]}x]", "tests/test_b.py::t2", f"{MAKERS_FIRST[3]}y]",
             MAKERS_FIRST[0]]
    items: list[Any] = [SimpleNamespace(nodeid=n) for n in names]
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    alone = list(items)
    pytest_collection_modifyitems(None, alone)  # type: ignore[arg-type]
    assert alone == items  # one process: collection order
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    ordered = list(items)
    pytest_collection_modifyitems(None, ordered)  # type: ignore[arg-type]
    assert [i.nodeid for i in ordered] == [names[4], names[1], names[0], names[2], names[3]]
