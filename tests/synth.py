"""Small synthetic release trees, valid in both upstream layouts, for the DATA-gate self-tests to mutate.

``build("cf")`` / ``build("e81")`` return a :class:`Tree`: every artifact as a parsed JSON object keyed by
its path in the tree (catalog, surface or command registry, MCP snapshot + service review, agent index,
bindings v2/v3, hints). All counts, summaries, coverage headers and both hashes are consistent, so the
release passes every DATA gate. A test mutates ``tree.files`` (helpers: :meth:`Tree.tool`,
:meth:`Tree.hint`) and writes it; :meth:`Tree.write` recomputes ``source_hash``/``surface_hash`` unless told
not to, so a mutation trips only the gate that judges it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from pytest_dws.inputs.catalog import hashes

CLI = "internal/cli"
REVISION = "4574f7022c32cf4c033e9b7b4156e2fec815fed8"
MCP_HASH = "sha256:" + "1" * 64
SUMMARY_DROP = {"parameters", "has_parameters", "parameter_count", "constraints", "positionals", "examples",
                "effect_source", "agent_source_refs", "field_provenance", "path", "source", "product_id",
                "display", "is_alias"}

PRODUCTS = {"chat": "群聊 / 消息", "dev": "开放平台应用", "doc": "钉钉文档"}


def _tool(product: str, name: str, cli: str, effect: str, *, mode: str = "mcp", ref: Any = "self",
          reason: str | None = None, availability: str = "available", params: dict[str, Any] | None = None,
          **extra: Any) -> dict[str, Any]:
    risk = {"read": "low", "write": "medium", "destructive": "high"}[effect]
    key = f"{product}.{name}"
    leaf: dict[str, Any] = {
        "canonical_path": key, "path": key, "product_id": product, "name": name, "title": name,
        "cli_path": cli, "primary_cli_path": cli, "cli_name": cli.split()[-1], "is_alias": False,
        "description": f"{name} 的说明", "display": PRODUCTS[product], "source": f"runtime:{product}",
        "agent_summary": f"{name} 摘要", "agent_summary_source": "dws-command-surface-review",
        "agent_metadata_source": "embedded-skill-metadata", "agent_source_refs": ["skills/mono/SKILL.md"],
        "effect": effect, "effect_source": "command-verb", "risk": risk,
        "confirmation": "user_required" if risk == "high" else "not_required",
        "idempotency": "idempotent" if effect == "read" else "unknown",
        "interface_mode": mode, "availability": availability,
        "use_when": [f"需要{name}时"], "avoid_when": [f"不需要{name}时"], "examples": [f"dws {cli} --format json"],
        "parameters": params or {"format": {"type": "string", "description": "输出格式", "property": "format",
                                            "required": False}},
    }
    if ref == "self":
        ref = {"product_id": product, "rpc_name": name}
    if ref is not None:
        leaf["interface_ref"] = ref
    if reason is not None:
        leaf["interface_reason"] = reason
    leaf.update(extra)
    leaf["has_parameters"] = bool(leaf["parameters"])
    leaf["parameter_count"] = len(leaf["parameters"])
    return leaf


def tools(generation: str, scale: int = 0) -> dict[str, dict[str, Any]]:
    """The synthetic catalog: 7 tools in 3 products, covering every rule's interesting case (plus ``scale``
    plain read tools in ``doc``, for growth benchmarks: bench/bench_data_gates.py)."""
    target = {"group": {"type": "string", "description": "群聊 openConversationId", "property": "openConversationId",
                        "required": False},
              "user": {"type": "string", "description": "单聊对方 userId", "property": "userId", "required": False},
              "text": {"type": "string", "description": "消息内容", "property": "text", "required": True}}
    out = [
        _tool("chat", "send_personal_message", "chat message send", "write", params=copy.deepcopy(target),
              examples=["dws chat message send --group <openConversationId> --text 你好"],
              constraints={"mutually_exclusive": [["group", "user"]], "require_one_of": [["group", "user"]]}),
        _tool("chat", "reply_personal_message", "chat message reply", "write",
              ref={"product_id": "chat", "rpc_name": "send_personal_message"}, params=copy.deepcopy(target),
              constraints={"require_together": [["group", "text"]]}),
        _tool("chat", "recall_message", "chat message recall", "destructive"),
        _tool("chat", "list_messages", "chat message list", "read", aliases=["chat message history"],
              agent_summary_source="mcp-tools-list+cli-registry@4574f7022c32", reviewed=False,
              metadata_source="embedded-mcp-metadata"),
        _tool("doc", "delete_document", "doc delete", "destructive", mode="composite", ref=None,
              reason="组合调用：先查询再删除", positionals=[{"name": "doc-id", "index": 0, "type": "string",
                                                       "required": True, "variadic": False, "description": "文档"}]),
        _tool("doc", "update_permission", "doc permission update", "write", mode="local", ref=None,
              reason="本地实现", risk="high", confirmation="user_required"),
        _tool("dev", "legacy_publish", "dev legacy publish", "write", ref=None, reason="兼容工具，已不可用",
              mode="unavailable" if generation == "cf" else "local", availability="unavailable"),
    ]
    out += [_tool("doc", f"bulk_{i:05d}", f"doc bulk b{i:05d}", "read") for i in range(scale)]
    result = {t["canonical_path"]: t for t in out}
    if generation == "e81":
        for leaf in result.values():
            leaf["reviewed"] = True
            leaf["agent_summary_source"] = f"dws-agent-selection/{leaf['product_id']}"
            leaf["field_provenance"] = {
                "canonical_path": {"precedence": "command_registry", "resolution": "registry_identity",
                                   "source": "reviewed_command_registry", "value": leaf["canonical_path"],
                                   "candidates": []},
                "effect": {"precedence": "reviewed_explicit", "resolution": "highest_precedence",
                           "source": f"{CLI}/schema_hints/metadata/{leaf['product_id']}.json",
                           "value": leaf["effect"], "candidates": []},
            }
    return result


class Tree:
    """Every artifact of one synthetic release, by path; see the module docstring."""

    def __init__(self, generation: str, files: dict[str, Any]) -> None:
        self.generation = generation
        self.files = files

    # -- access for mutations --------------------------------------------------------------------------
    def tool(self, key: str) -> dict[str, Any]:
        if self.generation == "cf":
            return self.files[f"{CLI}/schema_catalog.json"]["tools"][key]
        return self.files[f"{CLI}/schema_catalog/tools/{key.split('.')[0]}.json"]["tools"][key]

    def catalog(self) -> dict[str, Any]:
        """The catalog document holding ``catalog`` (cf: the single file; e81: the envelope)."""
        name = "schema_catalog.json" if self.generation == "cf" else "schema_catalog/catalog.json"
        return self.files[f"{CLI}/{name}"]

    def hint(self, name: str) -> Any:
        return self.files[f"{self.hints_dir}/{name}"]

    @property
    def hints_dir(self) -> str:
        return "skills/mono/schema-hints" if self.generation == "cf" else f"{CLI}/schema_hints"

    def surface_entries(self) -> list[dict[str, Any]]:
        if self.generation == "cf":
            return [t for p in self.files[f"{CLI}/schema_command_surface.json"]["products"] for t in p["tools"]]
        return [t for k, v in self.files.items() if k.startswith(f"{CLI}/schema_command_registry/products/")
                for t in v["tools"]]

    def all_tools(self) -> dict[str, dict[str, Any]]:
        if self.generation == "cf":
            return self.files[f"{CLI}/schema_catalog.json"]["tools"]
        out: dict[str, dict[str, Any]] = {}
        for k, v in sorted(self.files.items()):
            if k.startswith(f"{CLI}/schema_catalog/tools/"):
                out.update(v["tools"])
        return out

    # -- writing ---------------------------------------------------------------------------------------
    def rehash(self) -> None:
        """Recompute surface_hash (and mirror it) and source_hash from the current content."""
        surface = []
        if self.generation == "cf":
            for p in self.files[f"{CLI}/schema_command_surface.json"]["products"]:
                surface += [dict(t, product=p["id"]) for t in p["tools"]]
            surface_hash = hashes.surface_hash_cf(surface)
        else:
            surface_hash = hashes.surface_hash_e81(self.surface_entries())
        doc = self.catalog()
        doc["surface_hash"] = surface_hash
        doc["catalog"].setdefault("agent_metadata", {})["surface_hash"] = surface_hash
        index = self.files.get(f"{CLI}/schema_agent_metadata/index.json")
        if index is not None:
            index["surface_hash"] = surface_hash
        doc["source_hash"] = hashes.source_hash(doc["version"], surface_hash, doc["catalog"], self.all_tools())

    def write(self, root: Path, *, rehash: bool = True) -> Path:
        """Write every file under ``root`` (created) and return ``root``."""
        if rehash:
            self.rehash()
        for rel, data in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, bytes):
                path.write_bytes(data)
            else:
                path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        return root


def build(generation: str, scale: int = 0) -> Tree:
    """A consistent synthetic release in the ``cf`` or ``e81`` layout (``scale``: extra tools, see :func:`tools`)."""
    leaves = tools(generation, scale)
    files: dict[str, Any] = {}
    products = []
    for pid, title in PRODUCTS.items():
        members = [t for t in leaves.values() if t["product_id"] == pid]
        products.append({"id": pid, "name": title, "description": title, "runtime": True,
                         "tool_count": len(members), "agent_summary": f"{title}的 Agent 摘要",
                         "agent_summary_source": "dws-command-surface-review", "use_when": [f"处理{title}"],
                         "tools": [{k: v for k, v in t.items() if k not in SUMMARY_DROP} for t in members]})
    n = len(leaves)
    mcp_tools = {k: {"title": t["name"], "description": t["description"], "parameters": {},
                     "interface_ref": t["interface_ref"]}
                 for k, t in leaves.items() if t["interface_mode"] == "mcp"}
    coverage = {"source_services": 3, "snapshot_services": 2, "missing_services": ["notify"],
                "source_tools": max(20, n + 13),
                "surface_tools": n, "matched_tools": len(mcp_tools), "aliased_tools": 1,
                "unmatched_tools": n - len(mcp_tools)}
    if generation == "e81":
        coverage = {"surface_scope": "source_revision", **coverage}
    mcp = {"version": 1, "source": "mcp-tools-list+cli-registry", "source_revision": REVISION, "source_hash": MCP_HASH,
           "coverage": coverage, "tools": mcp_tools}
    catalog = {"kind": "schema", "level": "catalog", "source": "embedded-command-catalog", "count": len(products),
               "tool_count": n, "products": products,
               "agent_metadata": {"version": 1, "source": "embedded-skill-metadata",
                                  "source_hash": "sha256:" + "2" * 64,
                                  "surface_products": len(products), "products_with_metadata": len(products),
                                  "surface_tools": n, "tools_with_metadata": n, "tools_with_agent_summary": n,
                                  "unmatched_skill_tools": 2},
               "interface_metadata": {k: mcp[k] for k in ("version", "source", "source_revision", "source_hash",
                                                          "coverage")} | {"tool_count": len(mcp_tools)}}
    index_cov = {"surface_products": len(products), "products_with_metadata": len(products), "surface_tools": n,
                 "tools_with_metadata": n, "tools_with_agent_summary": n, "tools_with_use_when": n,
                 "tools_with_avoid_when": n, "tools_with_examples": n, "tools_with_interface_mode": n,
                 "unmatched_skill_tools": 2}
    if generation == "e81":
        index_cov["unreviewed_skill_tools"] = 0
    files[f"{CLI}/schema_agent_metadata/index.json"] = {
        "version": 1, "source_hash": "sha256:" + "2" * 64, "surface_hash": "", "coverage": index_cov,
        "domains": list(PRODUCTS), "products": {p["id"]: {"agent_summary": p["agent_summary"]} for p in products}}
    files[f"{CLI}/schema_mcp_metadata.json"] = mcp
    files[f"{CLI}/schema_mcp_service_review.json"] = {
        "version": 1, "snapshot_source_hash": MCP_HASH,
        "missing_services": {"notify": {"status": "out_of_surface", "reason": "notify 不在公开命令面中"}}}
    surface_tools = {pid: [] for pid in PRODUCTS}
    for t in leaves.values():
        entry = {"canonical_path": t["canonical_path"], "cli_path": t["primary_cli_path"]}
        if t.get("aliases"):
            entry["aliases"] = list(t["aliases"])
        surface_tools[t["product_id"]].append(entry)
    references = {
        "chat group list-all": {"status": "alias", "target": "chat message list", "reason": "已审查的旧路径"},
        "chat group members": {"status": "group", "reason": "命令分组引用"},
        "agoal contract list": {"status": "out_of_surface", "reason": "不在公开命令面"},
        "chat old-send": {"status": "stale", "reason": "旧路径"},
    }
    review = {"version": 1, "source": {"kind": "explicit", "name": "skill-reference-review-v1"},
              "reference_review": references}
    selection = {k: {"use_when": t["use_when"], "avoid_when": t["avoid_when"], "examples": t["examples"],
                     "interface_mode": t["interface_mode"], "availability": t["availability"],
                     **({"interface_reason": t["interface_reason"]} if "interface_reason" in t else {})}
                 for k, t in leaves.items()}
    binding = {"chat.send_personal_message": {"group": "openConversationId", "user": "userId"},
               "chat.reply_personal_message": {"group": "openConversationId", "user": "userId"}}
    if generation == "cf":
        files[f"{CLI}/schema_catalog.json"] = {"version": 1, "source_hash": "", "surface_hash": "",
                                               "catalog": catalog, "tools": leaves}
        files[f"{CLI}/schema_command_surface.json"] = {
            "version": 1, "products": [{"id": pid, "tools": ts} for pid, ts in surface_tools.items()]}
        files[f"{CLI}/schema_agent_metadata_audit.json"] = {
            "version": 1, "coverage": index_cov,
            "unmatched_references": [{"tool_path": k, "review": v} for k, v in references.items()
                                     if v["status"] != "alias"]}
        files[f"{CLI}/schema_agent_metadata/chat.json"] = {
            "product_id": "chat", "tools": {t["primary_cli_path"]: {"agent_summary": t["agent_summary"]}
                                            for t in leaves.values() if t["product_id"] == "chat"}}
        files[f"{CLI}/schema_parameter_bindings.json"] = {
            "version": 2, "source_catalog_hash": "sha256:" + "3" * 64, "historical_binding_count": 2,
            "migrations": {"chat.send_personal_message --to": "chat.send_personal_message --user"},
            "excluded": {"chat.recall_message --id": "helper 没有该输入"},
            "added": {"chat.reply_personal_message --group": "openConversationId (inherited flag)"},
            "bindings": binding}
        hints = "skills/mono/schema-hints"
        files[f"{hints}/selection-review.json"] = {
            "version": 1, "source": {"kind": "explicit", "name": "agent-selection-contract-v1"},
            "coverage": {"source_tools": n, "eligible_tools": n, "matched_tools": n, "unmatched_tools": 0},
            "tools": selection}
        files[f"{hints}/reference-review.json"] = review
        files[f"{hints}/destructive-safety.json"] = {
            "version": 1, "source": {"kind": "explicit", "name": "destructive-safety-review"},
            "tools": {k: {"effect": t["effect"], "risk": t["risk"], "confirmation": t["confirmation"]}
                      for k, t in leaves.items() if t["effect"] == "destructive"}}
        files[f"{hints}/conference.json"] = {
            "version": 1, "source": {"kind": "explicit", "name": "conference-schema-review"},
            "tools": {"doc.update_permission": {"agent_summary": leaves["doc.update_permission"]["agent_summary"],
                                                "effect": "write", "reviewed": True}}}
        # sibling disambiguation overrides one tool's avoid_when (and the catalog follows it, sorted)
        sibling = ["要撤回请改用 dws chat message recall", "要发送请改用 dws chat message send"]
        leaves["chat.list_messages"]["avoid_when"] = sorted(sibling)
        files[f"{hints}/sibling-disambiguation.json"] = {
            "version": 1, "source": {"kind": "explicit", "name": "sibling-disambiguation-v1"},
            "coverage": {"source_tools": n, "matched_tools": 1},
            "tools": {"chat.list_messages": {"avoid_when": sibling}}}
    else:
        files[f"{CLI}/schema_catalog/catalog.json"] = {"version": 1, "surface_hash": "", "source_hash": "",
                                                       "catalog": catalog}
        for pid in PRODUCTS:
            files[f"{CLI}/schema_catalog/tools/{pid}.json"] = {
                "product": pid, "tools": {k: t for k, t in sorted(leaves.items()) if t["product_id"] == pid}}
        files[f"{CLI}/schema_command_registry/registry.json"] = {"$schema": "./schema_command_registry.schema.json",
                                                                 "version": 1}
        for pid, ts in surface_tools.items():
            files[f"{CLI}/schema_command_registry/products/{pid}.json"] = {"id": pid, "tools": ts}
        files[f"{CLI}/schema_command_exclusions.json"] = {"version": 1, "groups": [
            {"id": "cli-management", "reason": "本地 CLI 管理命令", "reviewed": True, "commands": ["auth login"]}]}
        files[f"{CLI}/schema_parameter_bindings.json"] = {
            "version": 3,
            "baseline": {"manifest": "schema-parameter-bindings-v3", "sha256": "sha256:" + "4" * 64,
                         "reason": "Reviewed v3 baseline", "reviewed": True},
            "removals": {"chat.recall_message --id": {"reason": "helper 没有该输入", "reviewed": True}},
            "corrections": {"chat.send_personal_message --user": {"old_property": "user", "new_property": "userId",
                                                                   "reason": "runtime helper 发送 userId",
                                                                   "reviewed": True}},
            "mapping_exclusions": {"chat.send_personal_message --text": "消息内容由 helper 组装"},
            "bindings": binding}
        hints = f"{CLI}/schema_hints"
        metadata: dict[str, dict[str, Any]] = {pid: {} for pid in PRODUCTS}
        picks: dict[str, dict[str, Any]] = {pid: {} for pid in PRODUCTS}
        for k, t in leaves.items():
            entry = {f: t[f] for f in ("effect", "risk", "confirmation", "idempotency", "interface_mode",
                                       "availability")}
            if "interface_reason" in t:
                entry["interface_reason"] = t["interface_reason"]
            entry["runtime_gate"] = "confirm_delete" if t["confirmation"] == "user_required" else "none"
            metadata[t["product_id"]][k] = {**entry, "reviewed": True}
            picks[t["product_id"]][k] = {"agent_summary": t["agent_summary"], "use_when": t["use_when"],
                                         "avoid_when": t["avoid_when"], "examples": t["examples"], "reviewed": True}
        for pid in PRODUCTS:
            files[f"{hints}/metadata/{pid}.json"] = {"version": 1, "source": {"kind": "explicit",
                                                                              "name": f"dws-tool-metadata/{pid}"},
                                                     "tools": metadata[pid]}
            files[f"{hints}/selection/{pid}.json"] = {"version": 1, "source": {"kind": "explicit",
                                                                               "name": f"dws-agent-selection/{pid}"},
                                                      "tools": picks[pid]}
        files[f"{hints}/index.json"] = {
            "version": 1, "format": "dws-agent-hint-index",
            "metadata": {pid: f"metadata/{pid}.json" for pid in PRODUCTS},
            "selection": {pid: f"selection/{pid}.json" for pid in PRODUCTS}, "reference_review": references}
        files[f"{hints}/reference-review.json"] = review
        legacy = {k: v for k, v in selection.items() if k.startswith("chat.")}
        files[f"{hints}/selection-review.json"] = {
            "version": 1, "source": {"kind": "explicit", "name": "agent-selection-contract-v1"},
            "coverage": {"source_tools": len(legacy)}, "tools": legacy}
        # e81 keeps a stale destructive-safety.json that is no longer an input (not in the index)
        files[f"{hints}/destructive-safety.json"] = {
            "version": 1, "source": {"kind": "explicit", "name": "destructive-safety-review"},
            "tools": {"chat.list_messages": {"effect": "destructive", "risk": "high", "confirmation": "user_required"}}}
    return Tree(generation, copy.deepcopy(files))


def write_catalog_file(tree: Tree, path: Path) -> Path:
    """Only the catalog of a cf tree, as one file (the ``--dws-catalog`` case)."""
    tree.rehash()
    path.write_text(json.dumps(tree.catalog(), ensure_ascii=False, indent=2), encoding="utf-8")
    return path
