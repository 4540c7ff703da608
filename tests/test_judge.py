"""The judge (pytest_dws.core.outcome) on recorded outcomes: one test per class, plus the evidence it reports.

Outcomes are built as plain data (exit code, the two streams, transcript records as dicts), the way an
evaluation runner would load them from disk, so the judge is exercised without pytest or processes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.core.outcome import CLASSES, FAILURE_CLASSES, Outcome, first_json, judge, read_jsonl, wire_facts

CID = "cidJUDGEa000000001"
CID_B = "cidJUDGEb000000002"


def call(tool: str, args: dict[str, Any] | None = None, *, product: str = "chat", status: int = 200,
         outcome: str = "ok") -> dict[str, Any]:
    """One transcript record as fake_mcp's Record.to_dict() writes it (only the fields the judge reads)."""
    return {"rpc_method": "tools/call", "product": product, "tool": tool, "arguments": args or {},
            "status": status, "outcome": outcome}


def error(**fields: Any) -> str:
    code = {"validation": 3, "api": 1, "auth": 2, "internal": 5}[fields.get("category", "api")]
    return json.dumps({"error": {"code": code, "category": "api", "message": "m", **fields}})


def test_clean_success_with_the_target_reached() -> None:
    out = Outcome(0, json.dumps({"complete": True, "failedCount": 0, "failures": []}), "",
                  (call("search_groups", {"keyword": "星河组"}, product="im"),
                   call("get_group_members", {"openconversation_id": CID})))
    verdict = judge(out)
    assert verdict.klass == "clean"
    assert not verdict.is_failure
    assert verdict.evidence["targets"] == [CID]
    assert (verdict.evidence["search_calls"], verdict.evidence["business_calls"]) == (1, 1)


def test_expected_safety_stop_is_not_a_failure() -> None:
    out = Outcome(3, "", error(category="validation", reason="resolution_ambiguous", origin="client",
                               stage="target_resolution", execution_started=False),
                  (call("search_groups", {"keyword": "星河组"}, product="im"),))
    verdict = judge(out)
    assert verdict.klass == "expected_resolution_stop"
    assert verdict.is_failure is False
    assert verdict.evidence["business_calls"] == 0
    assert verdict.evidence["rule"] == "reason:resolution_ambiguous"


@pytest.mark.parametrize("reason", ["unknown_flag", "flag_conflict", "parameter_conflict", "target_type_mismatch",
                                    "missing_target", "invalid_request"])
def test_request_contract_errors(reason: str) -> None:
    verdict = judge(Outcome(3, "", error(category="validation", reason=reason)))
    assert verdict.klass == "request_contract_error"
    assert verdict.is_failure


def test_untyped_validation_error_is_a_request_contract_error() -> None:
    verdict = judge(Outcome(3, "", error(category="validation")))
    assert (verdict.klass, verdict.evidence["rule"]) == ("request_contract_error", "category:validation")


@pytest.mark.parametrize("reason", ["unknown_command", "confirmation_required", "not_authenticated"])
def test_agent_errors(reason: str) -> None:
    verdict = judge(Outcome(5, "", error(category="internal", reason=reason)))
    assert verdict.klass == "agent_error"


@pytest.mark.parametrize("reason", ["business_error", "mcp_tool_error", "permission_denied", "resource_not_found"])
def test_business_errors(reason: str) -> None:
    verdict = judge(Outcome(1, "", error(reason=reason, trace_id="trace-1"),
                            (call("get_group_members", {"openconversation_id": CID}),)))
    assert verdict.klass == "business_error"
    assert verdict.evidence["trace_id"] == "trace-1"


@pytest.mark.parametrize("reason", ["backend_dependency_unavailable", "http_503", "http_429", "connection_dropped"])
def test_infrastructure_errors(reason: str) -> None:
    records = (call("list_all_conversations", {"limit": 100}, product="im", outcome="fault:business"),
               call("list_all_conversations", {"limit": 100}, product="im", outcome="fault:business"))
    verdict = judge(Outcome(1, "", error(reason=reason, origin="mcp_gateway", retryable=True), records))
    assert verdict.klass == "infrastructure_error"
    assert verdict.evidence["retries"] == [{"tool": "list_all_conversations", "attempts": 2, "recovered": False}]


def test_recovered_infrastructure_error_is_a_retried_read_that_succeeded() -> None:
    records = (call("get_group_members", {"cursor": "0", "openconversation_id": CID}, status=503,
                    outcome="fault:http"),
               call("get_group_members", {"cursor": "0", "openconversation_id": CID}))
    verdict = judge(Outcome(0, json.dumps({"complete": True, "failedCount": 0}), "", records))
    assert verdict.klass == "recovered_infrastructure_error"
    assert not verdict.is_failure
    assert verdict.evidence["retries"] == [{"tool": "get_group_members", "attempts": 2, "recovered": True}]


def test_partial_result_is_classified_by_its_failure_ledger() -> None:
    result = {"complete": False, "partial": True, "failedCount": 1,
              "failures": [{"stage": "read", "page": 2, "reason": "http_503"}]}
    records = (call("get_group_members", {"cursor": "0", "openconversation_id": CID}),
               call("get_group_members", {"cursor": "2", "openconversation_id": CID}, status=503,
                    outcome="fault:http"))
    verdict = judge(Outcome(0, json.dumps(result), "", records))
    assert (verdict.klass, verdict.evidence["rule"]) == ("infrastructure_error", "partial-result")
    assert verdict.evidence["reported_failures"] is True


def test_exit_zero_with_an_unrecovered_fault_is_a_hidden_failure() -> None:
    records = (call("get_group_members", {"cursor": "2", "openconversation_id": CID}, status=503,
                    outcome="fault:http"),)
    verdict = judge(Outcome(0, json.dumps({"complete": True, "failedCount": 0, "failures": []}), "", records))
    assert verdict.klass == "infrastructure_error"
    assert verdict.evidence["false_success"] is True


def test_exact_payload_override_is_not_a_fault() -> None:
    records = (call("search_groups", {"keyword": "星河组"}, product="im", outcome="fault:payload"),)
    assert judge(Outcome(0, "{}", "", records)).klass == "clean"


def test_wire_evidence_names_in_ids_searched_cids_and_duplicate_writes() -> None:
    facts = wire_facts([
        call("search_groups", {"keyword": CID}, product="im"),
        call("search_messages", {"openConversationIds": [CID, "星河组"]}, product="im"),
        call("update_group_name", {"openconversation_id": CID_B, "group_name": "n"}, status=503, outcome="fault:http"),
        call("update_group_name", {"openconversation_id": CID_B, "group_name": "n"}),
    ])
    assert facts["names_in_id"] == ["星河组"]
    assert facts["cids_searched"] == [CID]
    assert (facts["writes"], facts["duplicate_writes"]) == (2, 1)
    assert facts["write_targets"] == [CID_B]


def test_misleading_recovery_advice_is_evidence() -> None:
    verdict = judge(Outcome(1, "", error(reason="backend_dependency_unavailable", hint="请检查参数",
                                         actions=["dws auth whoami"])))
    assert verdict.evidence["misleading_recovery"] is True
    verdict = judge(Outcome(1, "", error(reason="backend_dependency_unavailable", hint="请求参数无需修改；请稍后重试",
                                         actions=["使用相同参数重试一次"])))
    assert verdict.evidence["misleading_recovery"] is False


def test_non_json_error_output_and_no_exit_are_never_clean() -> None:
    broken = judge(Outcome(1, "", "panic: something\n"))
    assert (broken.klass, broken.evidence["rule"]) == ("request_contract_error", "no-error-envelope")
    hung = judge(Outcome(None, "", "", timed_out=True))
    assert (hung.klass, hung.evidence["rule"]) == ("infrastructure_error", "no-exit")


def test_first_json_ignores_trailing_lines() -> None:
    assert first_json('{"error": {"reason": "x"}}\nRECOVERY_EVENT_ID=evt_1\n') == {"error": {"reason": "x"}}
    assert first_json("no json") is None


def test_recorded_run_from_files(tmp_path: Path) -> None:
    """Usable outside pytest: streams and a JSONL transcript as fake_mcp writes it (Transcript.dump_jsonl)."""
    from fake_mcp import Record, Transcript

    transcript = Transcript()
    for seq, status, outcome in ((1, 503, "fault:http"), (2, 200, "ok")):
        transcript.add(Record(seq, 0.0, "im", "/mcp/im", "POST", "tools/call", 3, "list_all_conversations",
                              {"limit": 100}, {}, status, outcome))
    transcript.dump_jsonl(tmp_path / "calls.jsonl")
    (tmp_path / "out.json").write_text(json.dumps({"complete": True, "failedCount": 0}), encoding="utf-8")
    outcome = Outcome.from_files(exit_code=0, stdout=tmp_path / "out.json", transcript=tmp_path / "calls.jsonl")
    assert judge(outcome).klass == "recovered_infrastructure_error"


def test_bad_jsonl_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text('{"tool": "x"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"calls\.jsonl: line 2: not JSON"):
        read_jsonl(path)


def test_every_class_is_reachable_and_failures_are_a_subset() -> None:
    assert set(FAILURE_CLASSES) < set(CLASSES)
    assert {"expected_resolution_stop", "recovered_infrastructure_error", "clean"}.isdisjoint(FAILURE_CLASSES)


def test_judge_and_runner_read_streams_with_the_same_first_json() -> None:
    """docs/wire.md §4: ONE reader (pytest_dws.core.jsondoc) for recorded and live runs: the first document that starts
    the stream or a line; text inside a line is never taken for JSON; a broken first candidate is skipped."""
    from pytest_dws import launch as target
    from pytest_dws.core import jsondoc

    assert first_json is jsondoc.first_json is target.first_json
    assert first_json('  \n{"error": {"code": 3}}\nRECOVERY_EVENT_ID=evt_1\n') == {"error": {"code": 3}}
    assert first_json('warning: slow\n{"a": 1}\n{"b": 2}') == {"a": 1}
    assert first_json('[UNCLASSIFIED] boom {"x": 1}') is None
    assert first_json('{"truncated": \n{"b": 2}') == {"b": 2}
    assert first_json("") is None


def test_a_case_the_run_did_not_judge_is_neither_accepted_nor_stale() -> None:
    """A costly case (help defaults) is judged only on sampled tools: its baseline entry is stale only when the
    run looked at it and it passed (pytest_dws.verdict.cases.judging)."""
    from pytest_dws.verdict.baseline import Baseline
    from pytest_dws.verdict.cases import CaseFailures
    from pytest_dws.verdict.fold import SubjectRun, fold

    base = Baseline(entries={"G[t1/required]": "accepted", "G[t1/defaults]": "accepted"})
    failing = CaseFailures({"required": "exit 0 without --x"})
    unsampled = fold("G", [SubjectRun("t1", failure=failing, judged=frozenset({"required"}))], base)
    assert [r.outcome for r in unsampled.results] == ["xfailed"] and unsampled.matched == {"G[t1/required]"}
    sampled = fold("G", [SubjectRun("t1", failure=failing, judged=frozenset({"required", "defaults"}))], base)
    assert [r.outcome for r in sampled.results] == ["failed"]  # defaults was judged and passes: stale
    passing = fold("G", [SubjectRun("t1", judged=frozenset())], base)
    assert [r.outcome for r in passing.results] == ["passed"] and not passing.matched


def test_a_case_the_gate_knows_but_did_not_judge_is_not_a_misspelling() -> None:
    """A case the gate declares it could not judge (pytest_dws.verdict.cases.not_judged: Help outside the sample,
    a world-dependent run) leaves its entry unevaluated; a label the gate does not know is a misspelling."""
    from pytest_dws.verdict.baseline import Baseline
    from pytest_dws.verdict.cases import CaseFailures
    from pytest_dws.verdict.fold import SubjectRun, fold

    base = Baseline(entries={"G[t1/without --x]": "accepted", "G[t1/default --y]": "accepted",
                             "G[t1/defaults]": "a per-tool case of an older suite"})
    failing = CaseFailures({"without --x": "exit 0 without --x"})
    v = fold("G", [SubjectRun("t1", failure=failing, judged=frozenset({"without --x"}),
                              unjudged=frozenset({"default --y"}))], base)
    assert [r.outcome for r in v.results] == ["xfailed"] and v.matched == {"G[t1/without --x]"}
    assert set(v.unknown) == {"G[t1/defaults]"} and v.unknown["G[t1/defaults]"][0] == "default --y"
