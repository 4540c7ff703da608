"""The D2 catalog rules as pure functions over one tool leaf (or one artifact): each returns the list of
problems (empty = conforming). The ``assert_*`` helpers of :mod:`pytest_dws.assertions` wrap them, so the
DATA gates (files) and the BIN gates (``dws schema`` output) judge with the same code.

``generation`` selects the rule set where cf and e81 differ (docs/contract.md §1E, R1.9): at e81 ``interface_mode``
loses ``unavailable``, availability is independent of the mode, and the selection arrays may be empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pytest_dws.inputs.vocabularies import Vocabulary, default_vocabulary

EFFECTS = ("read", "write", "destructive")
RISKS = ("low", "medium", "high")
CONFIRMATIONS = ("not_required", "user_required")
#: agent_summary_source prefix of summaries derived from the pinned MCP snapshot (D2 §5).
MCP_SUMMARY_PREFIX = "mcp-tools-list+cli-registry@"
DECISION_FIELDS = ("canonical_path", "primary_cli_path", "cli_path", "aliases", "effect", "risk",
                   "confirmation", "use_when", "avoid_when", "examples", "availability")
CONSTRAINT_KINDS = ("mutually_exclusive", "require_one_of", "require_together")
_YES = re.compile(r"(^|\s)--yes(\s|$|=)")
#: ``sha256:<64 lowercase hex>`` (hashes) and a 40-hex git revision (pinned snapshots).
SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")
REVISION = re.compile(r"^[0-9a-f]{40}$")


def nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


#: The enum fields SCH-AGENT-FIELDS checks: D2's own, closed here (key, allowed values), then the release's
#: vocabulary fields (inputs/data/vocabularies.toml, overridable per release).
_ENUMS = (("effect", EFFECTS), ("risk", RISKS), ("confirmation", CONFIRMATIONS))
_VOCABULARY_ENUMS = ("idempotency", "interface_mode", "availability")
_SELECTION_ARRAYS = ("use_when", "avoid_when", "examples")
_MISSING = object()


def agent_fields(tool: Mapping[str, Any], generation: str = "e81", vocab: Vocabulary | None = None) -> list[str]:
    """SCH-AGENT-FIELDS: summary, the four safety enums, selection arrays, interface mode, availability. D2's own
    enums (effect, risk, confirmation) are closed here; interface_mode, availability and idempotency are the
    release's vocabulary (``vocab``): a value it does not classify is the caller's to report, not a problem."""
    vocab = vocab or default_vocabulary()
    out = []
    if not nonempty_str(tool.get("agent_summary")):
        out.append("agent_summary is missing or empty")
    for key, allowed in (*_ENUMS, *((k, vocab.allowed(k, generation)) for k in _VOCABULARY_ENUMS)):
        value = tool.get(key, _MISSING)
        if key in _VOCABULARY_ENUMS and isinstance(value, str) and value not in allowed:
            continue  # unclassified: Vocabulary.unclassified names it
        if value is _MISSING:
            out.append(f"{key} is missing")
        elif value not in allowed:
            out.append(f"{key}={value!r} not in {list(allowed)}")
    for key in _SELECTION_ARRAYS:
        value = tool.get(key)
        if not isinstance(value, list):
            out.append(f"{key} is missing")
        elif not value:  # D2 §5 "每个公开工具都必须固定 use_when、avoid_when、安全示例": an empty list fixes nothing
            out.append(f"{key} is empty")
        elif not all(map(nonempty_str, value)):
            out.append(f"{key} has an empty entry")
    return out


def product_fields(product: Mapping[str, Any]) -> list[str]:
    """SCH-AGENT-FIELDS for a product: a non-empty agent_summary."""
    return [] if nonempty_str(product.get("agent_summary")) else ["agent_summary is missing or empty"]


def _ref_ok(ref: Any) -> bool:
    return isinstance(ref, dict) and nonempty_str(ref.get("product_id")) and nonempty_str(ref.get("rpc_name"))


def interface_ref(tool: Mapping[str, Any], generation: str = "e81") -> list[str]:
    """SCH-INTERFACE-REF: mcp => a fixed interface_ref; composite/local/unavailable => no ref and a reason.

    cf also ties availability to the mode (mcp/composite/local available, unavailable unavailable)."""
    mode, ref, reason = tool.get("interface_mode"), tool.get("interface_ref"), tool.get("interface_reason")
    availability = tool.get("availability")
    out = []
    if mode == "mcp":
        if not _ref_ok(ref):
            out.append(f"interface_mode=mcp needs interface_ref{{product_id, rpc_name}}, got {ref!r}")
        if generation == "cf" and availability != "available":
            out.append(f"interface_mode=mcp needs availability=available, got {availability!r}")
    elif mode in ("composite", "local", "unavailable"):
        if ref is not None:
            out.append(f"interface_mode={mode} must not carry an interface_ref, got {ref!r}")
        if not nonempty_str(reason):
            out.append(f"interface_mode={mode} needs a non-empty interface_reason")
        if generation == "cf":
            want = "unavailable" if mode == "unavailable" else "available"
            if availability != want:
                out.append(f"interface_mode={mode} needs availability={want}, got {availability!r}")
    else:
        out.append(f"interface_mode={mode!r} is not a known mode")
    return out


def examples(tool: Mapping[str, Any]) -> list[str]:
    """SCH-EXAMPLES (data part): each example starts with ``dws <primary_cli_path>`` and never uses --yes."""
    prefix = "dws " + str(tool.get("primary_cli_path", ""))
    spaced = prefix + " "
    out = []
    for i, example in enumerate(tool.get("examples") or []):
        if not isinstance(example, str):
            out.append(f"examples[{i}] is not a string")
            continue
        if not (example == prefix or example.startswith(spaced)):
            out.append(f"examples[{i}] does not start with {prefix!r}: {example!r}")
        if "--yes" in example and _YES.search(example):  # the substring test skips the regex for most examples
            out.append(f"examples[{i}] contains --yes (the Agent must not self-confirm): {example!r}")
    return out


def safety_expectation(tool: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """SCH-DESTRUCTIVE: ``(expected, actual)`` safety fields of a destructive tool that is not high+confirmed."""
    if tool.get("effect") != "destructive":
        return None
    actual = {"risk": tool.get("risk"), "confirmation": tool.get("confirmation")}
    expected = {"risk": "high", "confirmation": "user_required"}
    return None if actual == expected else (expected, actual)


def high_risk_confirmation(tool: Mapping[str, Any], runtime_gate: str | None = None,
                           gated: bool = False) -> list[str]:
    """SCH-HIGH-RISK-CONFIRM: risk=high => user_required; with the e81 runtime_gate truth (``gated``),
    confirmation=user_required exactly when the reviewed runtime_gate is set and not ``none``."""
    out = []
    if tool.get("risk") == "high" and tool.get("confirmation") != "user_required":
        out.append(f"risk=high needs confirmation=user_required, got {tool.get('confirmation')!r}")
    if gated:
        gate_on = runtime_gate not in (None, "none")
        if gate_on != (tool.get("confirmation") == "user_required"):
            out.append(f"confirmation={tool.get('confirmation')!r} disagrees with the reviewed runtime_gate="
                       f"{runtime_gate!r} (user_required exactly when a runtime gate is set)")
    return out


def constraints(tool: Mapping[str, Any], hidden: Iterable[str] = ()) -> list[str]:
    """SCH-CONSTRAINTS: known kinds, groups of at least two members, members are parameters/positionals or a
    ``hidden`` compatibility spelling of the tool (a release may list one beside its published flag: the binary
    accepts it, ALI-SCHEMA-FACTS proves that)."""
    cons = tool.get("constraints")
    if cons is None:
        return []
    names = set(tool.get("parameters") or {}) | {p.get("name") for p in tool.get("positionals") or []} | set(hidden)
    out = []
    for kind, groups in cons.items():
        if kind not in CONSTRAINT_KINDS:
            out.append(f"unknown constraint kind {kind!r}")
            continue
        if not groups:
            out.append(f"{kind} is empty")
        for i, group in enumerate(groups):
            if len(group) < 2:
                out.append(f"{kind}[{i}] has fewer than two members: {group}")
            unknown = [m for m in group if m not in names]
            if unknown:
                out.append(f"{kind}[{i}] names {unknown}, which are neither parameters nor positionals")
    return out


def mcp_summary_unreviewed(tool: Mapping[str, Any], vocab: Vocabulary | None = None) -> list[str]:
    """SCH-MCP-UNREVIEWED: a summary derived from MCP (source prefix, or e81 provenance) is reviewed:false."""
    source = str(tool.get("agent_summary_source", ""))
    prov = (tool.get("field_provenance") or {}).get("agent_summary") or {}
    if is_mcp_summary(tool, vocab) and tool.get("reviewed") is not False:
        return [f"agent_summary comes from MCP ({source or prov.get('precedence')}) but reviewed="
                f"{tool.get('reviewed', '<missing>')!r}, expected false"]
    return []


def is_mcp_summary(tool: Mapping[str, Any], vocab: Vocabulary | None = None) -> bool:
    """Whether the tool's agent_summary was derived from the MCP snapshot."""
    interface = (vocab or default_vocabulary()).interface("precedence")
    prov = (tool.get("field_provenance") or {}).get("agent_summary") or {}
    return (str(tool.get("agent_summary_source", "")).startswith(MCP_SUMMARY_PREFIX)
            or prov.get("precedence") in interface)


def facts_bounded(tool: Mapping[str, Any], vocab: Vocabulary | None = None) -> list[str]:
    """SCH-INTERFACE-FACTS-BOUNDED: effect is a reviewed/inferred decision, and (e81 provenance) no identity,
    navigation, safety or selection field was decided by an interface (MCP) fact. Which effect sources and
    precedences are interface facts is the release's vocabulary; an unclassified one is not judged here."""
    vocab = vocab or default_vocabulary()
    out = []
    if "effect_source" in tool and vocab.sort("effect_source", str(tool["effect_source"])) == "interface":
        out.append(f"effect_source={tool['effect_source']!r} is an interface fact (the release's vocabulary), "
                   "not a reviewed or inferred decision")
    prov = tool.get("field_provenance") or {}
    interface = vocab.interface("precedence")
    for key in DECISION_FIELDS:
        entry = prov.get(key)
        if isinstance(entry, dict) and entry.get("precedence") in interface:
            out.append(f"{key} was decided by the interface fact {entry.get('source', '?')} "
                       f"(precedence {entry['precedence']})")
    return out


def sorted_list(value: Any) -> Any:
    """Lists of strings compared as multisets (the generator sorts them); anything else as is."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return sorted(value)
    return value
