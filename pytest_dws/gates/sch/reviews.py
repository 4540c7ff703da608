"""SCH DATA gates over the reviewed artifacts beside the catalog (docs/contract.md §1E, R2): the Skill reference
review, the parameter bindings (v2 at cf, v3 at e81), the selection review and the pinned MCP snapshot.
One item per gate; messages list the offending entries. Pinned counts come only from ``ctx.expect``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pytest_dws.assertions import assert_no_problems, assert_same_keys
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.catalog import checks
from pytest_dws.observe.release_subjects import DATA, observe, pin, release, vocabulary
from pytest_dws.registry import gate

# -- SCH-REF-REVIEW ---------------------------------------------------------------------------------------
REFERENCE_STATUSES = ("alias", "group", "stale", "out_of_surface")


@gate("SCH-REF-REVIEW", doc="D2 §5 (\"207 个原始引用…未审查引用数必须为 0\"), §9 b5", access=DATA, part="data")
def reference_review(ctx: GateContext) -> None:
    """Every unmatched Skill reference has a fixed review status (alias targets are real); 0 unreviewed."""
    rel = release(ctx)
    review = rel.require("reference_review")["reference_review"]
    primaries = {t.get("primary_cli_path") for t in rel.tools.values()}
    problems = []
    for ref, entry in sorted(review.items()):
        status = entry.get("status")
        if status not in REFERENCE_STATUSES:
            problems.append(f"{ref!r}: status {status!r} not in {list(REFERENCE_STATUSES)}")
        if not checks.nonempty_str(entry.get("reason")):
            problems.append(f"{ref!r}: no reason")
        if status == "alias" and entry.get("target") not in primaries:
            problems.append(f"{ref!r}: alias target {entry.get('target')!r} is not a catalog primary_cli_path")
    unreviewed = {}
    if rel.agent_index is not None:
        unreviewed[f"{rel.name_of('agent_index')} coverage.unreviewed_skill_tools"] = (
            rel.agent_index.get("coverage", {}).get("unreviewed_skill_tools", 0))
    if "unreviewed_skill_tools" in (rel.catalog.get("agent_metadata") or {}):
        unreviewed["catalog.agent_metadata.unreviewed_skill_tools"] = rel.catalog["agent_metadata"][
            "unreviewed_skill_tools"]
    if rel.agent_audit is not None:
        missing = [r.get("tool_path") for r in rel.agent_audit.get("unmatched_references", []) if not r.get("review")]
        unreviewed[f"{rel.name_of('agent_audit')} references without review"] = len(missing)
        problems += [f"unreviewed Skill reference {p!r} (audit)" for p in missing]
    for what, count in unreviewed.items():
        if count:
            problems.append(f"{what} = {count}, D2 §5 requires 0")
    statuses = Counter(e.get("status") for e in review.values())
    ctx.observe("unreviewed_skill_tools", max(unreviewed.values(), default=0))
    counts = {"reference_reviews": len(review), "reference_aliases": statuses["alias"],
              "reference_groups": statuses["group"], "reference_stale": statuses["stale"],
              "reference_out_of_surface": statuses["out_of_surface"]}
    observe(ctx, counts)
    assert_no_problems(problems, f"reference review {rel.where('reference_review')}")
    pin(ctx, counts, "reference review counts")


# -- SCH-BINDINGS -----------------------------------------------------------------------------------------
def _split(key: str) -> tuple[str, str]:
    tool, _, flag = key.partition(" --")
    return tool, flag


@gate("SCH-BINDINGS", doc="D2 §4 (\"311 条非默认映射 … 316 条 active … 5 迁移 … 3 排除 … 8 补入\")", access=DATA,
      part="data")
def bindings(ctx: GateContext) -> None:
    """Versioned flag->property bindings: reasons inline, counts pinned, every binding matches the catalog, and every
    catalog parameter the file binds (provenance, or a non-default property) or excludes is in it."""
    rel = release(ctx)
    data = rel.require("bindings")
    tools = rel.tools
    problems = []
    active = data["bindings"]
    for tool_key, flags in sorted(active.items()):
        params = (tools.get(tool_key) or {}).get("parameters")
        if params is None:
            problems.append(f"binding for {tool_key}, which is not a catalog tool")
            continue
        for flag, prop in sorted(flags.items()):
            if flag not in params:
                problems.append(f"{tool_key} --{flag}: no such parameter in the catalog")
            elif params[flag].get("property") != prop:
                problems.append(f"{tool_key} --{flag}: binding {prop!r} but catalog property "
                                f"{params[flag].get('property')!r}")
    problems += _unbound_problems(ctx, tools, active, data.get("mapping_exclusions") or {})
    counts = {"bindings": sum(len(v) for v in active.values()), "binding_tools": len(active)}
    if data["version"] == 2:
        for key in ("migrations", "excluded", "added"):
            for entry, reason in sorted((data.get(key) or {}).items()):
                if not checks.nonempty_str(reason):
                    problems.append(f"{key}[{entry!r}]: the reason must be a non-empty string")
        counts.update({"historical_bindings": data.get("historical_binding_count", 0),
                       "binding_migrations": len(data.get("migrations") or {}),
                       "binding_exclusions": len(data.get("excluded") or {}),
                       "binding_additions": len(data.get("added") or {})})
    else:
        problems += _v3_problems(data, active)
        counts.update({"binding_removals": len(data.get("removals") or {}),
                       "binding_corrections": len(data.get("corrections") or {}),
                       "binding_mapping_exclusions": len(data.get("mapping_exclusions") or {})})
    observe(ctx, counts)
    assert_no_problems(problems, f"parameter bindings {rel.name_of('bindings')}")
    pin(ctx, counts, "binding counts")


def inferred_property(flag: str) -> tuple[str, ...]:
    """The properties a flag maps to by default (no binding needed): its own name, and its lowerCamelCase."""
    head, *rest = flag.replace("_", "-").split("-")
    return flag, head + "".join(w[:1].upper() + w[1:] for w in rest)


def _unbound_problems(ctx: GateContext, tools: dict[str, Any], active: dict[str, dict[str, str]],
                      exclusions: dict[str, Any]) -> list[str]:
    """Catalog -> bindings (D2 §4 "不得从上一版 Catalog 自动补回"): a parameter whose property provenance names the
    bindings file (or its mapping exclusions) is in it; without a provenance, a property other than the flag's
    default mapping is bound. A binding the catalog keeps but the file lost fails here, not silently."""
    sources = vocabulary(ctx).data.get("binding_source") or {}
    from_bindings, from_exclusions = set(sources.get("bindings") or ()), set(sources.get("exclusions") or ())
    out = []
    for tool_key, tool in sorted(tools.items()):
        for flag, param in sorted((tool.get("parameters") or {}).items()):
            if not isinstance(param, dict) or flag in active.get(tool_key, {}):
                continue
            prop = param.get("property")
            source = ((param.get("field_provenance") or {}).get("property") or {}).get("source")
            if source in from_bindings:
                out.append(f"{tool_key} --{flag}: property {prop!r} from the bindings file ({source}), which has no "
                           "binding for it")
            elif source in from_exclusions and f"{tool_key} --{flag}" not in exclusions:
                out.append(f"{tool_key} --{flag}: excluded by the bindings file ({source}), which does not exclude it")
            elif source is None and isinstance(prop, str) and prop not in inferred_property(flag):
                out.append(f"{tool_key} --{flag}: property {prop!r} is not the flag's default mapping and the bindings "
                           "file has no binding for it")
    return out


def _v3_problems(data: dict[str, Any], active: dict[str, dict[str, str]]) -> list[str]:
    out = []
    base = data.get("baseline") or {}
    if not checks.nonempty_str(base.get("manifest")):
        out.append("baseline.manifest is missing")
    if not checks.SHA256.match(str(base.get("sha256", ""))):
        out.append(f"baseline.sha256 {base.get('sha256')!r} is not sha256:<64 hex>")
    if not checks.nonempty_str(base.get("reason")) or base.get("reviewed") is not True:
        out.append("baseline needs a reason and reviewed:true")
    for key in ("removals", "corrections"):
        for entry, value in sorted((data.get(key) or {}).items()):
            if not checks.nonempty_str(value.get("reason")) or value.get("reviewed") is not True:
                out.append(f"{key}[{entry!r}] needs a reason and reviewed:true")
            tool, flag = _split(entry)
            bound = active.get(tool, {}).get(flag)
            if key == "removals" and bound is not None:
                out.append(f"removals[{entry!r}] is still an active binding ({bound!r})")
            if key == "corrections" and bound != value.get("new_property"):
                out.append(f"corrections[{entry!r}]: active binding {bound!r} != new_property "
                           f"{value.get('new_property')!r}")
    for entry, reason in sorted((data.get("mapping_exclusions") or {}).items()):
        tool, flag = _split(entry)
        if not checks.nonempty_str(reason):
            out.append(f"mapping_exclusions[{entry!r}]: the reason must be a non-empty string")
        if flag in active.get(tool, {}):
            out.append(f"mapping_exclusions[{entry!r}] is also an active binding")
    return out


# -- SCH-SELECTION-REVIEW-COVERAGE ------------------------------------------------------------------------
@gate("SCH-SELECTION-REVIEW-COVERAGE", doc="D2 §5 (\"选择语义来自版本化 selection-review.json\")", access=DATA,
      part="data")
def selection_review_coverage(ctx: GateContext) -> None:
    """The reviewed selection covers exactly the catalog tools, and its coverage header adds up."""
    rel = release(ctx)
    selection = rel.selection
    if selection is None:
        raise NotApplicable(f"no reviewed selection ({rel.where('selection_review')})", wants="a reviewed selection")
    source, entries = selection
    problems = []
    index = rel.hint_index
    if isinstance(index, dict) and index.get("selection"):
        for product, rel_path in sorted(index["selection"].items()):
            stray = sorted(k for k in (rel.hint(rel_path) or {}).get("tools", {}) if not k.startswith(product + "."))
            if stray:
                problems.append(f"{rel.hints_dir}/{rel_path} (product {product}) holds other products' tools: "
                                f"{stray[:10]}")
    review = rel.selection_review
    if review is not None:
        cov, keys = review.get("coverage", {}), set(review.get("tools", {}))
        pairs = [("coverage.source_tools", len(keys), cov.get("source_tools"))]
        if "matched_tools" in cov and not (isinstance(index, dict) and index.get("selection")):
            pairs.append(("coverage.matched_tools", len(keys & set(rel.tools)), cov["matched_tools"]))
        if {"eligible_tools", "unmatched_tools", "matched_tools"} <= set(cov):
            pairs.append(("coverage.unmatched_tools", cov["eligible_tools"] - cov["matched_tools"],
                          cov["unmatched_tools"]))
        problems += [f"{rel.where('selection_review')} {n}: expected {e}, got {a}" for n, e, a in pairs if e != a]
    observe(ctx, {"selection_tools": len(entries)})
    assert_no_problems(problems, "selection review")
    assert_same_keys(rel.tools, entries, f"catalog tools vs reviewed selection {source}")
    pin(ctx, {"selection_tools": len(entries)}, "selection review count")


# -- SCH-MCP-SNAPSHOT-PINNED ------------------------------------------------------------------------------
@gate("SCH-MCP-SNAPSHOT-PINNED", doc="D2 §1, §3.1, §8", access=DATA, part="data")
def mcp_snapshot_pinned(ctx: GateContext) -> None:
    """The MCP snapshot is redacted, pinned (revision + hash), audited, and matched only to the surface."""
    rel = release(ctx)
    mcp = rel.require("mcp_metadata")
    name = rel.name_of("mcp_metadata")
    cov, snap_tools = mcp["coverage"], mcp["tools"]
    problems = []
    if not checks.REVISION.match(str(mcp.get("source_revision"))):
        problems.append(f"{name} source_revision {mcp.get('source_revision')!r} is not a 40-hex commit")
    if not checks.SHA256.match(str(mcp.get("source_hash"))):
        problems.append(f"{name} source_hash {mcp.get('source_hash')!r} is not sha256:<64 hex>")
    review = rel.service_review
    missing = cov.get("missing_services", [])
    if review is None:
        problems.append(f"no service review ({rel.where('service_review')}): the snapshot is not audited")
    else:
        if review.get("snapshot_source_hash") != mcp.get("source_hash"):
            problems.append(f"service review snapshot_source_hash {review.get('snapshot_source_hash')!r} != "
                            f"snapshot source_hash {mcp.get('source_hash')!r}")
        if sorted(review["missing_services"]) != sorted(missing):
            problems.append(f"service review covers {sorted(review['missing_services'])}, snapshot misses "
                            f"{sorted(missing)}")
        for svc, entry in sorted(review["missing_services"].items()):
            if entry.get("status") != "out_of_surface" or not checks.nonempty_str(entry.get("reason")):
                problems.append(f"missing service {svc!r} needs status out_of_surface and a reason")
    arithmetic = [
        ("source_services == snapshot_services + |missing_services|", cov.get("source_services"),
         (cov.get("snapshot_services") or 0) + len(missing)),
        ("surface_tools == matched_tools + unmatched_tools", cov.get("surface_tools"),
         (cov.get("matched_tools") or 0) + (cov.get("unmatched_tools") or 0)),
        ("source_tools >= surface_tools", True, (cov.get("source_tools") or 0) >= (cov.get("surface_tools") or 0)),
        ("matched_tools <= |tools|", True, (cov.get("matched_tools") or 0) <= len(snap_tools)),
        ("|tools| <= surface_tools", True, len(snap_tools) <= (cov.get("surface_tools") or 0)),
        ("aliased_tools <= matched_tools", True, (cov.get("aliased_tools") or 0) <= (cov.get("matched_tools") or 0)),
    ]
    problems += [f"{name} coverage: {n} (expected {e}, got {a})" for n, e, a in arithmetic if e != a]
    outside = sorted(k for k in snap_tools if k not in rel.tools)
    if outside and cov.get("surface_scope") != "source_revision":
        problems.append(f"{len(outside)} snapshot tools are not catalog tools: {outside[:10]}")
    ctx.observe("mcp_snapshot_tools_outside_catalog", len(outside))
    header = rel.catalog.get("interface_metadata")
    if header is not None:
        for key in ("version", "source", "source_revision", "source_hash", "coverage"):
            if key in mcp and header.get(key) != mcp.get(key):
                problems.append(f"catalog.interface_metadata.{key} differs from {name}")
        if header.get("tool_count") != len(snap_tools):
            problems.append(f"catalog.interface_metadata.tool_count {header.get('tool_count')} != {len(snap_tools)}")
    observe(ctx, {"mcp_snapshot_tools": len(snap_tools)})
    assert_no_problems(problems, "MCP snapshot")
    pin(ctx, {"mcp_snapshot_tools": len(snap_tools)}, "MCP snapshot count")


