"""The metrics' dimensions and thresholds (``pytest_dws/inputs/data/evaluation.toml``), with a release's overrides
from its expectations file (``[evaluation.thresholds]``); a malformed value is one input error naming it."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any

from pytest_dws.core.errors import DwsInputError


@cache
def defaults() -> dict[str, Any]:
    """The shipped data (read once; callers copy what they change)."""
    text = resources.files("pytest_dws").joinpath("inputs/data/evaluation.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def thresholds(overrides: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """metric -> {min|max, doc}: the defaults, each replaced by the release's own table of the same metric."""
    out = {k: dict(v) for k, v in defaults()["thresholds"].items()}
    for name, value in (overrides or {}).items():
        if not isinstance(value, dict) or not ({"min", "max"} & set(value)) or any(
                not isinstance(value.get(b, 0), int | float) for b in ("min", "max")):
            raise DwsInputError("expectations", f"$.evaluation.thresholds.{name}",
                                "expected a table with a number 'min' or 'max'")
        out[name] = {**value, "doc": value.get("doc", "the release's expectations file")}
    return out


def dimensions() -> dict[str, list[str]]:
    """dimension -> its metrics (D1 §10's four report dimensions)."""
    return {k: list(v) for k, v in defaults()["dimensions"].items()}
