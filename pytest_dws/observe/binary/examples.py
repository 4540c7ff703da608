"""The world of SCH-EXAMPLES: every literal value a reviewed example uses resolves (D2 §5: examples run).

Why apart from :mod:`.worlds`: it is built from the binary's own catalog (its examples), so it needs the views.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.argv import example_argv
from pytest_dws.observe.binary.views import bin_schema
from pytest_dws.observe.binary.worlds import SYN_GROUP, SYN_PERSON, World, synthetic_world
from pytest_dws.observe.calls import FILE_MARK


@dataclass(frozen=True)
class ExamplesWorld(World):
    """The synthetic world plus every literal value of an example as a unique group and person."""

    name: str = "examples"

    def build(self, ctx: GateContext) -> dict[str, Any]:
        names = {SYN_GROUP}
        people = {SYN_PERSON}
        try:
            view = bin_schema(ctx)
            for leaf in view.tools.values():
                for ex in leaf.get("examples") or []:
                    for tok in example_argv(ex, leaf):
                        if tok and not tok.startswith("-") and not tok.lower().startswith("cid") \
                                and len(tok) <= 64 and FILE_MARK not in tok:
                            names.add(tok)
                            people.add(tok)
        except (AssertionError, NotApplicable):
            pass
        return synthetic_world("schema-examples", names, people)


EXAMPLES = ExamplesWorld()


def worlds(ctx: GateContext) -> dict[str, dict[str, Any]]:
    """Every world document the schema gates run in, by name (the self-tests validate them all)."""
    return {w.name: w.build(ctx) for w in (World("synthetic"), EXAMPLES, World("empty"))}
