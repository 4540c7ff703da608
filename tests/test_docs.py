"""The README's option table is generated from the options themselves (issue 28 (6)): `pytest --help` and the
README cannot say different things. Regenerate it with
``python -c "from pytest_dws.inputs.settings import options_table; print(options_table())"``."""

from __future__ import annotations

import re

import pytest

from pytest_dws.inputs.settings import OPTIONS, options_table
from tests.conftest import REPO


def test_the_readme_option_table_is_the_generated_one() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- options:[^\n]*-->\n(.*?)<!-- /options -->", readme, re.S)
    assert block is not None, "README.md lost its <!-- options --> block"
    assert block.group(1) == options_table()


def test_every_option_of_pytest_help_is_in_the_table(pytester: pytest.Pytester) -> None:
    shown = pytester.runpytest("--help").stdout.str()
    for opt, ini, _ in OPTIONS:
        assert opt in shown and ini in shown, opt
        assert f"`{opt}` (`{ini}`)" in options_table()
