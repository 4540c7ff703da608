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

from dataclasses import dataclass, field
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


def load_expectations(path: Path | None) -> Expectations:
    """Read an expectations TOML file; a missing or malformed file is a one-line input error."""
    if path is None:
        return Expectations()
    data = read_toml(path, "expectations file (option --dws-expect / ini dws_expect)")
    counts = data.get("counts", {})
    if not isinstance(counts, dict):
        raise DwsInputError(path, "$.counts", "expected a table of name = integer")
    for key, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise DwsInputError(path, f"$.counts.{key}", f"expected an integer, got {value!r}")
    release = data.get("release", {})
    return Expectations(path, release if isinstance(release, dict) else {}, counts, data)
