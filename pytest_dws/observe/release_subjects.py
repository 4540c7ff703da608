"""The session's release as the DATA gates see it: their subjects (tools, products, the tools a rule constrains)
and the counts they observe or pin (D2 §5's counts come from the expectations file, never from code).

Shared by the SCH DATA gate modules (:mod:`pytest_dws.gates.sch.data`, ``.release``, ``.reviews``), which never
import each other.
"""

from __future__ import annotations

from typing import Any

from pytest_dws.assertions import assert_counts
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.vocabularies import Vocabulary, load_vocabulary
from pytest_dws.registry import Access

DATA = {Access.DATA}


def release(ctx: GateContext) -> Any:
    """The session's release (cached by the context)."""
    return ctx.release()


def full_leaves(ctx: GateContext) -> Any:
    """The release, or NotApplicable when it only has tool summaries (a cf ``schema --all``)."""
    rel = ctx.release()
    if not rel.full_leaves:
        raise NotApplicable(f"{rel.origin} carries tool summaries only, not full leaves",
                            wants="full tool leaves in the catalog")
    return rel


def per_tool(ctx: GateContext) -> list[str]:
    """Subjects: every catalog tool, sorted."""
    return sorted(ctx.release().tools)


def per_product(ctx: GateContext) -> list[str]:
    """Subjects: every catalog product id."""
    return [p["id"] for p in ctx.release().products]


def totals(ctx: GateContext) -> list[str]:
    """Subject of the ``data-totals`` parts: one item ``GATE-ID[totals]`` (distinct from the per-tool items)."""
    return ["totals"]


def tools_where(predicate: Any) -> Any:
    """Subjects: the tools a rule constrains (its antecedent), sorted; the others hold vacuously."""

    def subjects(ctx: GateContext) -> list[str]:
        return sorted(k for k, t in ctx.release().tools.items() if predicate(t))

    return subjects


def tool_of(ctx: GateContext, subject: str | None) -> dict[str, Any] | None:
    """The leaf of ``subject``; None for the empty-catalog item (the rule then holds vacuously)."""
    return None if subject is None else ctx.release().tools[subject]


def observe(ctx: GateContext, counts: dict[str, int]) -> None:
    """Report ``counts`` (before any assertion, so a failing gate still shows them)."""
    for key, value in counts.items():
        ctx.observe(key, value)


def pin(ctx: GateContext, counts: dict[str, int], what: str, *, alone: bool = False) -> None:
    """Observe ``counts`` and compare those the expectations file pins; the names compared are filed in the
    report's ``pins_compared`` section (a pinned count no gate compared in a run is named there, never silently
    accepted). ``alone``: the caller judges nothing but these pins (a ``data-totals`` part): with none of them
    pinned it judged nothing, which is not applicable, never a pass."""
    observe(ctx, counts)
    pinned = {k: ctx.expect.get(k) for k in counts if ctx.expect.get(k) is not None}
    item = getattr(ctx, "item", None)
    gate_id = getattr(getattr(item, "gate", None), "id", None) or "?"
    if pinned:
        ctx.section("pins_compared", {k: gate_id for k in pinned})
    elif alone:
        shown = ", ".join(f"{k} = {v}" for k, v in sorted(counts.items()))
        raise NotApplicable(f"no pinned count to compare (observed {shown}; pin it in the release's "
                            "expectations file, --dws-expect)", wants="a pinned count (--dws-expect)")
    assert_counts(pinned, counts, what)


def tally(ctx: GateContext, key: tuple[str, ...], build: Any) -> Any:
    """A derived view memoised for the session (per-tool gates share one pass over the catalog)."""
    return ctx.memo(("sch_data", *key), build)


def vocabulary(ctx: GateContext) -> Vocabulary:
    """The run's release vocabularies: the defaults with the expectations file's ``[vocabularies]`` (issue 27)."""
    expect = getattr(ctx, "expect", None)
    overrides = (getattr(expect, "data", None) or {}).get("vocabularies")
    where = str(getattr(expect, "path", "") or "expectations")
    return ctx.memo(("vocabulary",), lambda: load_vocabulary(overrides, where))


def classified(ctx: GateContext, subject: str, tool: dict[str, Any], generation: str = "e81") -> Vocabulary:
    """The vocabulary, once the tool's values are all classified by it; else the tool is not judged by this gate
    (NotApplicable) and its values are filed once in the report's ``unclassified`` section (the closing block
    prints one line per field and value: never one failure per tool)."""
    vocab = vocabulary(ctx)
    found = vocab.unclassified(tool, generation)
    if found:
        ctx.section("unclassified", {f"{field}={value} @ {subject}": vocab.source for field, value in found})
        words = ", ".join(f"{value!r} of field {field}" for field, value in found)
        raise NotApplicable(f"unclassified value {words} (classify it in the release's [vocabularies])",
                            wants="a classification of the value ([vocabularies])")
    return vocab
