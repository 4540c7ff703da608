"""Fast smoke tests of the reference `dws` (fixtures/reference) against a tiny in-test fake MCP server.

The fake here is deliberately minimal and independent of fake_mcp/: it scripts replies per tool and records
every request, so these tests pin the reference's wire behaviour on their own. The mutant probes at the end
check that every registered mutant really changes observable behaviour (the gate-level mutation matrix lives
with the runtime gates).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.refdws_harness import (
    BACKEND_DETAIL,
    CID_A,
    CID_B,
    MEMBERS,
    MESSAGES,
    NAME_A,
    NETWORK,
    SEARCH,
    Fake,
    dws,
)

# ------------------------------------------------------------------ surface / help / parse


def test_help_lists_canonical_flags_only() -> None:
    search = dws(None, "chat", "+search-msg", "--help")
    assert search.rc == 0 and "--query" in search.stdout
    for hidden in ("--text ", "--text-query", "--keyword", "--token", "--conversation-id"):
        assert hidden not in search.stdout
    msgs = dws(None, "chat", "+chat-messages", "--help").stdout
    assert "--limit" in msgs and "--page-size" not in msgs and "--open-conversation-id" not in msgs
    members = dws(None, "chat", "+chat-members-list", "--help").stdout
    assert "--chat-query" in members and "--chat " not in members and "--open-conversation-id" not in members
    chat = dws(None, "chat", "--help").stdout
    assert "+chat-update" in chat and "+chat-rename" not in chat
    shown = dws(None, "chat", "+search-msg", "--help", mutant="alias-in-help").stdout
    assert "--text-query" in shown


def test_unknown_flag_beats_help_and_unknown_path_help_is_root() -> None:
    r = dws(None, "chat", "+search-msg", "--bogus", "x", "--help")
    assert r.rc == 3 and r.err["reason"] == "unknown_flag" and r.stdout == ""
    assert "query" in r.err["available_flags"] and "text" not in r.err["available_flags"]  # bare names, as e81
    root = dws(None, "auth", "whoami", "--help")
    assert root.rc == 0 and root.stdout.startswith("DingTalk Workspace CLI")
    who = dws(None, "auth", "whoami")
    assert who.rc == 5 and who.err["code"] == 5 and "whoami" not in json.dumps(who.err.get("actions", []))


def test_errors_are_labelled_text_on_stderr_with_table_format(fake: Fake) -> None:
    """As the real binary (docs/wire.md §8): human text on stderr, the exit code unchanged, nothing on stdout."""
    r = dws(fake, "--format", "table", "chat", "+search-msg", "--bogus", "1")
    assert r.rc == 3 and r.stdout == ""
    assert r.stderr.startswith("● Error: [VALIDATION]")


def test_no_token_fails_exit_5_before_any_request(fake: Fake) -> None:
    r = dws(fake, "chat", "+chat-members-list", "--group", NAME_A, token=False)
    assert r.rc == 5 and r.err["reason"] == "not_authenticated" and fake.records == []
    assert set(r.err["actions"]) <= {"dws auth status", "dws profile list", "dws auth login"}


# ------------------------------------------------------------------ wire


def test_conversation_list_wire_and_ledger(fake: Fake) -> None:
    r = dws(fake, "--format", "json", "chat", "+conversation-list", "--page-all")
    assert r.rc == 0, r.stderr
    assert [(c["product"], c["tool"], c["arguments"]) for c in fake.calls()] == [
        ("im", "list_all_conversations", {"limit": 100})]
    assert all(rec["method"] == "tools/call" for rec in fake.records)
    h = fake.records[0]["headers"]
    assert h["accept"] == "application/json" and h["authorization"] == "Bearer t"
    assert h["x-user-access-token"] == "t" and "mcp-session-id" not in h and h["x-cli-source"] == "dws-cli"
    assert r.out["complete"] is True and r.out["count"] == 1 and r.out["failedCount"] == 0
    assert r.out["partial"] is False and r.out["contractVersion"] == "im.conversation-list.v1"


def test_untrusted_loopback_drops_auth_headers(fake: Fake) -> None:
    assert dws(fake, "chat", "+conversation-list", trusted=False).rc == 0
    assert "authorization" not in fake.records[0]["headers"]
    assert "x-user-access-token" not in fake.records[0]["headers"]


def test_conversation_list_pages_and_partial(fake: Fake) -> None:
    page = {"result": {"hasMore": True, "nextCursor": "2", "conversations": [{"openConversationId": CID_A}]}}
    fake.on("list_all_conversations", {"payload": page}, {"payload": NETWORK}, {"payload": NETWORK})
    r = dws(fake, "chat", "+conversation-list", "--page-all")
    assert r.rc == 0, r.stderr
    assert fake.calls()[1]["arguments"] == {"limit": 100, "cursor": 2}
    assert r.out["complete"] is False and r.out["partial"] is True and r.out["failedCount"] == 1
    assert r.out["count"] == 1 and r.out["failures"][0]["stage"] == "conversation-page"


# ------------------------------------------------------------------ classifier

CLASSIFY = [
    (NETWORK, "backend_dependency_unavailable", "mcp_gateway", "tool_metadata_lookup"),
    ({**NETWORK, "technical_detail": "StatusCode.UNAVAILABLE"}, "backend_dependency_unavailable",
     "mcp_gateway", "backend_dependency"),
    ({"success": False, "code": "PARAM_ERROR", "errorMsg": "openCid or cid is required"}, "invalid_request",
     "dingtalk_api", "tool_validation"),
    ({"success": False, "errorMsg": "openCid or cid is required"}, "invalid_request", "dingtalk_api",
     "tool_validation"),
    ({"success": False, "code": "PARAM_ERROR", "technical_detail": BACKEND_DETAIL}, "invalid_request",
     "dingtalk_api", "tool_validation"),
    ({"success": False, "code": "PERMISSION_DENIED"}, "permission_denied", "dingtalk_api", "authorization"),
    ({"success": False, "code": "FORBIDDEN", "origin": "mcp_gateway"}, "permission_denied", "mcp_gateway",
     "authorization"),
    ({"success": False, "code": "RESOURCE_NOT_FOUND"}, "resource_not_found", "dingtalk_api", "tool_execution"),
    ({"success": False}, "business_error", None, None),
]


@pytest.mark.parametrize("as_", ["text", "isError", "structured"])
@pytest.mark.parametrize(("payload", "reason", "origin", "stage"), CLASSIFY)
def test_classifier_rows_on_every_path(fake: Fake, payload: dict, reason: str, origin: str | None,
                                       stage: str | None, as_: str) -> None:
    spec: dict[str, Any] = {"payload": payload}
    if as_ == "isError":
        spec["isError"] = True
    elif as_ == "structured":
        spec = {"structured": payload, "isError": True}
    if as_ != "text" and reason == "business_error":
        reason = "mcp_tool_error"
    fake.on("list_all_conversations", spec, spec)
    r = dws(fake, "chat", "+conversation-list", "--page-all")
    assert r.rc == 1 and r.err["code"] == 1 and r.err["category"] == "api" and r.stdout == ""
    assert (r.err["reason"], r.err.get("origin"), r.err.get("stage")) == (reason, origin, stage)
    assert "execution_started" not in r.err
    assert r.err.get("server_error_code") == (str(payload["code"]) if "code" in payload else None)
    if reason == "backend_dependency_unavailable":
        assert r.err["trace_id"] == "T1" and r.err["retryable"] is True
        assert r.err["technical_detail"] == payload["technical_detail"]
        text = r.err["hint"] + " ".join(r.err["actions"])
        for bad in ("auth", "login", "whoami", "认证", "登录", "检查参数"):
            assert bad not in text.lower()
        assert len(fake.calls()) == 2  # a read retries a retryable backend failure once


def test_diagnostics_pass_through_trace_id_variants(fake: Fake) -> None:
    fake.on("list_all_conversations", {"payload": {"success": False, "code": "X", "traceId": "T9",
                                                   "retryable": False}})
    r = dws(fake, "chat", "+conversation-list")
    assert r.err["trace_id"] == "T9" and r.err["retryable"] is False and r.err["reason"] == "business_error"
    assert len(fake.calls()) == 1


def test_backend_execution_started_is_propagated_not_invented(fake: Fake) -> None:
    fake.on("list_all_conversations", {"payload": {**NETWORK, "retryable": False, "execution_started": False}})
    assert dws(fake, "chat", "+conversation-list").err["execution_started"] is False


def test_http_and_jsonrpc_errors(fake: Fake) -> None:
    fake.on("list_all_conversations", {"http": 503}, {"http": 503})
    r = dws(fake, "chat", "+conversation-list")
    assert r.rc == 1 and r.err["reason"] == "http_503" and r.err["retryable"] is True
    assert len(fake.calls()) == 2
    fake.records.clear()
    fake.on("list_all_conversations", {"rpc_error": -32602})
    r = dws(fake, "chat", "+conversation-list")
    assert r.rc == 3 and r.err["reason"] == "tools_call_jsonrpc_invalid_params"


def test_read_recovers_after_one_retry(fake: Fake) -> None:
    fake.on("list_all_conversations", {"drop": True})
    r = dws(fake, "chat", "+conversation-list")
    assert r.rc == 0 and r.out["complete"] is True and len(fake.calls()) == 2


@pytest.mark.parametrize("spec", [{"payload": NETWORK}, {"http": 503}, {"http": 429}])
def test_writes_are_never_retried(fake: Fake, spec: dict) -> None:
    fake.on("update_group_name", dict(spec), dict(spec))
    r = dws(fake, "chat", "+chat-update", "--group", CID_A, "--name", "N", "--yes")
    assert r.rc == 1 and len(fake.calls("update_group_name")) == 1
    fake.records.clear()
    fake.on("update_group_name", dict(spec), dict(spec))
    dws(fake, "chat", "+chat-update", "--group", CID_A, "--name", "N", "--yes", mutant="retry-writes")
    assert len(fake.calls("update_group_name")) == 2


# ------------------------------------------------------------------ targets

ID_OF = {"get_group_members": lambda a: a["openconversation_id"],
         "list_conversation_message_v2": lambda a: a["openconversation_id"],
         "search_messages": lambda a: a["openConversationIds"][0]}


@pytest.mark.parametrize("cmd", [MEMBERS, MESSAGES, SEARCH])
@pytest.mark.parametrize(("flag", "value", "searched"), [
    ("--group", CID_A, False), ("--group", NAME_A, True), ("--conversation-id", CID_A, False),
    ("--chat-query", NAME_A, True), ("--chat-query", CID_A, False)])
def test_target_matrix(fake: Fake, cmd: list[str], flag: str, value: str, searched: bool) -> None:
    r = dws(fake, *cmd, flag, value)
    assert r.rc == 0, r.stderr
    searches = fake.calls("search_groups")
    assert [s["arguments"] for s in searches] == ([{"cursor": "0", "keyword": NAME_A, "limit": 10}]
                                                  if searched else [])
    (biz,) = fake.business()
    assert ID_OF[biz["tool"]](biz["arguments"]) == CID_A


@pytest.mark.parametrize("cmd", [MEMBERS, MESSAGES, SEARCH])
def test_name_in_stable_id_flag_is_rejected_before_any_call(fake: Fake, cmd: list[str]) -> None:
    r = dws(fake, *cmd, "--conversation-id", NAME_A)
    assert r.rc == 3 and r.err["reason"] == "target_type_mismatch" and fake.records == []
    assert r.err["details"]["providedType"] == "chatName"
    assert r.err["details"]["expectedType"] == "openConversationId"


def test_group_members_accepts_cid_and_name(fake: Fake) -> None:
    assert dws(fake, "chat", "+group-members", "--group", CID_A).rc == 0
    assert fake.calls("search_groups") == []
    r = dws(fake, "chat", "+group-members", "--group", NAME_A)
    assert r.rc == 0 and r.out["conversationId"] == CID_A


def test_ambiguous_name_fails_closed_with_zero_writes(fake: Fake) -> None:
    fake.groups = [(CID_A, NAME_A), (CID_B, NAME_A)]
    r = dws(fake, "chat", "+chat-update", "--group", NAME_A, "--name", "N", "--yes")
    assert r.rc == 3 and r.err["reason"] == "resolution_ambiguous" and fake.business() == []
    d = r.err["details"]
    assert d["type"] == "resolution" and d["subtype"] == "ambiguous"
    assert {c["openConversationId"] for c in d["candidates"]} == {CID_A, CID_B}
    assert r.err["execution_started"] is False and r.err["retryable"] is False


def test_exact_title_wins_over_fuzzy(fake: Fake) -> None:
    fake.groups = [(CID_B, NAME_A + "扩展"), (CID_A, NAME_A)]
    r = dws(fake, *MEMBERS, "--group", NAME_A)
    assert r.rc == 0 and r.out["conversationId"] == CID_A and r.out["target"]["matchType"] == "exact"


def test_zero_hits(fake: Fake) -> None:
    r = dws(fake, *MEMBERS, "--group", "不存在的群")
    assert r.rc == 3 and r.err["reason"] == "resolution_not_found" and fake.business() == []
    assert (r.err["origin"], r.err["stage"], r.err["execution_started"]) == ("client", "target_resolution", False)


def test_full_pagination_and_fail_closed(fake: Fake) -> None:
    p1 = {"result": [{"openConversationId": CID_A, "title": NAME_A}], "hasMore": True, "nextCursor": "c2"}
    p2 = {"result": [{"openConversationId": CID_B, "title": NAME_A}], "hasMore": False}
    fake.on("search_groups", {"payload": p1}, {"payload": p2})
    r = dws(fake, *MEMBERS, "--group", NAME_A)
    assert r.err["reason"] == "resolution_ambiguous"
    assert fake.calls("search_groups")[1]["arguments"]["cursor"] == "c2"
    fake.records.clear()
    full = {"result": [{"openConversationId": f"cidFULL{i:08d}", "title": f"{NAME_A}{i}"} for i in range(10)]}
    fake.on("search_groups", {"payload": full})
    r = dws(fake, *MEMBERS, "--group", NAME_A)
    assert r.rc == 1 and r.err["reason"] == "resolution_incomplete" and r.err["retryable"] is True
    fake.records.clear()
    fake.on("search_groups", {"payload": p1}, {"payload": p1})
    r = dws(fake, *MEMBERS, "--group", NAME_A)
    assert r.err["reason"] == "resolution_incomplete" and fake.business() == []


def test_target_conflicts_and_missing(fake: Fake) -> None:
    r = dws(fake, "chat", "+chat-members-list", "--group", "A", "--chat-query", "B")
    assert r.rc == 3 and r.err["reason"] == "target_arguments_conflict" and r.err["stage"] == "request_validation"
    r = dws(fake, "chat", "+chat-members-list")
    assert r.rc == 3 and r.err["reason"] == "missing_target"
    assert fake.records == []


def test_other_shortcuts_use_the_resolver(fake: Fake) -> None:
    assert dws(fake, "chat", "+send-to-group", "--group", CID_A, "--text", "x", "--yes").rc == 0
    assert dws(fake, "chat", "+at-me", "--chat-query", CID_A).rc == 0
    assert dws(fake, "chat", "+chat-invite-url", "--chat-query", CID_A).rc == 0
    assert [(c["tool"], c["arguments"]["openConversationId"]) for c in fake.calls()] == [
        ("send_personal_message", CID_A), ("search_at_me_message", CID_A), ("get_group_invite_url", CID_A)]
    fake.records.clear()
    assert dws(fake, "chat", "+chat-update", "--group", NAME_A, "--name", "N", "--yes").rc == 0
    assert [c["tool"] for c in fake.calls()] == ["search_groups", "update_group_name"]
    assert fake.calls()[1]["arguments"] == {"openconversation_id": CID_A, "group_name": "N"}
