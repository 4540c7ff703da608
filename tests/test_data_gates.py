"""Every SCH DATA gate can fail: a synthetic release (tests/synth.py) passes them all, and one mutation per
case makes exactly that gate fail (judged on the JSON report). Also the baseline semantics on real items
and the single-catalog-file input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.statistics  # noqa: F401 - imported once here, not again in every in-process run
import pytest
import synth

import pytest_dws.gates  # noqa: F401 - idem: pytester drops modules first imported inside a run

#: Every gate id this module's gates register (the DATA gates of docs/contract.md §1E + the static ListTools scan).
DATA_GATES = {
    "SCH-COUNTS", "SCH-CANONICAL-SET", "SCH-AGENT-FIELDS", "SCH-INTERFACE-REF", "SCH-REF-REVIEW", "SCH-EXAMPLES",
    "SCH-DESTRUCTIVE", "SCH-HIGH-RISK-CONFIRM", "SCH-CONSTRAINTS", "SCH-NO-CREDENTIALS", "SCH-NO-LISTTOOLS",
    "SCH-BINDINGS", "SCH-NO-SELF-REPLAY", "SCH-MCP-UNREVIEWED", "SCH-HINT-PRECEDENCE",
    "SCH-SELECTION-REVIEW-COVERAGE", "SCH-MCP-SNAPSHOT-PINNED", "SCH-INTERFACE-FACTS-BOUNDED", "SCH-HASHES",
    "SCH-CHAT-IDENTITIES", "SCH-RETIRED-REMOVED",
}
SEL = ("-m", "dws_sch")


def tree(pytester: pytest.Pytester, generation: str, mutate: Callable[[synth.Tree], Any] | None = None,
         *, rehash: bool = True) -> Path:
    t = synth.build(generation)
    if mutate is not None:
        mutate(t)
    return t.write(pytester.path / f"tree-{generation}", rehash=rehash)


# -- mutations (each breaks one rule and keeps every other artifact consistent) ---------------------------
def _set(getter: Callable[[synth.Tree], dict[str, Any]], **values: Any) -> Callable[[synth.Tree], None]:
    def mutate(t: synth.Tree) -> None:
        getter(t).update(values)

    return mutate


def _all(*steps: Callable[[synth.Tree], Any]) -> Callable[[synth.Tree], None]:
    def mutate(t: synth.Tree) -> None:
        for step in steps:
            step(t)

    return mutate


def _meta(pid: str, key: str) -> Callable[[synth.Tree], dict[str, Any]]:
    return lambda t: t.hint(f"metadata/{pid}.json")["tools"][key]


def _tool(key: str) -> Callable[[synth.Tree], dict[str, Any]]:
    return lambda t: t.tool(key)


def _surface(key: str) -> Callable[[synth.Tree], dict[str, Any]]:
    return lambda t: next(e for e in t.surface_entries() if e["canonical_path"] == key)


def _drop(getter: Callable[[synth.Tree], dict[str, Any]], key: str) -> Callable[[synth.Tree], None]:
    return lambda t: getter(t).pop(key)


def _write_go(t: synth.Tree) -> None:
    t.files["internal/app/root.go"] = b"package app\n\nfunc boot() {\n\t_, _ = client.ListTools(ctx)\n}\n"


def _bad_hash(t: synth.Tree) -> None:
    t.rehash()
    t.catalog()["source_hash"] = "sha256:" + "0" * 64


def _bad_index_surface_hash(t: synth.Tree) -> None:
    t.rehash()
    t.files["internal/cli/schema_agent_metadata/index.json"]["surface_hash"] = "sha256:" + "9" * 64


CASES: list[tuple[str, str, Callable[[synth.Tree], Any]]] = [
    ("SCH-COUNTS", "cf", lambda t: t.files["internal/cli/schema_agent_metadata/index.json"]["coverage"].update(
        surface_tools=99)),
    ("SCH-COUNTS", "e81", lambda t: t.catalog()["catalog"].update(tool_count=99)),
    ("SCH-CANONICAL-SET", "cf", _set(_surface("chat.recall_message"), aliases=["chat message undo"])),
    ("SCH-CANONICAL-SET", "e81", _set(_surface("doc.delete_document"), cli_path="doc remove")),
    ("SCH-AGENT-FIELDS", "cf", _drop(_tool("chat.list_messages"), "idempotency")),
    ("SCH-AGENT-FIELDS", "e81", lambda t: t.catalog()["catalog"]["products"][0].update(agent_summary="")),
    ("SCH-INTERFACE-REF", "cf", _drop(_tool("chat.recall_message"), "interface_ref")),
    ("SCH-INTERFACE-REF", "e81", _all(_drop(_tool("doc.delete_document"), "interface_reason"),
                                      _drop(_meta("doc", "doc.delete_document"), "interface_reason"))),
    ("SCH-REF-REVIEW", "cf", lambda t: t.hint("reference-review.json")["reference_review"].update(
        {"chat x": {"status": "maybe", "reason": "?"}})),
    ("SCH-REF-REVIEW", "e81", lambda t: t.files["internal/cli/schema_agent_metadata/index.json"]["coverage"].update(
        unreviewed_skill_tools=11)),
    ("SCH-EXAMPLES", "cf", _all(_set(_tool("chat.recall_message"), examples=["dws chat message recall --yes"]),
                                lambda t: t.hint("selection-review.json")["tools"]["chat.recall_message"].update(
                                    examples=["dws chat message recall --yes"]))),
    ("SCH-EXAMPLES", "e81", _all(_set(_tool("doc.delete_document"), examples=["dws doc remove x"]),
                                 lambda t: t.hint("selection/doc.json")["tools"]["doc.delete_document"].update(
                                     examples=["dws doc remove x"]))),
    ("SCH-DESTRUCTIVE", "cf", _all(_set(_tool("chat.recall_message"), risk="medium"),
                                   lambda t: t.hint("destructive-safety.json")["tools"]["chat.recall_message"].update(
                                       risk="medium"))),
    ("SCH-DESTRUCTIVE", "e81", _all(_set(_tool("chat.recall_message"), risk="medium"),
                                    _set(_meta("chat", "chat.recall_message"), risk="medium"))),
    ("SCH-HIGH-RISK-CONFIRM", "cf", _set(_tool("doc.update_permission"), confirmation="not_required")),
    ("SCH-HIGH-RISK-CONFIRM", "e81", _set(_meta("chat", "chat.list_messages"), runtime_gate="typed_yes")),
    ("SCH-CONSTRAINTS", "cf", lambda t: t.tool("chat.send_personal_message")["constraints"].update(
        require_one_of=[["group", "channel"]])),
    ("SCH-CONSTRAINTS", "e81", lambda t: t.tool("chat.reply_personal_message")["constraints"].update(
        require_together=[["group"]])),
    ("SCH-NO-CREDENTIALS", "cf", _set(_tool("chat.list_messages"), description="header Bearer abc123 required")),
    ("SCH-NO-CREDENTIALS", "e81", lambda t: t.files["internal/cli/schema_mcp_metadata.json"]["tools"][
        "chat.recall_message"].update(endpoint="http://127.0.0.1:1/mcp")),
    ("SCH-NO-LISTTOOLS", "cf", _write_go),
    ("SCH-BINDINGS", "cf", lambda t: t.files["internal/cli/schema_parameter_bindings.json"]["bindings"][
        "chat.send_personal_message"].update(user="uid")),
    ("SCH-BINDINGS", "e81", lambda t: t.files["internal/cli/schema_parameter_bindings.json"]["corrections"][
        "chat.send_personal_message --user"].update(new_property="user")),
    ("SCH-NO-SELF-REPLAY", "cf", lambda t: t.hint("selection-review.json")["tools"]["chat.recall_message"].update(
        use_when=["另一个场景"])),
    ("SCH-NO-SELF-REPLAY", "e81", lambda t: t.hint("selection/chat.json")["tools"]["chat.recall_message"].update(
        avoid_when=["另一个场景"])),
    ("SCH-MCP-UNREVIEWED", "cf", _set(_tool("chat.list_messages"), reviewed=True)),
    ("SCH-HINT-PRECEDENCE", "cf", lambda t: t.hint("destructive-safety.json")["tools"].update(
        {"chat.send_personal_message": {"effect": "write", "risk": "high", "confirmation": "user_required"}})),
    ("SCH-HINT-PRECEDENCE", "e81", _set(_meta("doc", "doc.update_permission"), idempotency="idempotent")),
    ("SCH-SELECTION-REVIEW-COVERAGE", "cf", _all(
        _drop(lambda t: t.hint("selection-review.json")["tools"], "dev.legacy_publish"),
        lambda t: t.hint("selection-review.json")["coverage"].update(source_tools=6, eligible_tools=6,
                                                                     matched_tools=6))),
    ("SCH-SELECTION-REVIEW-COVERAGE", "e81", _drop(lambda t: t.hint("selection/dev.json")["tools"],
                                                   "dev.legacy_publish")),
    ("SCH-MCP-SNAPSHOT-PINNED", "cf", _set(lambda t: t.files["internal/cli/schema_mcp_service_review.json"],
                                           snapshot_source_hash="sha256:" + "5" * 64)),
    ("SCH-MCP-SNAPSHOT-PINNED", "e81", lambda t: t.files["internal/cli/schema_mcp_metadata.json"]["coverage"].update(
        matched_tools=9)),
    ("SCH-INTERFACE-FACTS-BOUNDED", "cf", _set(_tool("chat.recall_message"), effect_source="mcp-tools-list")),
    ("SCH-INTERFACE-FACTS-BOUNDED", "e81", lambda t: t.tool("chat.recall_message")["field_provenance"][
        "effect"].update(precedence="mcp_fallback")),
    ("SCH-HASHES", "cf", _bad_hash),
    ("SCH-HASHES", "e81", _bad_index_surface_hash),
    ("SCH-CHAT-IDENTITIES", "cf", _all(
        _set(_tool("chat.reply_personal_message"), interface_ref={"product_id": "chat", "rpc_name": "reply"}),
        lambda t: t.files["internal/cli/schema_mcp_metadata.json"]["tools"]["chat.reply_personal_message"].update(
            interface_ref={"product_id": "chat", "rpc_name": "reply"}))),
    ("SCH-RETIRED-REMOVED", "cf", _all(_set(_tool("chat.send_personal_message"), aliases=["chat file upload"]),
                                       _set(_surface("chat.send_personal_message"), aliases=["chat file upload"]))),
    ("SCH-RETIRED-REMOVED", "e81", _all(_set(_tool("chat.send_personal_message"), aliases=["chat file upload"]),
                                        _set(_surface("chat.send_personal_message"), aliases=["chat file upload"]))),
]


def test_cases_cover_every_data_gate() -> None:
    assert {gate for gate, _, _ in CASES} == DATA_GATES


@pytest.mark.parametrize("generation", ["cf", "e81"])
def test_synthetic_release_passes_every_data_gate(pytester, run_contract, generation) -> None:
    run = run_contract("--dws-source", tree(pytester, generation), *SEL)
    assert run.ret == 0, run.output()
    statuses = {g: run.status(g) for g in DATA_GATES}
    # Nothing judged is not applicable (issue 34): no Go code to scan; at e81 no MCP-derived summary and no pin.
    idle = {"SCH-NO-LISTTOOLS"} | ({"SCH-MCP-UNREVIEWED"} if generation == "e81" else set())
    assert statuses == {g: "not_applicable" if g in idle else "passed" for g in DATA_GATES}


@pytest.mark.parametrize(("gate", "generation", "mutate"), CASES, ids=[f"{g}-{layout}" for g, layout, _ in CASES])
def test_violation_fails_exactly_its_gate(pytester, run_contract, gate, generation, mutate) -> None:
    run = run_contract("--dws-source", tree(pytester, generation, mutate, rehash=gate != "SCH-HASHES"), *SEL)
    assert run.failing() == {gate}, run.output()
    assert run.ret == 1
    assert "Traceback" not in run.output()


def test_counts_pinned_by_expectations(pytester, run_contract) -> None:
    expect = pytester.makefile(".toml", expect="[counts]\ntools = 8\nproducts = 3\n")
    run = run_contract("--dws-source", tree(pytester, "cf"), "--dws-expect", expect, *SEL)
    assert run.failing() == {"SCH-COUNTS"}
    assert run.report["observed"]["tools"] == 7


def test_totals_pinned_by_expectations(pytester, run_contract) -> None:
    expect = pytester.makefile(".toml", expect="[counts]\ndestructive = 3\nexamples = 7\n")
    run = run_contract("--dws-source", tree(pytester, "e81"), "--dws-expect", expect, *SEL)
    assert run.failing() == {"SCH-DESTRUCTIVE"}
    assert run.gates["SCH-DESTRUCTIVE"]["failed_items"] == ["totals"]


def test_failure_names_the_tool_and_shows_the_diff(pytester, run_contract) -> None:
    mutate = dict(((g, layout), m) for g, layout, m in CASES)[("SCH-HINT-PRECEDENCE", "cf")]
    run = run_contract("--dws-source", tree(pytester, "cf", mutate), *SEL)
    assert run.gates["SCH-HINT-PRECEDENCE"]["failed_items"] == ["chat.send_personal_message"]
    assert "values_changed: root['risk']" in run.output()


def test_go_tree_without_list_tools_passes(pytester, run_contract) -> None:
    def clean_go(t: synth.Tree) -> None:
        t.files["internal/cli/schema.go"] = b"package cli\n\nfunc schema() {}\n"

    run = run_contract("--dws-source", tree(pytester, "cf", clean_go), *SEL)
    assert run.status("SCH-NO-LISTTOOLS") == "passed"


# -- baseline ---------------------------------------------------------------------------------------------
def _baseline(pytester: pytest.Pytester, entries: dict[str, str]) -> Path:
    body = "[expected_failures]\n" + "".join(f'"{k}" = "{v}"\n' for k, v in entries.items())
    return pytester.makefile(".toml", baseline=body)


def test_baseline_turns_a_known_deviation_into_xfail(pytester, run_contract) -> None:
    mutate = dict(((g, layout), m) for g, layout, m in CASES)[("SCH-HINT-PRECEDENCE", "cf")]
    base = _baseline(pytester, {"SCH-HINT-PRECEDENCE[chat.send_personal_message]": "known upstream deviation"})
    run = run_contract("--dws-source", tree(pytester, "cf", mutate), "--dws-baseline", base, *SEL)
    assert run.ret == 0, run.output()
    assert run.status("SCH-HINT-PRECEDENCE") == "xfailed"
    assert run.report["baseline_problems"] == []


def test_stale_baseline_entry_fails_the_run(pytester, run_contract) -> None:
    base = _baseline(pytester, {"SCH-DESTRUCTIVE[chat.recall_message]": "was broken once"})
    run = run_contract("--dws-source", tree(pytester, "cf"), "--dws-baseline", base, *SEL)
    assert run.ret == 1
    assert any("stale" in p and "SCH-DESTRUCTIVE[chat.recall_message]" in p for p in run.report["baseline_problems"])


def test_unknown_baseline_entry_fails_the_run(pytester, run_contract) -> None:
    base = _baseline(pytester, {"SCH-DESTRUCTIVE[chat.no_such_tool]": "typo"})
    run = run_contract("--dws-source", tree(pytester, "cf"), "--dws-baseline", base, *SEL)
    assert run.ret == 1
    assert any("unknown" in p for p in run.report["baseline_problems"])


# -- one catalog file -------------------------------------------------------------------------------------
def test_single_catalog_file_judges_the_catalog_alone(pytester, run_contract) -> None:
    path = synth.write_catalog_file(synth.build("cf"), pytester.path / "catalog.json")
    run = run_contract("--dws-catalog", path, *SEL)
    assert run.ret == 0, run.output()
    assert run.status("SCH-DESTRUCTIVE") == "passed"
    assert run.status("SCH-HASHES") == "passed"
    assert run.status("SCH-CANONICAL-SET") == "not_applicable"
    assert any("--dws-source" in n for n in run.gates["SCH-BINDINGS"]["notes"])


def test_single_catalog_file_violation(pytester, run_contract) -> None:
    t = synth.build("cf")
    t.tool("chat.recall_message")["risk"] = "medium"
    path = synth.write_catalog_file(t, pytester.path / "catalog.json")
    run = run_contract("--dws-catalog", path, *SEL)
    assert run.failing() == {"SCH-DESTRUCTIVE"}


def test_e81_envelope_file_loads_its_shards(pytester, run_contract) -> None:
    root = tree(pytester, "e81")
    run = run_contract("--dws-catalog", root / "internal/cli/schema_catalog/catalog.json", *SEL)
    assert run.ret == 0, run.output()
    assert run.report["observed"]["tools"] == 7


def _empty(field: str, generation: str) -> Callable[[synth.Tree], None]:
    """An empty selection list on one tool, in the catalog and in the reviewed selection file it comes from (so
    only the emptiness is wrong, not the agreement SCH-NO-SELF-REPLAY judges)."""
    key = "chat.recall_message"

    def mutate(t: synth.Tree) -> None:
        t.tool(key)[field] = []
        sel = t.hint("selection-review.json" if generation == "cf" else "selection/chat.json")
        sel["tools"][key][field] = []

    return mutate


@pytest.mark.parametrize("field", ["use_when", "avoid_when"])
@pytest.mark.parametrize("generation", ["cf", "e81"])
def test_an_empty_selection_field_fails_in_every_layout(pytester, run_contract, generation, field) -> None:
    """D2 §5 "每个公开工具都必须固定 use_when、avoid_when": an empty list fixes nothing, in the cf and the e81 layout
    alike (issue 34: it passed everywhere but cf)."""
    run = run_contract("--dws-source", tree(pytester, generation, _empty(field, generation)), *SEL)
    assert run.failing() == {"SCH-AGENT-FIELDS"}, run.output()
    assert f"{field} is empty" in run.output()


_BINDINGS = "internal/cli/schema_parameter_bindings.json"
#: SCH-BINDINGS, catalog -> bindings (issue 43; D2 §4 "不得从上一版 Catalog 自动补回"): the catalog keeps a parameter's
#: non-default property while the bindings file lost its binding, or says (provenance) the file binds or excludes a
#: parameter the file does not hold. Named by path: each direction and provenance its own case.
CATALOG_TO_BINDINGS = {
    "cf-unbound-property": ("cf", _drop(lambda t: t.files[_BINDINGS]["bindings"]["chat.send_personal_message"],
                                        "group")),
    "e81-unbound-property": ("e81", _drop(lambda t: t.files[_BINDINGS]["bindings"]["chat.send_personal_message"],
                                          "group")),
    "e81-provenance-binding": ("e81", lambda t: t.tool("chat.list_messages")["parameters"]["format"].update(
        field_provenance={"property": {"source": "versioned_parameter_binding", "value": "format"}})),
    "e81-provenance-exclusion": ("e81", lambda t: t.tool("chat.list_messages")["parameters"]["format"].update(
        field_provenance={"property": {"source": "reviewed_mapping_exclusion", "value": ""}})),
}


@pytest.mark.parametrize("path", sorted(CATALOG_TO_BINDINGS))
def test_bindings_are_judged_from_the_catalog_side(pytester, run_contract, path: str) -> None:
    generation, mutate = CATALOG_TO_BINDINGS[path]
    run = run_contract("--dws-source", tree(pytester, generation, mutate), *SEL)
    assert run.failing() == {"SCH-BINDINGS"}, run.output()
    assert "bindings file" in run.output() and "Traceback" not in run.output()


_DISCOVER = (b"package transport\n\nfunc DiscoverTools(ctx context.Context) ([]Tool, error) {\n"
             b"\treturn client.ListTools(ctx)\n}\n\nfunc (c *Client) ListTools(ctx context.Context) error {\n"
             b"\treturn nil\n}\n")
#: SCH-NO-LISTTOOLS[src] (issue 43, D2 §7): runtime discovery through a wrapper, one level or two, called from
#: internal/app; a wrapper nobody in internal/app or internal/cli calls, and a test that calls ListTools, pass.
LISTTOOLS_PATHS = {
    "wrapper": ({"internal/transport/discover.go": _DISCOVER,
                 "internal/app/root.go": b"package app\n\nfunc boot() {\n\t_, _ = transport.DiscoverTools(ctx)\n}\n"},
                True),
    "wrapper-of-wrapper": ({"internal/transport/discover.go": _DISCOVER,
                            "internal/transport/warm.go": b"package transport\n\nfunc Warm() {\n"
                                                          b"\t_, _ = DiscoverTools(nil)\n}\n",
                            "internal/cli/root.go": b"package cli\n\nfunc init() {\n\ttransport.Warm()\n}\n"}, True),
    "wrapper-unused": ({"internal/transport/discover.go": _DISCOVER,
                        "internal/app/root.go": b"package app\n\nfunc boot() {}\n"}, False),
    "test-only": ({"internal/app/root_test.go": b"package app\n\nfunc TestX(t *testing.T) {\n"
                                                b"\t_, _ = client.ListTools(ctx)\n}\n",
                   "internal/app/root.go": b"package app\n\nfunc boot() {}\n"}, False),
}


@pytest.mark.parametrize("path", sorted(LISTTOOLS_PATHS))
def test_list_tools_through_a_wrapper(pytester, run_contract, path: str) -> None:
    files, fails = LISTTOOLS_PATHS[path]
    run = run_contract("--dws-source", tree(pytester, "cf", lambda t: t.files.update(files)), *SEL)
    assert run.status("SCH-NO-LISTTOOLS") == ("failed" if fails else "passed"), run.output()[-2000:]
    if fails:
        assert "reaches ListTools" in run.output()
