"""The catalog layer as a library: layout detection, both hashes, ``Release.from_document`` for every catalog
shape (stored cf, reassembled e81, e81 envelope, ``dws schema --all`` of e81 and cf), artifact access, the
compiled schema predicate agreeing with jsonschema, and the credential scans."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import synth
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_dws.core.errors import DwsInputError, NotApplicable
from pytest_dws.inputs.catalog import Release, hashes, load_release
from pytest_dws.inputs.catalog.credentials import scan
from pytest_dws.inputs.catalog.validate import compiled, first_error


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("trees")
    return {g: synth.build(g).write(root / g) for g in ("cf", "e81")}


@pytest.mark.parametrize("generation", ["cf", "e81"])
def test_layout_and_generation(trees, generation) -> None:
    rel = load_release(source=trees[generation])
    assert (rel.layout, rel.generation, len(rel.tools), len(rel.products)) == (generation, generation, 7, 3)
    assert {e["canonical_path"] for e in rel.surface} == set(rel.tools)
    assert rel.require("mcp_metadata")["coverage"]["matched_tools"] == 4
    assert rel.selection is not None and set(rel.selection[1]) == set(rel.tools)


def test_hints_by_layout(trees) -> None:
    cf, e81 = load_release(source=trees["cf"]), load_release(source=trees["e81"])
    assert cf.hints_dir == "skills/mono/schema-hints" and cf.destructive_safety is not None
    assert cf.safety_hints[0] == ["skills/mono/schema-hints/destructive-safety.json",
                                  "skills/mono/schema-hints/conference.json"]
    # e81: the hint index names the authoritative metadata files; destructive-safety.json is not an input
    assert all("/metadata/" in f for f in e81.safety_hints[0])
    assert e81.hint("metadata/chat.json")["tools"]["chat.recall_message"]["runtime_gate"] == "confirm_delete"
    assert e81.reference_review["reference_review"] == cf.reference_review["reference_review"]


def test_hashes_reproduce(trees) -> None:
    for generation, root in trees.items():
        rel = load_release(source=root)
        doc = rel.doc
        assert hashes.source_hash(doc["version"], doc["surface_hash"], doc["catalog"], rel.tools) == doc["source_hash"]
        algo = hashes.surface_hash_cf if generation == "cf" else hashes.surface_hash_e81
        assert algo(rel.surface) == doc["surface_hash"]


def test_go_json_escapes() -> None:
    assert hashes.go_json({"b": "<a & b>", "a": "\u2028"}) == b'{"a":"\\u2028","b":"\\u003ca \\u0026 b\\u003e"}'
    assert hashes.go_json(["群", 1, True, None]) == '["群",1,true,null]'.encode()


def test_surface_hash_rules() -> None:
    """cf keeps the source product and alias order-insensitively; e81 blanks a same-product source and adds
    the visibility."""
    a = {"product": "chat", "canonical_path": "chat.x", "cli_path": "chat x", "aliases": ["b", "a"],
         "source_product_id": "chat"}
    b = dict(a, aliases=["a", "b"])
    assert hashes.surface_hash_cf([a]) == hashes.surface_hash_cf([b])
    assert hashes.surface_hash_cf([a]) != hashes.surface_hash_cf([dict(a, source_product_id="")])
    assert hashes.surface_hash_e81([a]) == hashes.surface_hash_e81([dict(a, source_product_id="")])
    assert hashes.surface_hash_e81([a]) == hashes.surface_hash_e81([dict(a, visibility="public")])
    assert hashes.surface_hash_e81([a]) != hashes.surface_hash_e81([dict(a, visibility="compat")])


def test_detect_errors(tmp_path) -> None:
    with pytest.raises(NotApplicable, match="no committed catalog"):
        load_release(source=tmp_path)
    (tmp_path / "internal/cli/schema_catalog").mkdir(parents=True)
    (tmp_path / "internal/cli/schema_catalog.json").write_text("{}", encoding="utf-8")
    with pytest.raises(DwsInputError, match="both"):
        load_release(source=tmp_path)


def test_missing_artifact_is_not_applicable_naming_the_file(trees, tmp_path) -> None:
    t = synth.build("cf")
    del t.files["internal/cli/schema_parameter_bindings.json"]
    rel = load_release(source=t.write(tmp_path / "t"))
    assert rel.bindings is None
    with pytest.raises(NotApplicable, match=r"internal/cli/schema_parameter_bindings\.json not found"):
        rel.require("bindings")


# -- from_document ----------------------------------------------------------------------------------------
def _doc(generation: str) -> dict[str, Any]:
    t = synth.build(generation)
    t.rehash()
    return {**t.catalog(), "tools": t.all_tools()} if generation == "e81" else t.catalog()


def test_from_document_stored_shapes() -> None:
    cf = Release.from_document(_doc("cf"), "cf.json")
    e81 = Release.from_document(_doc("e81"), "e81.json")
    assert (cf.layout, cf.generation, len(cf.tools)) == ("file", "cf", 7)
    assert (e81.generation, e81.full_leaves, len(e81.tools)) == ("e81", True, 7)
    envelope = {k: v for k, v in _doc("e81").items() if k != "tools"}
    assert Release.from_document(envelope, "catalog.json").tools == {}


def _schema_all(generation: str) -> dict[str, Any]:
    doc = _doc(generation)
    by_product: dict[str, list[Any]] = {}
    for leaf in doc["tools"].values():
        by_product.setdefault(leaf["product_id"], []).append(leaf)
    products = []
    for p in doc["catalog"]["products"]:
        full = copy.deepcopy(p)
        if generation == "e81":  # e81 --all: products with the full leaves
            full["tools"] = by_product[p["id"]]
        products.append(full)
    return {"kind": "schema", "level": "catalog", "count": len(products), "tool_count": len(doc["tools"]),
            "products": products, "source": "embedded-command-catalog", "catalog_hash": doc["source_hash"],
            "surface_hash": doc["surface_hash"]}


def test_from_document_schema_all_e81_full_leaves() -> None:
    rel = Release.from_document(_schema_all("e81"), "dws schema --all")
    assert (rel.generation, rel.full_leaves, len(rel.tools)) == ("e81", True, 7)
    assert rel.doc["source_hash"].startswith("sha256:") and rel.doc["surface_hash"].startswith("sha256:")
    assert rel.tools["chat.recall_message"]["risk"] == "high"


def test_from_document_schema_all_cf_summaries() -> None:
    rel = Release.from_document(_schema_all("cf"), "dws schema --all")
    assert (rel.generation, rel.full_leaves, len(rel.tools)) == ("cf", False, 7)
    assert "parameters" not in rel.tools["chat.recall_message"]


def test_from_document_rejects_malformed() -> None:
    doc = _schema_all("e81")
    doc["products"][0]["tools"][0]["risk"] = 3
    with pytest.raises(DwsInputError) as info:
        Release.from_document(doc, "dws schema --all")
    assert info.value.json_path == "$.products[0].tools[0].risk"


def test_gates_judge_a_schema_all_document(trees) -> None:
    """Another helper can run the same DATA gates on what a binary embeds."""
    from pytest_dws.observe.rejudge import data_context, failing, judge

    doc = _schema_all("e81")
    leaf = next(t for p in doc["products"] for t in p["tools"] if t["canonical_path"] == "chat.recall_message")
    leaf["confirmation"] = "not_required"
    ctx = data_context(catalog=Path("unused"))
    ctx.cache[("release",)] = Release.from_document(doc, "dws schema --all")
    verdicts = judge(ctx)
    assert verdicts[("SCH-HASHES", None)] == "not_applicable"
    assert verdicts[("SCH-CANONICAL-SET", None)] == "not_applicable"
    assert failing(verdicts) == {"SCH-DESTRUCTIVE[chat.recall_message]", "SCH-HIGH-RISK-CONFIRM[chat.recall_message]"}


# -- compiled schema predicate == jsonschema ---------------------------------------------------------------
LEAF = synth.build("e81").tool("chat.send_personal_message")
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=16),
                    st.text(max_size=3), st.lists(st.text(max_size=2), max_size=2), st.just({}), st.just([[1]]))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_compiled_predicate_agrees_with_jsonschema(data: st.DataObject) -> None:
    leaf = copy.deepcopy(LEAF)
    path = data.draw(st.sampled_from([p for p in _paths(leaf) if p]))
    parent = leaf
    for part in path[:-1]:
        parent = parent[part]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(_VALUES)
    valid_compiled = compiled("tool")(leaf)
    valid_jsonschema = first_error("tool", leaf) is None
    assert valid_compiled == valid_jsonschema


def test_every_schema_compiles_and_accepts_the_synthetic_tree(trees) -> None:
    for path in Path(compiled.__module__.replace(".", "/")).parent.glob("schemas/*.json"):
        compiled(path.stem)
    assert compiled("tool")(LEAF)
    assert not compiled("tool")({**LEAF, "risk": 1})


# -- credentials ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "expected"), [
    (b'{"a": {"endpoint": "x"}}', ["key 'endpoint' at $.a.endpoint"]),
    (b'{"\\u0065ndpoint": 1}', ["key 'endpoint' at $.endpoint"]),
    (b'{"d": "send Authorization: Bearer abc"}', ["text 'Authorization:'", "text 'Bearer a'"]),
    (b'{"d": "use access_token or client-secret"}', ["text 'access_token'", "text 'client-secret'"]),
    (b'{"u": "mcp-gw.dingtalk.com/x"}', ["text 'mcp-gw.dingtalk.com'"]),
    (b'{"d": "a token, a secret, an endpoint"}', []),
    # long gaps before the colon must not hide a key or a header
    (('{"a": {"endpoint"' + " " * 100 + ': "x"}}').encode(), ["key 'endpoint' at $.a.endpoint"]),
    (('{"d": "Authorization' + "说明" * 80 + ': x"}').encode(), ["text 'Authorization"]),
])
def test_credential_scan(raw: bytes, expected: list[str]) -> None:
    hits = scan(raw, json.loads(raw))
    assert len(hits) == len(expected)
    for hit, want in zip(hits, expected, strict=True):
        assert hit.startswith(want)
