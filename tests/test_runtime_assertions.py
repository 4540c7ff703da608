"""The D1 runtime assertion helpers, on synthetic invocations: each passes the conforming case and fails, with a
readable message, on the violation it exists for."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fake_mcp import Record
from pytest_dws.assertions import (
    ABSENT,
    assert_alias_equivalent,
    assert_calls,
    assert_cid_never_searched,
    assert_complete_is_truthful,
    assert_conflict_rejected,
    assert_error_classified,
    assert_name_never_in_id_args,
    assert_no_business_calls,
    assert_no_list_tools,
    assert_no_misleading_hint,
    assert_not_called,
    assert_reaches_target,
    looks_like_cid,
)
from pytest_dws.launch import Invocation

CID = "cidTESTassert000001"
_seq = iter(range(1, 10_000))


def rec(tool: str | None, args: dict[str, Any] | None = None, product: str = "im", method: str = "tools/call"
        ) -> Record:
    return Record(next(_seq), 0.0, product, f"/mcp/{product}", "POST", method, 3, tool, args, {}, 200, "ok")


def inv(exit_code: int = 0, stdout: Any = "", error: dict[str, Any] | None = None, calls: list[Record] | None = None
        ) -> Invocation:
    out = stdout if isinstance(stdout, str) else json.dumps(stdout)
    err = json.dumps({"error": error}) + "\nRECOVERY_EVENT_ID=evt_x\n" if error is not None else ""
    return Invocation(["dws"], exit_code, out, err, transcript=list(calls or []))


BACKEND = {"code": 1, "category": "api", "reason": "backend_dependency_unavailable", "origin": "mcp_gateway",
           "stage": "tool_metadata_lookup", "hint": "请求参数无需修改；请使用相同参数稍后重试。",
           "actions": ["使用相同参数重试一次"]}


def test_error_classified_passes_and_names_each_wrong_field() -> None:
    good = inv(1, error=BACKEND)
    assert_error_classified(good, exit_code=1, category="api", reason="backend_dependency_unavailable",
                            origin={"mcp_gateway", "dingtalk_api"}, execution_started=ABSENT, no_misleading_hint=True)
    with pytest.raises(AssertionError, match=r"\.error\.stage: expected 'backend_dependency', got 'tool_metadata"):
        assert_error_classified(good, stage="backend_dependency")
    with pytest.raises(AssertionError, match="execution_started"):
        assert_error_classified(inv(1, error={**BACKEND, "execution_started": True}), execution_started=ABSENT)
    with pytest.raises(AssertionError, match="no JSON error object"):
        assert_error_classified(inv(1, stdout="boom"), reason="x")
    with pytest.raises(AssertionError, match="expected exit 3, got 1"):
        assert_error_classified(good, exit_code=3)
    amb = inv(3, error={"code": 3, "reason": "resolution_ambiguous", "details": {"type": "resolution"}})
    assert_error_classified(amb, details={"type": "resolution"}, origin={ABSENT, "unknown"})
    with pytest.raises(AssertionError, match=r"details\.subtype"):
        assert_error_classified(amb, details={"subtype": "ambiguous"})


def test_misleading_hint() -> None:
    assert_no_misleading_hint(inv(1, error=BACKEND))  # "请求参数无需修改" is fine
    for bad in ({"hint": "请检查参数后重试"}, {"actions": ["dws auth whoami"]}, {"hint": "Check required parameters"}):
        with pytest.raises(AssertionError, match="parameters or authentication"):
            assert_no_misleading_hint(inv(1, error={**BACKEND, **bad}))
    with pytest.raises(AssertionError, match="no JSON error"):
        assert_no_misleading_hint(inv(0, stdout="{}"))


def test_business_calls_and_call_sequences() -> None:
    search = rec("search_groups", {"keyword": "项目群", "limit": 10, "cursor": "0"})
    members = rec("get_group_members", {"openconversation_id": CID, "cursor": "0"}, "chat")
    assert_no_business_calls(inv(3, calls=[search]))
    with pytest.raises(AssertionError, match="1 business call"):
        assert_no_business_calls(inv(0, calls=[search, members]))
    run = inv(0, calls=[search, members])
    assert_calls(run, [("search_groups", {"keyword": "项目群"}), ("get_group_members", None)])
    with pytest.raises(AssertionError, match="expected 1 backend call"):
        assert_calls(run, [("get_group_members", None)])
    with pytest.raises(AssertionError, match="argument 'limit' expected 20"):
        assert_calls(run, [("search_groups", {"limit": 20}), ("get_group_members", None)])
    assert_reaches_target(run, "get_group_members", "openconversation_id", [CID])
    with pytest.raises(AssertionError, match="wrong target"):
        assert_reaches_target(run, "get_group_members", "openconversation_id", ["cidTESTother000001"])
    with pytest.raises(AssertionError, match="never sent"):
        assert_reaches_target(run, "list_group_bots", "openConversationId", [CID])
    assert_not_called(inv(0, calls=[members]), "search_groups")
    with pytest.raises(AssertionError, match="expected never"):
        assert_not_called(run, "search_groups")


def test_name_and_cid_rules_look_everywhere() -> None:
    ok = inv(0, calls=[rec("search_messages", {"openConversationIds": [CID], "keyword": "项目群"})])
    assert_name_never_in_id_args(ok, {"项目群"}, {"openConversationIds"})
    nested = inv(0, calls=[rec("x", {"filter": [{"openCid": " 项目群 "}]})])
    with pytest.raises(AssertionError, match=r"\$\.filter\[0\]\.openCid = ' 项目群 '"):
        assert_name_never_in_id_args(nested, {"项目群"}, {"openCid"})
    listed = inv(0, calls=[rec("search_messages", {"openConversationIds": [CID, "项目群"]})])
    with pytest.raises(AssertionError, match=r"openConversationIds\[1\]"):
        assert_name_never_in_id_args(listed, {"项目群"}, {"openConversationIds"})
    assert_cid_never_searched(inv(0, calls=[rec("search_groups", {"keyword": "cid-test-a"})]))  # 10 chars: a name
    with pytest.raises(AssertionError, match="CID was sent to search_groups"):
        assert_cid_never_searched(inv(0, calls=[rec("search_groups", {"keyword": CID})]))
    assert looks_like_cid("CIDabcdefghijk") and not looks_like_cid("cid-test-a") and not looks_like_cid(None)


def test_no_list_tools() -> None:
    assert_no_list_tools(inv(0, calls=[rec("search_groups", {})]))
    with pytest.raises(AssertionError, match="tools/list on /mcp/chat"):
        assert_no_list_tools(inv(0, calls=[rec(None, None, "chat", "tools/list")]))


def test_alias_equivalence() -> None:
    def search(keyword: str) -> Invocation:
        return inv(0, "{}", calls=[rec("search_messages", {"keyword": keyword, "limit": 100})])

    assert_alias_equivalent(search("k"), search("k"))
    with pytest.raises(AssertionError, match="another invocation"):
        assert_alias_equivalent(search("other"), search("k"))
    preview = {"arguments": {"group_name": "N", "openconversation_id": CID}, "dry_run": True, "executed": False,
               "tool": "update_group_name"}
    assert_alias_equivalent(inv(0, preview), inv(0, preview))
    with pytest.raises(AssertionError, match="dry-run preview"):
        assert_alias_equivalent(inv(0, {**preview, "tool": "x"}), inv(0, preview))
    with pytest.raises(AssertionError, match="alias spelling failed"):
        assert_alias_equivalent(inv(3, error={"code": 3, "reason": "unknown_flag"}), search("k"))


def test_conflict_rejected() -> None:
    assert_conflict_rejected(inv(3, error={"code": 3, "category": "validation"}))
    with pytest.raises(AssertionError, match="request"):
        assert_conflict_rejected(inv(3, error={"code": 3, "category": "validation"}, calls=[rec("search_messages")]))
    with pytest.raises(AssertionError, match="exit 0"):
        assert_conflict_rejected(inv(0, "{}"))


def test_complete_is_truthful() -> None:
    assert_complete_is_truthful({"complete": True, "partial": False, "hasMore": False, "failedCount": 0,
                                 "failures": []}, complete=True)
    assert_complete_is_truthful({"complete": False, "partial": True, "failedCount": 1, "failures": [{"page": 2}]})
    with pytest.raises(AssertionError, match="complete is true but failures"):
        assert_complete_is_truthful({"complete": True, "failedCount": 1, "failures": [{"page": 2}]})
    # issue 35 rule 6: flags other than `complete` are judged only where they contradict it
    assert_complete_is_truthful({"complete": False, "partial": True, "failedCount": 0, "failures": [{}]})
    assert_complete_is_truthful({"complete": False, "failures": [{"stage": "page"}]})  # no partial, no count
    with pytest.raises(AssertionError, match=r"complete is true but \.hasMore"):
        assert_complete_is_truthful({"complete": True, "hasMore": True})
    with pytest.raises(AssertionError, match="expected False"):
        assert_complete_is_truthful({"complete": True}, complete=False)
    with pytest.raises(AssertionError, match="no JSON result"):
        assert_complete_is_truthful(None)
