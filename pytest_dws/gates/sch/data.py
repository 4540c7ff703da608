"""SCH DATA gates, per tool (docs/contract.md §1E): one item per catalog tool, e.g. ``SCH-DESTRUCTIVE[chat.x]``.

Each gate reads the release through ``ctx.release()`` and judges one leaf with a helper of
:mod:`pytest_dws.assertions` (the rules are :mod:`pytest_dws.inputs.catalog.checks`). Where cf and e81 differ the
release's ``generation`` picks the rule set (R1.9). Counts a document pins are compared in the
``data-totals`` part of the same gate id, against the expectations file only; unpinned counts are
``ctx.observe()``d. The release-level gates (counts, hashes, reviews, bindings ...) are in
:mod:`pytest_dws.gates.sch.release`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pytest_dws.assertions import (
    assert_agent_fields,
    assert_constraints_valid,
    assert_destructive_requires_confirmation,
    assert_equal,
    assert_examples_safe,
    assert_high_risk_confirmed,
    assert_interface_facts_bounded,
    assert_interface_ref,
    assert_mcp_summary_unreviewed,
    assert_product_fields,
)
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.catalog import checks
from pytest_dws.inputs.profile import active_profile
from pytest_dws.observe.release_subjects import (
    DATA,
    classified,
    full_leaves,
    per_product,
    per_tool,
    pin,
    tally,
    tool_of,
    tools_where,
    totals,
    vocabulary,
)
from pytest_dws.registry import Access, gate


# -- SCH-AGENT-FIELDS -------------------------------------------------------------------------------------
@gate("SCH-AGENT-FIELDS", doc="D2 §5, §9 b3", access=DATA, subjects=per_tool, part="data")
def agent_fields(ctx: GateContext, subject: str | None = None) -> None:
    """Every tool has agent_summary, effect/risk/confirmation/idempotency enums, use/avoid/examples, mode."""
    rel = full_leaves(ctx)
    if subject is not None:
        vocab = classified(ctx, subject, rel.tools[subject], rel.generation)
        assert_agent_fields(rel.tools[subject], rel.generation, vocab)


@gate("SCH-AGENT-FIELDS", doc="D2 §5, §9 b3", access=DATA, subjects=per_product, part="data-products")
def product_agent_fields(ctx: GateContext, subject: str | None = None) -> None:
    """Every product has a non-empty agent_summary."""
    for product in ctx.release().products:
        if product["id"] == subject:
            assert_product_fields(product)


@gate("SCH-AGENT-FIELDS", doc="D2 §5 (\"intents：1290\")",
      access=DATA, subjects=totals, part="data-totals")
def agent_field_totals(ctx: GateContext, subject: str | None = None) -> None:
    """Σ use_when ("intents") and Σ avoid_when match the pinned counts."""
    tools = full_leaves(ctx).tools.values()
    pin(ctx, {"intents": sum(len(t.get("use_when") or []) for t in tools),
              "avoid_when": sum(len(t.get("avoid_when") or []) for t in tools)}, "selection array totals", alone=True)


# -- SCH-INTERFACE-REF ------------------------------------------------------------------------------------
def _snapshot_refs(ctx: GateContext) -> dict[str, Any]:
    def build() -> dict[str, Any]:
        mcp = ctx.release().mcp_metadata or {}
        return {k: v.get("interface_ref") for k, v in mcp.get("tools", {}).items()}

    return tally(ctx, ("snapshot_refs",), build)


@gate("SCH-INTERFACE-REF", doc="D2 §5 (\"固定单 RPC interface_ref：461\"), §9 b4", access=DATA, subjects=per_tool,
      part="data")
def interface_ref(ctx: GateContext, subject: str | None = None) -> None:
    """mcp tools carry a fixed interface_ref (equal to the pinned snapshot's); the others a mode and reason."""
    rel = full_leaves(ctx)
    if subject is not None:
        assert_interface_ref(rel.tools[subject], rel.generation, snapshot_ref=_snapshot_refs(ctx).get(subject))


@gate("SCH-INTERFACE-REF", doc="D2 §5 (\"复合 7，本地 3，不可用 33\"), §9 b4",
      access=DATA, subjects=totals, part="data-totals")
def interface_ref_totals(ctx: GateContext, subject: str | None = None) -> None:
    """The numbers of fixed refs, of tools per interface_mode and of interface reasons match the pins."""
    tools = full_leaves(ctx).tools.values()
    modes = Counter(t.get("interface_mode") for t in tools)
    counts = {"interface_refs": sum(1 for t in tools if t.get("interface_ref") is not None),
              "interface_reasons": sum(1 for t in tools if checks.nonempty_str(t.get("interface_reason")))}
    every_mode = {m for ms in (vocabulary(ctx).data.get("interface_mode") or {}).values() for m in ms}
    counts.update({f"mode_{m}": modes.get(m, 0) for m in sorted(every_mode)})
    pin(ctx, counts, "interface counts", alone=True)


# -- SCH-EXAMPLES (data part) -----------------------------------------------------------------------------
@gate("SCH-EXAMPLES", doc="D2 §5 (\"examples：793，且禁止包含 --yes\"), §9 b6", access=DATA, subjects=per_tool,
      part="data")
def examples(ctx: GateContext, subject: str | None = None) -> None:
    """Every example starts with `dws <primary_cli_path>` and never contains --yes."""
    rel = full_leaves(ctx)
    if subject is not None:
        assert_examples_safe(rel.tools[subject])


@gate("SCH-EXAMPLES", doc="D2 §5 (\"examples：793\")",
      access=DATA, subjects=totals, part="data-totals")
def example_totals(ctx: GateContext, subject: str | None = None) -> None:
    """The number of examples matches the pinned count."""
    pin(ctx, {"examples": sum(len(t.get("examples") or []) for t in full_leaves(ctx).tools.values())},
        "example count", alone=True)


# -- SCH-DESTRUCTIVE / SCH-HIGH-RISK-CONFIRM --------------------------------------------------------------
@gate("SCH-DESTRUCTIVE", access=DATA, subjects=tools_where(lambda t: t.get("effect") == "destructive"),
      part="data",
      doc="D2 §5 (\"所有 destructive 工具强制提升为 risk:high 和 confirmation:user_required\"), §9 b7")
def destructive(ctx: GateContext, subject: str | None = None) -> None:
    """effect=destructive => risk=high and confirmation=user_required (the Agent cannot self-confirm)."""
    if (tool := tool_of(ctx, subject)) is not None:
        assert_destructive_requires_confirmation(tool)


@gate("SCH-DESTRUCTIVE", doc="D2 §5 (\"destructive safety：48/48 通过\")",
      access=DATA, subjects=totals, part="data-totals")
def destructive_totals(ctx: GateContext, subject: str | None = None) -> None:
    """The number of destructive tools matches the pinned count (no silent downgrade)."""
    pin(ctx, {"destructive": sum(1 for t in ctx.release().tools.values() if t.get("effect") == "destructive")},
        "destructive count", alone=True)


def _runtime_gates(ctx: GateContext) -> dict[str, Any] | None:
    """e81: canonical -> reviewed runtime_gate from the hint index's metadata files; None at cf."""

    def build() -> dict[str, Any] | None:
        rel = ctx.release()
        index = rel.hint_index
        if not (isinstance(index, dict) and index.get("metadata")) or rel.safety_hints is None:
            return None
        return {k: hint.get("runtime_gate") for k, (_, hint) in rel.safety_hints[1].items()}

    return tally(ctx, ("runtime_gates",), build)


def _confirm_subjects(ctx: GateContext) -> list[str]:
    """Subjects: high-risk or user-confirmed tools, and (e81) every tool with a reviewed runtime gate entry."""
    gates = _runtime_gates(ctx) or {}
    return sorted(k for k, t in ctx.release().tools.items()
                  if t.get("risk") == "high" or t.get("confirmation") == "user_required" or k in gates)


@gate("SCH-HIGH-RISK-CONFIRM", doc="check-schema-catalog.sh (cf); e81 check-runtime-confirmation-truth.sh",
      access=DATA, subjects=_confirm_subjects, part="data")
def high_risk_confirm(ctx: GateContext, subject: str | None = None) -> None:
    """risk=high => user_required; at e81 user_required exactly when the reviewed runtime_gate is set."""
    if (tool := tool_of(ctx, subject)) is None:
        return
    gates = _runtime_gates(ctx) or {}
    assert_high_risk_confirmed(tool, gates.get(subject or ""), subject in gates)


@gate("SCH-HIGH-RISK-CONFIRM", doc="check-schema-catalog.sh (cf)", access=DATA, subjects=totals,
      part="data-totals")
def high_risk_totals(ctx: GateContext, subject: str | None = None) -> None:
    """The numbers of high-risk and of user-confirmed tools match the pinned counts."""
    tools = ctx.release().tools.values()
    pin(ctx, {"high_risk": sum(1 for t in tools if t.get("risk") == "high"),
              "user_required": sum(1 for t in tools if t.get("confirmation") == "user_required")},
        "confirmation counts", alone=True)


# -- the same two rules on the catalog the binary embeds ---------------------------------------------------
#: D2 §5 "所有 destructive 工具强制提升为 … user_required" holds for every catalog a release ships: given a tree
#: (--dws-source / --dws-catalog) the DATA parts above judge the tree's catalog; these parts judge the one the
#: binary answers an Agent with (`dws schema --all`), subjects ``emb:<tool>``.
EMBEDDED = {Access.DATA, Access.BIN}


def embedded_tools(ctx: GateContext) -> dict[str, Any]:
    """The tools of the binary's embedded catalog, when the DATA parts judge another catalog (a tree or file);
    NotApplicable when there is no binary, or when the release's catalog IS the binary's (judged above already)."""
    from pytest_dws.observe.binary.views import bin_schema

    s = ctx.settings
    if s.source is None and s.catalog is None:
        raise NotApplicable("the DATA parts judge the binary's embedded catalog itself (no --dws-source)")
    if s.cli is None:
        raise NotApplicable("no --dws-cli: no embedded catalog to judge")
    if getattr(ctx.release(), "built_from", None) is not None:
        raise NotApplicable("the tree's catalog is the one its binary embeds (judged by the DATA parts)")
    return bin_schema(ctx).tools


def _embedded_where(predicate: Any) -> Any:
    return lambda ctx: sorted("emb:" + k for k, t in embedded_tools(ctx).items() if predicate(t))


@gate("SCH-DESTRUCTIVE", access=EMBEDDED, subjects=_embedded_where(lambda t: t.get("effect") == "destructive"),
      part="embedded", doc="D2 §5 (\"所有 destructive 工具强制提升为 risk:high 和 confirmation:user_required\"), §9 b7")
def destructive_embedded(ctx: GateContext, subject: str) -> None:
    """The binary's embedded catalog (`dws schema --all`): effect=destructive => risk=high and user_required."""
    assert_destructive_requires_confirmation(embedded_tools(ctx)[subject.removeprefix("emb:")])


@gate("SCH-HIGH-RISK-CONFIRM", doc="check-schema-catalog.sh (cf); e81 check-runtime-confirmation-truth.sh",
      access=EMBEDDED, part="embedded", subjects=lambda ctx: sorted(
          "emb:" + k for k, t in embedded_tools(ctx).items()
          if t.get("risk") == "high" or t.get("confirmation") == "user_required" or k in (_runtime_gates(ctx) or {})))
def high_risk_confirm_embedded(ctx: GateContext, subject: str) -> None:
    """The binary's embedded catalog: risk=high => user_required; at e81 user_required exactly when the tree's
    reviewed runtime_gate is set."""
    key = subject.removeprefix("emb:")
    gates = _runtime_gates(ctx) or {}
    assert_high_risk_confirmed(embedded_tools(ctx)[key], gates.get(key), key in gates)


# -- SCH-CONSTRAINTS --------------------------------------------------------------------------------------
@gate("SCH-CONSTRAINTS", doc="D2 §5 (\"reviewed one-of/互斥/联动约束：30\"), §9 b8; §3", access=DATA,
      subjects=tools_where(lambda t: "constraints" in t), part="data")
def constraints(ctx: GateContext, subject: str | None = None) -> None:
    """Every constraint group has >= 2 members, all of them real parameters or positionals."""
    rel = full_leaves(ctx)
    if subject is not None:
        tool = rel.tools[subject]
        hidden = active_profile(ctx).hidden_flags(tool.get("primary_cli_path") or tool.get("cli_path") or "")
        assert_constraints_valid(tool, hidden)


@gate("SCH-CONSTRAINTS", doc="D2 §5 (\"reviewed one-of/互斥/联动约束：30\")",
      access=DATA, subjects=totals, part="data-totals")
def constraint_totals(ctx: GateContext, subject: str | None = None) -> None:
    """The number of constrained tools (and of groups per kind) matches the pins: no silent loss."""
    tools = [t for t in full_leaves(ctx).tools.values() if t.get("constraints")]
    counts = {"constraint_tools": len(tools)}
    for kind in checks.CONSTRAINT_KINDS:
        counts[f"constraint_groups_{kind}"] = sum(len(t["constraints"].get(kind) or []) for t in tools)
    pin(ctx, counts, "constraint counts", alone=True)


# -- SCH-MCP-UNREVIEWED -----------------------------------------------------------------------------------
@gate("SCH-MCP-UNREVIEWED", doc="D2 §5 (\"MCP 派生 summary 标记为 reviewed:false\")", access=DATA,
      subjects=tools_where(checks.is_mcp_summary), part="data")
def mcp_unreviewed(ctx: GateContext, subject: str | None = None) -> None:
    """A summary derived from the MCP snapshot is marked reviewed:false."""
    if (tool := tool_of(ctx, subject)) is not None:
        assert_mcp_summary_unreviewed(tool)


@gate("SCH-MCP-UNREVIEWED", doc="D2 §5 (\"MCP 接口 summary 应用：271\")",
      access=DATA, subjects=totals, part="data-totals")
def mcp_unreviewed_totals(ctx: GateContext, subject: str | None = None) -> None:
    """The number of MCP-derived summaries matches the pinned count."""
    pin(ctx, {"mcp_summaries": sum(1 for t in ctx.release().tools.values() if checks.is_mcp_summary(t))},
        "MCP summary count", alone=True)


# -- SCH-INTERFACE-FACTS-BOUNDED --------------------------------------------------------------------------
@gate("SCH-INTERFACE-FACTS-BOUNDED", doc="D2 §3, §3.1 (\"接口事实不能直接决定…\")", access=DATA,
      subjects=per_tool, part="data")
def interface_facts_bounded(ctx: GateContext, subject: str | None = None) -> None:
    """MCP facts never decide public-ness, CLI paths, risk/confirmation or selection (effect_source, provenance)."""
    if subject is not None and (tool := tool_of(ctx, subject)) is not None:
        assert_interface_facts_bounded(tool, classified(ctx, subject, tool))


# -- SCH-HINT-PRECEDENCE ----------------------------------------------------------------------------------
HINT_FIELDS = ("effect", "risk", "confirmation", "idempotency", "agent_summary", "interface_ref")


def per_hinted_tool(ctx: GateContext) -> list[str]:
    """Subjects: catalog tools named by a reviewed safety hint (cf destructive-safety.json + conference.json;
    e81 the metadata files of the hint index)."""
    rel = ctx.release()
    hints = rel.safety_hints
    if hints is None:
        raise NotApplicable(f"no reviewed safety hints ({rel.where('destructive_safety')})",
                            wants="reviewed safety hints")
    ctx.observe("safety_hints_without_tool", sum(1 for k in hints[1] if k not in rel.tools))
    return sorted(k for k in hints[1] if k in rel.tools)


@gate("SCH-HINT-PRECEDENCE", doc="D2 §5 (merge priority: reviewed JSON hint first)", access=DATA,
      subjects=per_hinted_tool, part="data")
def hint_precedence(ctx: GateContext, subject: str | None = None) -> None:
    """The catalog's effect/risk/confirmation/idempotency/summary/ref equal the reviewed explicit hint."""
    rel = ctx.release()
    if rel.safety_hints is None:
        raise NotApplicable(f"no reviewed safety hints ({rel.where('destructive_safety')})",
                            wants="reviewed safety hints")
    if subject is None:
        return
    source, hint = rel.safety_hints[1][subject]
    tool = rel.tools[subject]
    fields = [f for f in HINT_FIELDS if f in hint]
    assert_equal({f: hint[f] for f in fields}, {f: tool.get(f) for f in fields},
                 f"{subject}: catalog vs reviewed hint {source}")


# -- SCH-NO-SELF-REPLAY (data part) -----------------------------------------------------------------------
SELECTION_FIELDS = ("use_when", "avoid_when", "examples", "agent_summary", "interface_mode", "availability",
                    "interface_reason")
HINT_INTERFACE_FIELDS = ("interface_mode", "availability", "interface_reason")


def _selection_overrides(ctx: GateContext) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(siblings, hints)``: the reviewed inputs that override a selection entry, resolved once per release
    rather than per item. cf (no hint index naming selection files): sibling-disambiguation.json entries,
    whose ``avoid_when`` wins; e81: the metadata hints, whose interface fields win."""

    def build() -> tuple[dict[str, Any], dict[str, Any]]:
        rel = ctx.release()
        index = rel.hint_index
        if not (isinstance(index, dict) and index.get("selection")):
            return (rel.sibling_disambiguation or {}).get("tools", {}), {}
        hints = rel.safety_hints
        return {}, ({k: hint for k, (_, hint) in hints[1].items()} if hints is not None else {})

    return tally(ctx, ("selection_overrides",), build)


@gate("SCH-NO-SELF-REPLAY", doc="D2 §4, §5 (\"禁止从上一版 Catalog 自举\")", access=DATA, subjects=per_tool,
      part="data")
def no_self_replay(ctx: GateContext, subject: str | None = None) -> None:
    """Selection semantics equal the versioned selection review (not a replay of the previous catalog)."""
    rel = full_leaves(ctx)
    selection = rel.selection
    if selection is None:
        raise NotApplicable(f"no reviewed selection ({rel.where('selection_review')})", wants="a reviewed selection")
    if subject is None:
        return
    source, entries = selection
    entry = entries.get(subject)
    if entry is None:
        raise NotApplicable(f"{source} has no entry for {subject} (judged by SCH-SELECTION-REVIEW-COVERAGE)",
                            wants="an entry in the reviewed selection")
    tool = rel.tools[subject]
    expected = {key: entry[key] for key in SELECTION_FIELDS if key in entry}
    siblings, hints = _selection_overrides(ctx)
    sibling = siblings.get(subject)
    if sibling is not None and "avoid_when" in sibling:
        expected["avoid_when"] = sibling["avoid_when"]
    hint = hints.get(subject)
    if hint is not None:
        expected.update({k: hint[k] for k in HINT_INTERFACE_FIELDS if k in hint})
    # Lists are compared as multisets (sorted); equal values are equal multisets, so only a field whose
    # value differs needs sorting, and only a real difference builds the full comparison for the message.
    if any(tool.get(k) != v and checks.sorted_list(tool.get(k)) != checks.sorted_list(v) for k, v in expected.items()):
        assert_equal({k: checks.sorted_list(v) for k, v in expected.items()},
                     {k: checks.sorted_list(tool.get(k)) for k in expected},
                     f"{subject}: catalog vs reviewed selection {source}")
