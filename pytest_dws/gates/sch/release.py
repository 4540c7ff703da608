"""SCH DATA gates over the whole release (docs/contract.md §1E): counts, the canonical set (per identity), hashes,
credentials, the static ListTools scan and the fixed identities. The reviewed artifacts beside the catalog
are judged in :mod:`pytest_dws.gates.sch.reviews`. Failure messages list the offending tools/entries
and a deepdiff of expected vs actual. Pinned counts come only from the expectations file (``ctx.expect``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from pytest_dws.assertions import assert_equal, assert_no_problems
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.catalog import checks, hashes
from pytest_dws.inputs.catalog.credentials import scan
from pytest_dws.inputs.release_facts import table
from pytest_dws.observe.release_subjects import DATA, observe, pin, release, tally
from pytest_dws.observe.sourcetree import source_tree
from pytest_dws.registry import Access, gate


def _mismatches(pairs: list[tuple[str, Any, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(expected, actual)`` dicts restricted to the pairs that differ."""
    bad = [(name, e, a) for name, e, a in pairs if e != a]
    return {n: e for n, e, _ in bad}, {n: a for n, _, a in bad}


# -- SCH-COUNTS -------------------------------------------------------------------------------------------
@gate("SCH-COUNTS", doc="D2 §1 (\"21 个产品、504 个工具\"), §9 b1", access=DATA, part="data")
def counts(ctx: GateContext) -> None:
    """The public surface, the Agent index, the MCP snapshot and the Catalog counts agree (and the pins)."""
    rel = release(ctx)
    cat, tools, products = rel.catalog, rel.tools, rel.products
    n = len(tools)
    pairs = [
        ("catalog.count == len(catalog.products)", len(products), cat.get("count")),
        ("catalog.tool_count == len(tools)", n, cat.get("tool_count")),
        ("sum(products[].tool_count) == len(tools)", n, sum(p.get("tool_count", 0) for p in products)),
    ]
    if all("tools" in p for p in products):
        pairs.append(("sum(len(products[].tools)) == len(tools)", n, sum(len(p["tools"]) for p in products)))
        pairs += [(f"products[{p['id']}].tool_count == len(tools)", len(p["tools"]), p.get("tool_count"))
                  for p in products if p.get("tool_count") != len(p["tools"])]
    if rel.surface is not None:
        pairs.append((f"len({rel.surface_name}) == len(tools)", n, len(rel.surface)))
        pairs.append((f"products of {rel.surface_name} == catalog.count", cat.get("count"),
                      len({e["product"] for e in rel.surface})))
    surface_n = len(rel.surface) if rel.surface is not None else n
    agent = cat.get("agent_metadata") or {}
    for key, want in (("surface_tools", surface_n), ("surface_products", cat.get("count")),
                      ("products_with_metadata", cat.get("count")), ("tools_with_metadata", surface_n),
                      ("tools_with_agent_summary", surface_n)):
        if key in agent:
            pairs.append((f"catalog.agent_metadata.{key}", want, agent[key]))
    index = rel.agent_index
    if index is not None:
        cov = index.get("coverage", {})
        pairs.append((f"{rel.name_of('agent_index')} coverage.surface_tools", surface_n, cov.get("surface_tools")))
        pairs.append(("index coverage.products_with_metadata == catalog.count", cat.get("count"),
                      cov.get("products_with_metadata")))
        if "surface_products" in cov:
            pairs.append(("index coverage.surface_products == catalog.count", cat.get("count"),
                          cov["surface_products"]))
        for key in ("tools_with_metadata", "tools_with_agent_summary", "tools_with_use_when",
                    "tools_with_avoid_when", "tools_with_examples", "tools_with_interface_mode"):
            if key in cov:
                pairs.append((f"index coverage.{key}", surface_n, cov[key]))
    mcp = rel.mcp_metadata
    if mcp is not None and mcp.get("coverage", {}).get("surface_scope") != "source_revision":
        # e81 declares the snapshot coverage relative to the surface of its pinned revision (R2.2).
        pairs.append((f"{rel.name_of('mcp_metadata')} coverage.surface_tools", surface_n,
                      mcp["coverage"].get("surface_tools")))
    observe(ctx, {"products": len(products), "tools": n})
    expected, actual = _mismatches(pairs)
    assert_equal(expected, actual, "count consistency")
    pin(ctx, {"products": len(products), "tools": n}, "pinned release counts")


# -- SCH-CANONICAL-SET ------------------------------------------------------------------------------------
def per_identity(ctx: GateContext) -> list[str]:
    """Subjects: the union of reviewed-surface canonical paths and catalog keys."""
    rel = release(ctx)
    surface = rel.require("surface")
    return sorted({e["canonical_path"] for e in surface} | set(rel.tools))


def _path_owners(ctx: GateContext) -> dict[str, set[str]]:
    def build() -> dict[str, set[str]]:
        rel = release(ctx)
        owners: dict[str, set[str]] = defaultdict(set)
        for e in rel.surface or []:
            for path in [e["cli_path"], *e["aliases"]]:
                owners[path].add(e["canonical_path"])
        return owners

    return tally(ctx, ("path_owners",), build)


@gate("SCH-CANONICAL-SET", doc="D2 §9 b2, §4", access=DATA, subjects=per_identity, part="data")
def canonical_set(ctx: GateContext, subject: str | None = None) -> None:
    """Catalog canonical paths equal the reviewed surface; CLI path and aliases agree; identities consistent."""
    rel = release(ctx)
    surface = tally(ctx, ("surface_by_key",), lambda: {e["canonical_path"]: e for e in rel.require("surface")})
    if subject is None:
        return
    entry, tool = surface.get(subject), rel.tools.get(subject)
    if entry is None:
        raise AssertionError(f"{subject} is in the catalog but not in the reviewed surface {rel.surface_name}")
    if tool is None:
        raise AssertionError(f"{subject} is in the reviewed surface {rel.surface_name} but not in the catalog")
    expected = {"canonical_path": subject, "primary_cli_path": entry["cli_path"],
                "aliases": sorted(entry["aliases"])}
    actual = {"canonical_path": tool.get("canonical_path"), "primary_cli_path": tool.get("primary_cli_path"),
              "aliases": sorted(tool.get("aliases") or [])}
    for key, value in (("path", subject), ("cli_path", tool.get("primary_cli_path")), ("is_alias", False)):
        if key in tool:
            expected[key], actual[key] = value, tool[key]
    if "product_id" in tool and "name" in tool:
        expected["product_id.name"], actual["product_id.name"] = subject, f"{tool['product_id']}.{tool['name']}"
    owners = _path_owners(ctx)
    shared = {p: sorted(o) for p in [entry["cli_path"], *entry["aliases"]] if len(o := owners[p]) > 1}
    if shared:
        expected["cli paths owned by one tool"], actual["cli paths owned by one tool"] = {}, shared
    assert_equal(expected, actual, f"{subject}: catalog vs reviewed surface {rel.surface_name}")


# -- SCH-NO-CREDENTIALS -----------------------------------------------------------------------------------
@gate("SCH-NO-CREDENTIALS", doc="D2 §1, §8, §9 b9", access=DATA, part="data")
def no_credentials(ctx: GateContext) -> None:
    """No endpoint/credential keys in any object and no credential text in any schema asset."""
    rel = release(ctx)
    catalog = set(rel.catalog_files)
    problems = [f"catalog ({', '.join(sorted(catalog)) or rel.origin}): {hit}"
                for hit in scan(rel.canonical, rel.doc, canonical=True)]
    others = {name: art for name, art in rel.files.items() if name not in catalog}
    problems += [f"{name}: {hit}" for name, art in others.items() for hit in scan(art.raw, art.data)]
    ctx.observe("credential_scan_files", len(others) + len(catalog))
    assert_no_problems(problems, "credential material")


# -- SCH-NO-LISTTOOLS (static part) -----------------------------------------------------------------------
_LIST_TOOLS = re.compile(rb"\.ListTools\(")
#: A Go function declaration (``func Name(`` or ``func (r *T) Name(``) at the start of a line.
_GO_FUNC = re.compile(rb"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)\s*[\[(]", re.MULTILINE)
ENTRY_DIRS = ("internal/app", "internal/cli")


def _go_functions(data: bytes) -> list[tuple[str, int, int]]:
    """``(name, start, end)`` of each top-level function of a Go file (its body runs to the next declaration)."""
    heads = list(_GO_FUNC.finditer(data))
    return [(m.group(1).decode(), m.start(), heads[i + 1].start() if i + 1 < len(heads) else len(data))
            for i, m in enumerate(heads)]


def _line(data: bytes, at: int) -> int:
    return data.count(b"\n", 0, at) + 1


def list_tools_wrappers(sources: dict[Path, bytes]) -> dict[str, str]:
    """name -> where: every function of the tree that reaches ListTools, directly or through another such function
    (D2 §7: a wrapper such as ``transport.DiscoverTools(ctx)`` called from internal/app is runtime discovery too)."""
    funcs = [(name, path, data[start:end]) for path, data in sources.items()
             for name, start, end in _go_functions(data)]
    found: dict[str, str] = {}
    while True:
        calls = re.compile(rb"\.ListTools\(" + b"".join(rb"|\b" + re.escape(n.encode()) + rb"\("
                                                      for n in sorted(found)))
        new = {name: f"{path.as_posix()}" for name, path, body in funcs
               if name not in found and name != "ListTools" and calls.search(body.split(b"\n", 1)[-1])}
        if not new:
            return found
        found.update(new)


@gate("SCH-NO-LISTTOOLS", doc="D2 §7 last para, §9 b10", access={Access.SRC}, part="src")
def no_list_tools(ctx: GateContext) -> None:
    """internal/app and internal/cli never call .ListTools(, nor a function of the tree that reaches it (a wrapper,
    at any depth): static scan of the Go source tree, test files left out."""
    root = source_tree(ctx)
    files = [p for d in ENTRY_DIRS if (root / d).is_dir() for p in (root / d).rglob("*.go")]
    if not files:
        raise NotApplicable(f"{root} has no Go code under internal/app or internal/cli: the static scan only "
                            "applies to a Go source tree (the BIN+MCP part judges any implementation)",
                            wants="Go code under internal/app or internal/cli")
    sources = {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*.go"))
               if ".git" not in p.parts and not p.name.endswith("_test.go")}
    entry = [rel for rel in sources if rel.as_posix().startswith(tuple(d + "/" for d in ENTRY_DIRS))]
    # the wrappers outside the entry packages: a chain inside them ends in a call of one of these, reported there
    wrappers = list_tools_wrappers({rel: data for rel, data in sources.items() if rel not in entry})
    hits = []
    for rel in entry:
        data = sources[rel]
        for m in _LIST_TOOLS.finditer(data):
            hits.append(f"{rel.as_posix()}:{_line(data, m.start())}: .ListTools(")
        for name, where in sorted(wrappers.items()):
            for m in re.finditer(rb"\b" + re.escape(name.encode()) + rb"\(", data):
                line_start = data.rfind(b"\n", 0, m.start()) + 1
                if _GO_FUNC.match(data, line_start):  # its own declaration, not a call
                    continue
                hits.append(f"{rel.as_posix()}:{_line(data, m.start())}: {name}( (reaches ListTools: {where})")
    ctx.observe("go_files_scanned", len(files))
    assert_no_problems(hits, ".ListTools( calls in internal/app, internal/cli (directly or through a wrapper)")


# -- SCH-HASHES -------------------------------------------------------------------------------------------
@gate("SCH-HASHES", doc="D2 §4 (\"来源 revision/hash 和生成 hash\")", access=DATA, part="data")
def catalog_hashes(ctx: GateContext) -> None:
    """source_hash and surface_hash recompute exactly (R1.7) and agree with the Agent index."""
    rel = release(ctx)
    doc = rel.doc
    if rel.layout == "file" and doc.get("version") is None:
        raise NotApplicable(f"{rel.origin} is a `dws schema --all` document, not the stored catalog the "
                            "source_hash covers", wants="a stored catalog (the source_hash covers it)")
    expected: dict[str, Any] = {}
    actual: dict[str, Any] = {}
    recomputed = hashes.digest(rel.canonical)
    expected["source_hash (recomputed)"], actual["source_hash (recomputed)"] = recomputed, doc.get("source_hash")
    declared = doc.get("surface_hash")
    if rel.surface is not None:
        algo = hashes.surface_hash_cf if rel.generation == "cf" else hashes.surface_hash_e81
        expected[f"surface_hash (recomputed from {rel.surface_name})"] = algo(rel.surface)
        actual[f"surface_hash (recomputed from {rel.surface_name})"] = declared
    agent = rel.catalog.get("agent_metadata") or {}
    if "surface_hash" in agent:
        expected["catalog.agent_metadata.surface_hash"], actual["catalog.agent_metadata.surface_hash"] = (
            declared, agent["surface_hash"])
    if rel.agent_index is not None:
        expected["agent index surface_hash"], actual["agent index surface_hash"] = (
            declared, rel.agent_index.get("surface_hash"))
    if declared is not None and not checks.SHA256.match(declared):
        expected["surface_hash format"], actual["surface_hash format"] = "sha256:<64 hex>", declared
    assert_equal(expected, actual, "catalog hashes")


# -- SCH-CHAT-IDENTITIES / SCH-RETIRED-REMOVED ------------------------------------------------------------
@gate("SCH-CHAT-IDENTITIES", doc="cf/e81 check-schema-catalog.sh (fixed regression)", access=DATA, part="data")
def chat_identities(ctx: GateContext) -> None:
    """chat.send_personal_message is `chat message send`; chat.reply_personal_message is `chat message reply`
    bound to {chat, send_personal_message}."""
    tools = release(ctx).tools
    wanted = table(ctx.expect, "chat_identities")  # release facts (inputs/data/release_facts.toml)
    actual = {key: ({f: tools[key].get(f) for f in fields} if key in tools else "<absent>")
              for key, fields in wanted.items()}
    assert_equal(wanted, actual, "chat identities")


@gate("SCH-RETIRED-REMOVED", doc="D2 §4 (\"已经下线的入口…必须从公开 command surface 和 Schema 中删除\")",
      access=DATA, part="data")
def retired_removed(ctx: GateContext) -> None:
    """Retired entries are absent from the catalog (keys, paths, aliases, summaries) and the surface."""
    rel = release(ctx)
    retired = table(ctx.expect, "retired")
    canon, paths = set(retired.get("canonical", [])), set(retired.get("cli_paths", []))
    found = []
    for key, tool in rel.tools.items():
        if key in canon:
            found.append(f"catalog tools[{key!r}]")
        for path in [tool.get("primary_cli_path"), *(tool.get("aliases") or [])]:
            if path in paths:
                found.append(f"catalog tools[{key!r}] path {path!r}")
    for product in rel.products:
        found += [f"catalog.products[{product['id']}] summary {s.get('canonical_path')!r}"
                  for s in product.get("tools", []) if s.get("canonical_path") in canon]
    for entry in rel.surface or []:
        if entry["canonical_path"] in canon or paths & {entry["cli_path"], *entry["aliases"]}:
            found.append(f"{rel.surface_name} entry {entry['canonical_path']!r}")
    assert_no_problems(found, f"retired entries {sorted(canon | paths)} still published")
