"""A malformed artifact stops the run with ONE line naming the file and the JSON path: exit 4, no traceback,
no cascade of gate failures. Each case breaks one file of a valid synthetic tree (tests/synth.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.statistics  # noqa: F401 - imported once here, not again in every in-process run
import pytest
import synth

import pytest_dws.gates  # noqa: F401 - idem: pytester drops modules first imported inside a run
from pytest_dws.inputs.catalog import jsonio

CLI = "internal/cli"
CF_CATALOG = f"{CLI}/schema_catalog.json"
SURFACE = f"{CLI}/schema_command_surface.json"
MCP = f"{CLI}/schema_mcp_metadata.json"
BINDINGS = f"{CLI}/schema_parameter_bindings.json"
SHARD = f"{CLI}/schema_catalog/tools/chat.json"
ENVELOPE = f"{CLI}/schema_catalog/catalog.json"
CF_HINTS = "skills/mono/schema-hints"
E81_HINTS = f"{CLI}/schema_hints"


def _json(rel: str, edit: Callable[[Any], Any]) -> Callable[[Path], None]:
    """Load ``rel``, apply ``edit`` (returning a replacement or None), write it back (valid JSON)."""

    def apply(root: Path) -> None:
        path = root / rel
        data = json.loads(path.read_text(encoding="utf-8"))
        new = edit(data)
        path.write_text(json.dumps(data if new is None else new, ensure_ascii=False, indent=2), encoding="utf-8")

    return apply


def _raw(rel: str, edit: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        path = root / rel
        path.write_bytes(edit(path.read_bytes()))

    return apply


def _dir(rel: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        path = root / rel
        path.unlink()
        path.mkdir()

    return apply


def _huge(rel: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        with (root / rel).open("r+b") as f:  # sparse: the size check must reject it before reading
            f.truncate(600 * 1024 * 1024)  # sparse: over the cap without writing it

    return apply


def _dup_key(rel: str, key: str) -> Callable[[Path], None]:
    """Repeat the member ``"key": …`` of a tool map as a literal duplicate JSON key."""

    def apply(root: Path) -> None:
        path = root / rel
        data = json.loads(path.read_text(encoding="utf-8"))
        body = json.dumps(data["tools"][key], ensure_ascii=False)
        text = path.read_text(encoding="utf-8")
        marker = '"tools": {'
        i = text.index(marker) + len(marker)
        path.write_text(text[:i] + f"\n{json.dumps(key)}: {body}," + text[i:], encoding="utf-8")

    return apply


def _tools(data: Any) -> dict[str, Any]:
    return data["tools"]


def _move_tool_to_other_shard(root: Path) -> None:
    doc = json.loads((root / f"{CLI}/schema_catalog/tools/doc.json").read_text(encoding="utf-8"))
    shard = root / SHARD
    chat = json.loads(shard.read_text(encoding="utf-8"))
    chat["tools"]["doc.delete_document"] = doc["tools"]["doc.delete_document"]
    shard.write_text(json.dumps(chat, ensure_ascii=False), encoding="utf-8")


def _drop_shards(root: Path) -> None:
    for p in (root / f"{CLI}/schema_catalog/tools").glob("*.json"):
        p.unlink()


# (id, layout, break the written tree, file named in the error, JSON path named in the error)
CASES: list[tuple[str, str, Callable[[Path], None], str, str]] = [
    ("cf-truncated", "cf", _raw(CF_CATALOG, lambda b: b[: len(b) // 2]), CF_CATALOG, "$: invalid JSON at line"),
    ("cf-empty", "cf", _raw(CF_CATALOG, lambda b: b""), CF_CATALOG, "$: empty file"),
    ("cf-whitespace-only", "cf", _raw(CF_CATALOG, lambda b: b"  \n\t\n"), CF_CATALOG, "$: empty file"),
    ("cf-not-utf8", "cf", _raw(CF_CATALOG, lambda b: b.replace("群聊".encode(), "群聊".encode("gbk"), 1)),
     CF_CATALOG, "$: not UTF-8"),
    ("cf-utf16", "cf", _raw(CF_CATALOG, lambda b: b.decode().encode("utf-16")), CF_CATALOG, "$: not UTF-8"),
    ("cf-bom", "cf", _raw(CF_CATALOG, lambda b: b"\xef\xbb\xbf" + b), CF_CATALOG, "$: invalid JSON"),
    ("cf-top-level-array", "cf", _json(CF_CATALOG, lambda d: [d]), CF_CATALOG, "$: "),
    ("cf-missing-tools", "cf", _json(CF_CATALOG, lambda d: d.pop("tools") and None), CF_CATALOG, "$: "),
    ("cf-tools-not-object", "cf", _json(CF_CATALOG, lambda d: d.update(tools=[])), CF_CATALOG, "$.tools:"),
    ("cf-risk-number", "cf", _json(CF_CATALOG, lambda d: d["tools"]["chat.recall_message"].update(risk=3)),
     CF_CATALOG, '$.tools["chat.recall_message"].risk'),
    ("cf-no-parameters", "cf", _json(CF_CATALOG, lambda d: d["tools"]["chat.recall_message"].pop("parameters")
                                      and None), CF_CATALOG, '$.tools["chat.recall_message"]'),
    ("cf-examples-string", "cf", _json(CF_CATALOG, lambda d: d["tools"]["doc.delete_document"].update(
        examples="dws doc delete")), CF_CATALOG, '$.tools["doc.delete_document"].examples'),
    ("cf-constraint-member-number", "cf", _json(CF_CATALOG, lambda d: d["tools"]["chat.send_personal_message"][
        "constraints"].update(require_one_of=[["group", 7]])), CF_CATALOG,
     '$.tools["chat.send_personal_message"].constraints.require_one_of[0][1]'),
    ("cf-product-count-string", "cf", _json(CF_CATALOG, lambda d: d["catalog"]["products"][1].update(
        tool_count="2")), CF_CATALOG, "$.catalog.products[1].tool_count"),
    ("cf-duplicate-product", "cf", _json(CF_CATALOG, lambda d: d["catalog"]["products"].append(
        d["catalog"]["products"][0])), CF_CATALOG, "$.catalog.products[3].id"),
    ("cf-duplicate-tool-key", "cf", _dup_key(CF_CATALOG, "chat.recall_message"), CF_CATALOG,
     '$.tools["chat.recall_message"]: duplicate canonical path'),
    ("cf-catalog-is-directory", "cf", _dir(CF_CATALOG), CF_CATALOG, "$: expected a JSON file, found a directory"),
    ("cf-catalog-600MB", "cf", _huge(CF_CATALOG), CF_CATALOG, "$: file is 629145600 bytes"),
    ("cf-surface-duplicate-canonical", "cf", _json(SURFACE, lambda d: d["products"][0]["tools"].append(
        d["products"][0]["tools"][0])), SURFACE, "$.products[0].tools[4].canonical_path"),
    ("cf-surface-missing-cli-path", "cf", _json(SURFACE, lambda d: d["products"][1]["tools"][0].pop("cli_path")
                                                and None), SURFACE, "$.products[1].tools[0]"),
    ("cf-surface-truncated", "cf", _raw(SURFACE, lambda b: b[:-20]), SURFACE, "$: invalid JSON"),
    ("cf-bindings-property-number", "cf", _json(BINDINGS, lambda d: d["bindings"]["chat.send_personal_message"]
                                                .update(user=5)), BINDINGS,
     '$.bindings["chat.send_personal_message"].user'),
    ("cf-bindings-unknown-version", "cf", _json(BINDINGS, lambda d: d.update(version=7)), BINDINGS,
     "$.version: unsupported bindings version 7"),
    ("cf-reference-review-status-number", "cf", _json(f"{CF_HINTS}/reference-review.json",
                                                      lambda d: d["reference_review"]["chat group members"].update(
                                                          status=1)),
     f"{CF_HINTS}/reference-review.json", '$.reference_review["chat group members"].status'),
    ("cf-hint-tools-list", "cf", _json(f"{CF_HINTS}/destructive-safety.json", lambda d: d.update(tools=[])),
     f"{CF_HINTS}/destructive-safety.json", "$.tools"),
    ("cf-hint-duplicate-key", "cf", _dup_key(f"{CF_HINTS}/destructive-safety.json", "chat.recall_message"),
     f"{CF_HINTS}/destructive-safety.json", "duplicate JSON object key 'chat.recall_message'"),
    ("cf-selection-use-when-string", "cf", _json(f"{CF_HINTS}/selection-review.json", lambda d: d["tools"][
        "chat.recall_message"].update(use_when="x")), f"{CF_HINTS}/selection-review.json",
     '$.tools["chat.recall_message"].use_when'),
    ("cf-hint-is-directory", "cf", _dir(f"{CF_HINTS}/conference.json"), f"{CF_HINTS}/conference.json",
     "$: expected a JSON file"),
    ("cf-agent-product-no-tools", "cf", _json(f"{CLI}/schema_agent_metadata/chat.json", lambda d: d.pop("tools")
                                              and None), f"{CLI}/schema_agent_metadata/chat.json", "$: "),
    ("cf-mcp-coverage-string", "cf", _json(MCP, lambda d: d["coverage"].update(source_tools="969")), MCP,
     "$.coverage.source_tools"),
    ("cf-mcp-ref-string", "cf", _json(MCP, lambda d: d["tools"]["chat.recall_message"].update(
        interface_ref="chat/recall")), MCP, '$.tools["chat.recall_message"].interface_ref'),
    ("cf-service-review-missing-services", "cf", _json(f"{CLI}/schema_mcp_service_review.json",
                                                       lambda d: d.pop("missing_services") and None),
     f"{CLI}/schema_mcp_service_review.json", "$: "),
    ("cf-index-coverage-string", "cf", _json(f"{CLI}/schema_agent_metadata/index.json", lambda d: d["coverage"]
                                             .update(surface_tools="7")), f"{CLI}/schema_agent_metadata/index.json",
     "$.coverage.surface_tools"),
    ("e81-envelope-truncated", "e81", _raw(ENVELOPE, lambda b: b[:100]), ENVELOPE, "$: invalid JSON"),
    ("e81-no-shards", "e81", _drop_shards, f"{CLI}/schema_catalog/tools", "$: expected the catalog shards"),
    ("e81-shard-missing-product", "e81", _json(SHARD, lambda d: d.pop("product") and None), SHARD, "$: "),
    ("e81-shard-duplicate-key", "e81", _dup_key(SHARD, "chat.recall_message"), SHARD,
     '$.tools["chat.recall_message"]: duplicate canonical path'),
    ("e81-shards-share-a-tool", "e81", _move_tool_to_other_shard, f"{CLI}/schema_catalog/tools/doc.json",
     '$.tools["doc.delete_document"]: duplicate canonical path'),
    ("e81-shard-provenance-string", "e81", _json(SHARD, lambda d: d["tools"]["chat.recall_message"][
        "field_provenance"].update(effect="reviewed")), SHARD,
     '$.tools["chat.recall_message"].field_provenance.effect'),
    ("e81-registry-tools-object", "e81", _json(f"{CLI}/schema_command_registry/products/doc.json",
                                               lambda d: d.update(tools={})),
     f"{CLI}/schema_command_registry/products/doc.json", "$.tools"),
    ("e81-registry-duplicate-canonical", "e81", _json(f"{CLI}/schema_command_registry/products/doc.json",
                                                      lambda d: d["tools"].append(d["tools"][0])),
     f"{CLI}/schema_command_registry/products/doc.json", "$.tools[2].canonical_path"),
    ("e81-bindings-v3-no-baseline", "e81", _json(BINDINGS, lambda d: d.pop("baseline") and None), BINDINGS, "$: "),
    ("e81-hint-index-missing-file", "e81", _json(f"{E81_HINTS}/index.json", lambda d: d["metadata"].update(
        chat="metadata/nope.json")), f"{E81_HINTS}/index.json", "$.metadata.chat"),
    ("e81-exclusions-groups-object", "e81", _json(f"{CLI}/schema_command_exclusions.json",
                                                  lambda d: d.update(groups={})),
     f"{CLI}/schema_command_exclusions.json", "$.groups"),
    ("e81-metadata-runtime-gate-bool", "e81", _json(f"{E81_HINTS}/metadata/chat.json", lambda d: d["tools"][
        "chat.recall_message"].update(runtime_gate=True)), f"{E81_HINTS}/metadata/chat.json",
     '$.tools["chat.recall_message"].runtime_gate'),
]


def test_at_least_thirty_cases() -> None:
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(("layout", "breaks", "file", "json_path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_artifact_is_one_line(pytester, run_contract, layout, breaks, file, json_path) -> None:
    root = synth.build(layout).write(pytester.path / "tree")
    breaks(root)
    run = run_contract("--dws-source", root)
    out = run.output()
    assert run.ret == 4, out
    assert "Traceback" not in out
    errors = [line for line in run.result.stderr.lines if line.strip()]
    assert len(errors) == 1, out
    assert f"dws-contract: {file}: " in errors[0]
    assert json_path in errors[0], errors[0]
    assert run.gates == {}  # no cascade: no gate ran


def test_schema_all_with_duplicate_canonical(pytester, run_contract) -> None:
    leaf = synth.build("e81").tool("chat.recall_message")
    doc = {"kind": "schema", "level": "catalog", "count": 2, "tool_count": 2, "products": [
        {"id": "chat", "tool_count": 1, "tools": [leaf]}, {"id": "chat2", "tool_count": 1, "tools": [leaf]}]}
    path = pytester.path / "all.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    run = run_contract("--dws-catalog", path)
    assert run.ret == 4
    assert '$.products[1].tools[0].canonical_path: duplicate canonical path' in run.output()


def test_catalog_file_that_is_a_number(pytester, run_contract) -> None:
    path = pytester.path / "n.json"
    path.write_text("42", encoding="utf-8")
    run = run_contract("--dws-catalog", path)
    assert run.ret == 4
    assert "expected a JSON object, got int" in run.output()


def test_size_limit_is_a_module_constant(tmp_path, monkeypatch) -> None:
    from pytest_dws.core.errors import DwsInputError

    path = tmp_path / "x.json"
    path.write_text('{"a": 1}', encoding="utf-8")
    monkeypatch.setattr(jsonio, "MAX_FILE_BYTES", 4)
    with pytest.raises(DwsInputError) as info:
        jsonio.read_bytes(path)
    assert info.value.json_path == "$"
    assert "MAX_FILE_BYTES" in info.value.detail
