"""Per-release expectations: the counts a document pins (TOML), never hard-coded in gates.

File format::

    [release]
    name = "cf8cf95"
    [counts]
    products = 21
    tools = 504
    interface_refs = 461

Without a file, consistency gates still run and the report prints the observed counts ready to pin.
"""

from __future__ import annotations

import difflib
import functools
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError, read_toml


@dataclass
class Expectations:
    """Pinned numbers and facts of one release; ``get`` returns None when a value is not pinned."""

    path: Path | None = None
    release: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        """A pinned count by name (``"tools"``), or ``default`` when this release does not pin it."""
        return self.counts.get(key, default)

    def section(self, name: str) -> dict[str, Any]:
        """Any other table of the file (e.g. ``[profile]``), empty when absent."""
        value = self.data.get(name, {})
        return value if isinstance(value, dict) else {}


@functools.cache
def count_names() -> frozenset[str]:
    """The counts a gate may observe (``inputs/data/count_names.toml``): the names a [counts] table may pin."""
    text = resources.files("pytest_dws").joinpath("inputs/data/count_names.toml").read_text(encoding="utf-8")
    return frozenset(tomllib.loads(text)["names"])


def load_expectations(path: Path | None) -> Expectations:
    """Read an expectations TOML file; a missing or malformed file is a one-line input error."""
    if path is None:
        return Expectations()
    data = read_toml(path, "expectations file (option --dws-expect / ini dws_expect)")
    counts = data.get("counts", {})
    if not isinstance(counts, dict):
        raise DwsInputError(path, "$.counts", "expected a table of name = integer")
    known = count_names()
    for key, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise DwsInputError(path, f"$.counts.{key}", f"expected an integer, got {value!r}")
        if value < 0:
            raise DwsInputError(path, f"$.counts.{key}", f"a count is never negative, got {value}")
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            raise DwsInputError(path, f"$.counts.{key}", "no gate observes a count of that name"
                                + (f" (did you mean {close[0]!r}?)" if close else ""))
    release = data.get("release", {})
    return Expectations(path, release if isinstance(release, dict) else {}, counts, data)
