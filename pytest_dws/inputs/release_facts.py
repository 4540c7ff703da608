"""Release facts as data (issue 24 (7)): the doc-named commands, tools and test packages gates look up
(``inputs/data/release_facts.toml``), each overridden by a release folder's expectations file. Why data: a new
release that renames one command is judged with a data change, never a code change."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any

from pytest_dws.inputs.catalog.validate import check
from pytest_dws.inputs.expectations import Expectations

DEFAULT_FILE = Path(__file__).with_name("data") / "release_facts.toml"


@functools.cache
def defaults() -> dict[str, Any]:
    """The packaged facts (read and validated once)."""
    with DEFAULT_FILE.open("rb") as fh:
        data: dict[str, Any] = tomllib.load(fh)
    check("release-facts", data, str(DEFAULT_FILE))
    return data


def schema_facts(expect: Expectations) -> dict[str, Any]:
    """``[schema]``: the packaged keys, each replaced by the expectations file's where it gives it."""
    given = expect.section("schema")
    if given:
        check("release-facts", {"schema": given}, str(expect.path or "expectations"))
    return {**defaults()["schema"], **given}


def table(expect: Expectations, name: str) -> dict[str, Any]:
    """A whole table (``chat_identities``, ``retired``): the expectations file's when it has one, else packaged."""
    given = expect.section(name)
    if given:
        check("release-facts", {name: given}, str(expect.path or "expectations"))
    return given or dict(defaults()[name])
