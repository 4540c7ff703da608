"""Per-release expectations: the counts a document pins (TOML), never hard-coded in gates.

File format::

    [release]
    name = "cf8cf95"
    [counts]
    products = 21
    tools = 504
    interface_refs = 461

Other tables are release facts (``inputs/data/release_facts.toml``, validated by
``inputs/catalog/schemas/release-facts.json``); ``[schema]`` also says how a copy of the release's tree runs::

    [schema]
    tree_cli = "{python} -I -S {tree}/dws"           # a tree that runs from source ({tree} = the copy)
    tree_build = "go build -trimpath -o {out} ./cmd"  # or: one that embeds its catalog at build time ({out})
    catalog_file = "internal/cli/schema_catalog.json" # the embedded catalog file SCHCLI-CORRUPT tampers with

Without a file, consistency gates still run and the report prints the observed counts ready to pin. Every name a
``[counts]`` table pins is compared by the gates ``inputs/data/count_names.toml`` names for it; a name no gate
compares, or no gate observes, is refused (exit 4).
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
def _count_tables() -> dict[str, dict[str, tuple[str, ...]]]:
    text = resources.files("pytest_dws").joinpath("inputs/data/count_names.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    return {table: {k: tuple(v) for k, v in data[table].items()} for table in ("compared", "observed")}


def count_gates() -> dict[str, tuple[str, ...]]:
    """Pinnable count name -> the gate ids that compare a pinned value of it (``inputs/data/count_names.toml``)."""
    return _count_tables()["compared"]


def reported_only() -> dict[str, tuple[str, ...]]:
    """Count name -> the gates that report it without comparing it (a pin of it is refused)."""
    return _count_tables()["observed"]


def count_names() -> frozenset[str]:
    """Every count a gate may observe: the pinnable ones and the reported-only ones."""
    return frozenset(count_gates()) | frozenset(reported_only())


def load_expectations(path: Path | None) -> Expectations:
    """Read an expectations TOML file; a missing or malformed file is a one-line input error."""
    if path is None:
        return Expectations()
    data = read_toml(path, "expectations file (option --dws-expect / ini dws_expect)")
    counts = data.get("counts", {})
    if not isinstance(counts, dict):
        raise DwsInputError(path, "$.counts", "expected a table of name = integer")
    known = count_gates()
    for key, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise DwsInputError(path, f"$.counts.{key}", f"expected an integer, got {value!r}")
        if value < 0:
            raise DwsInputError(path, f"$.counts.{key}", f"a count is never negative, got {value}")
        if key in reported_only():  # a pin no gate would compare is never silently accepted (issue 34)
            raise DwsInputError(path, f"$.counts.{key}", "no gate compares this count: "
                                f"{', '.join(reported_only()[key])} only report(s) it; remove the pin")
        if key not in known:
            close = difflib.get_close_matches(key, count_names(), n=1)
            raise DwsInputError(path, f"$.counts.{key}", "no gate observes a count of that name"
                                + (f" (did you mean {close[0]!r}?)" if close else ""))
    release = data.get("release", {})
    return Expectations(path, release if isinstance(release, dict) else {}, counts, data)
