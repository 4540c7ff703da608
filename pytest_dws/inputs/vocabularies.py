"""Release vocabularies: the closed lists a catalog gate sorts a field's value into, as data (issue 27).

Why data: upstream's provenance precedences, decision sources and interface modes grow with every release; one new
word must be a question for the release's files, not a failure of every tool. The defaults are
``inputs/data/vocabularies.toml``; a release folder overrides a list in its expectations file (``[vocabularies]``,
validated by ``schemas/vocabularies.json``). :meth:`Vocabulary.unclassified` names the values no list classifies:
the gate reports them once and does not judge those tools (never a failure of each).
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_dws.inputs.catalog.validate import check

DEFAULT_FILE = Path(__file__).with_name("data") / "vocabularies.toml"

#: The fields a vocabulary governs: (field, how a tool carries it).
FIELDS = ("interface_mode", "availability", "idempotency", "effect_source", "precedence")


@dataclass(frozen=True)
class Vocabulary:
    """The lists of one run: the defaults with the release's overrides."""

    data: Mapping[str, Any]
    source: str = str(DEFAULT_FILE)

    def allowed(self, field: str, generation: str = "e81") -> tuple[str, ...]:
        """The values of an enum-like field (interface_mode per generation, availability, idempotency)."""
        table = self.data.get(field) or {}
        values = table.get(generation) if field == "interface_mode" else table.get("values")
        return tuple(values or ())

    def sort(self, field: str, value: str) -> str | None:
        """``decision`` / ``interface`` for effect_source and precedence values; None when no list has it."""
        table = self.data.get(field) or {}
        for kind in ("interface", "decision"):
            if value in (table.get(kind) or ()):
                return kind
        return None

    def interface(self, field: str) -> tuple[str, ...]:
        return tuple((self.data.get(field) or {}).get("interface") or ())

    def unclassified(self, tool: Mapping[str, Any], generation: str = "e81") -> list[tuple[str, str]]:
        """``(field, value)`` of the tool's values that no list of this vocabulary classifies."""
        out: list[tuple[str, str]] = []
        for field in ("interface_mode", "availability", "idempotency"):
            value = tool.get(field)
            if isinstance(value, str) and value not in self.allowed(field, generation):
                out.append((field, value))
        source = tool.get("effect_source")
        if isinstance(source, str) and self.sort("effect_source", source) is None:
            out.append(("effect_source", source))
        for entry in (tool.get("field_provenance") or {}).values():
            precedence = entry.get("precedence") if isinstance(entry, dict) else None
            if isinstance(precedence, str) and self.sort("precedence", precedence) is None:
                out.append(("precedence", precedence))
        return sorted(set(out))


def load_vocabulary(overrides: Mapping[str, Any] | None = None, where: str = "expectations") -> Vocabulary:
    """The defaults, each list replaced by the release's ``[vocabularies]`` one where it gives it."""
    with DEFAULT_FILE.open("rb") as fh:
        data: dict[str, Any] = tomllib.load(fh)
    check("vocabularies", data, str(DEFAULT_FILE))
    if overrides:
        check("vocabularies", dict(overrides), where, prefix=("vocabularies",))
        for field, table in overrides.items():
            data[field] = {**data.get(field, {}), **table}
    return Vocabulary(data, where if overrides else str(DEFAULT_FILE))


@functools.cache
def default_vocabulary() -> Vocabulary:
    """The packaged defaults (read once)."""
    return load_vocabulary()
