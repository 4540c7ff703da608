"""Per-tool call plans of the binary gates (SCH, FIN): which calls a gate makes for each tool of the binary.

A gate module registers a *kind* of per-tool calls (:func:`tool_kind`: ``builder(leaf, sampled) -> calls``) and
names the kinds each gate needs (:func:`plan_tool_gate`). The cheap kinds (parse probes, dry runs,
executions) run over every tool of the shard; a builder returns the costly ones (help) only for a sampled
tool. Every planned call is made as ONE batch before the first per-tool gate reads its runs
(:func:`prefetch_tools`), so the pool stays full and gates share runs without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.views import (
    bin_schema,
    every,
    in_sample,
    observe_sample,
    prefetch_selected,
    schema_subjects,
)
from pytest_dws.observe.calls import Call, plans, run_calls

#: kind -> (leaf, sampled) -> the calls; the costly ones (help) only when the tool is sampled.
KINDS: dict[str, Callable[[dict[str, Any], bool], list[Call]]] = {}


def tool_kind(kind: str) -> Callable[[Callable[[dict[str, Any], bool], list[Call]]],
                                     Callable[[dict[str, Any], bool], list[Call]]]:
    """Register the builder of one kind of per-tool calls."""

    def register(builder: Callable[[dict[str, Any], bool], list[Call]]) -> Callable[[dict[str, Any], bool], list[Call]]:
        KINDS[kind] = builder
        return builder

    return register


def plan_tool_gate(gate_id: str, kinds: tuple[str, ...]) -> None:
    """The planner of a per-tool gate: the calls of ``kinds`` for every tool (of the shard)."""
    plans(gate_id)(lambda ctx: tool_calls(ctx, kinds))


def tool_calls(ctx: GateContext, kinds: tuple[str, ...]) -> list[Call]:
    """The planned runs of the per-tool gates of `kinds`: the cheap kinds over every tool (of this shard), the
    costly ones (help) over the sample."""
    view = bin_schema(ctx)
    out: list[Call] = []
    for key in every(ctx, view.tools):
        sampled = in_sample(ctx, key)
        out += [c for kind in kinds for c in KINDS[kind](view.tools[key], sampled)]
    return out


def prefetch_tools(ctx: GateContext) -> None:
    """Before a per-tool gate reads its memoised runs: the session-wide batch of every selected gate
    (:func:`pytest_dws.observe.binary.views.prefetch_selected`), else (selection unknown) one batch of every per-tool
    gate's runs for every sampled tool (under pytest-xdist the workers share the calls,
    :mod:`pytest_dws.launch.xshare`)."""
    observe_sample(ctx)
    if not prefetch_selected(ctx):
        ctx.memo(("sch-prefetch",), lambda: run_calls(ctx, tool_calls(ctx, tuple(KINDS))) and True)


def sampled_subjects(ctx: GateContext) -> list[str]:
    """Subjects of a gate whose judgement needs the costly calls (help): the sample."""
    return schema_subjects(ctx)


def every_subject(ctx: GateContext) -> list[str]:
    """Subjects of a gate that cheap calls judge (probes, dry runs): every tool (of this shard); the costly
    parts of their judgement run on the sampled ones only."""
    return schema_subjects(ctx, cheap=True)


def disk_tools(ctx: GateContext) -> dict[str, dict[str, Any]]:
    """Tools of the catalog on disk (--dws-source / --dws-catalog), {} when none is configured."""
    if ctx.settings.source is None and ctx.settings.catalog is None:
        return {}
    tools = getattr(ctx.release(), "tools", None)
    return tools if isinstance(tools, dict) else {}


def confirmation_asked(leaf: dict[str, Any], inv: Any) -> bool:
    """A user-confirmed tool whose example (rightly without --yes: the Agent may not confirm for the user, D2
    §5) is refused with reason confirmation_required and no request: the safety rule working, not a failure."""
    reason = (inv.error or {}).get("reason")
    return leaf.get("confirmation") == "user_required" and reason == "confirmation_required" and not inv.calls()
