"""The world of SCH-EXAMPLES: every literal value a reviewed example uses resolves (D2 §5: examples run).

Why apart from :mod:`.worlds`: it is built from the binary's own catalog (its examples), so it needs the views.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.values import LOCAL_FILE, PLACEHOLDER
from pytest_dws.observe.binary.views import bin_schema
from pytest_dws.observe.binary.worlds import SYN_GROUP, SYN_PERSON, World, synthetic_world


@dataclass(frozen=True)
class ExamplesWorld(World):
    """The synthetic world plus every literal value of an example as a unique group and person."""

    name: str = "examples"

    def build(self, ctx: GateContext) -> dict[str, Any]:
        """The names are the examples' own literal words (not the values the suite types for their
        placeholders): the world, part of every example run's recording key, changes only when the release's
        examples do, never when the suite types a value better (issue 38)."""
        names = {SYN_GROUP}
        people = {SYN_PERSON}
        try:
            view = bin_schema(ctx)
            for leaf in view.tools.values():
                for ex in leaf.get("examples") or []:
                    for tok in _literal_words(str(ex)):
                        if not tok.startswith("-") and not tok.lower().startswith("cid") and len(tok) <= 64:
                            names.add(tok)
                            people.add(tok)
        except (AssertionError, NotApplicable):
            pass
        return synthetic_world("schema-examples", names, people)


def _literal_words(example: str) -> list[str]:
    """The words of an example that are its own values: neither a `<placeholder>`, nor a local file it names."""
    try:
        tokens = shlex.split(example, comments=True)
    except ValueError:
        return []
    return [t for t in tokens[1:] if t and not PLACEHOLDER.search(t) and not LOCAL_FILE.match(t.lstrip("@"))]


EXAMPLES = ExamplesWorld()


def worlds(ctx: GateContext) -> dict[str, dict[str, Any]]:
    """Every world document the schema gates run in, by name (the self-tests validate them all)."""
    return {w.name: w.build(ctx) for w in (World("synthetic"), EXAMPLES, World("empty"))}
