"""The reference `dws`: compatibility aliases, result ledgers and its mutants, against the scripted fake of
tests/refdws_harness.py (every registered mutant really changes observable behaviour)."""

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
    WINDOW,
    Fake,
    dws,
    reference_mutants,
)

ref_mutants = reference_mutants()


# ------------------------------------------------------------------ aliases


@pytest.mark.parametrize(("canonical", "alias"), [
    ([*SEARCH[:2], "--query", "k"], [*SEARCH[:2], "--text", "k"]),
    ([*SEARCH[:2], "--query", "k"], [*SEARCH[:2], "--text-query", "k"]),
    ([*MESSAGES, "--conversation-id", CID_A, "--limit", "5"], [*MESSAGES, "--conversation-id", CID_A,
                                                               "--page-size", "5"]),
    ([*MESSAGES, "--conversation-id", CID_A], [*MESSAGES, "--open-conversation-id", CID_A]),
    ([*MESSAGES, "--group", NAME_A], [*MESSAGES, "--chat", NAME_A]),
    ([*MEMBERS, "--conversation-id", CID_A], [*MEMBERS, "--chat", CID_A]),
    ([*MEMBERS, "--conversation-id", CID_A], [*MEMBERS, "--open-conversation-id", CID_A]),
])
def test_alias_is_equivalent_to_canonical(fake: Fake, canonical: list[str], alias: list[str]) -> None:
    extra = [*WINDOW, "--no-enrich"] if canonical[1] == "+search-msg" else []
    assert dws(fake, *canonical, *extra).rc == 0
    first = [(c["product"], c["tool"], c["arguments"]) for c in fake.calls()]
    fake.records.clear()
    assert dws(fake, *alias, *extra).rc == 0
    assert [(c["product"], c["tool"], c["arguments"]) for c in fake.calls()] == first


def test_chat_rename_dry_run_equals_chat_update(fake: Fake) -> None:
    a = dws(fake, "chat", "+chat-rename", "--group", CID_A, "--name", "N", "--dry-run")
    b = dws(fake, "chat", "+chat-update", "--group", CID_A, "--name", "N", "--dry-run")
    assert a.out == b.out == {"arguments": {"group_name": "N", "openconversation_id": CID_A}, "dry_run": True,
                              "executed": False, "tool": "update_group_name"}
    assert fake.records == []


@pytest.mark.parametrize("argv", [
    [*SEARCH[:2], "--query", "a", "--text", "a", "--no-enrich"],
    [*MESSAGES, "--limit", "5", "--page-size", "5", "--conversation-id", CID_A],
    [*MESSAGES, "--conversation-id", CID_A, "--open-conversation-id", CID_A],
    [*MEMBERS, "--conversation-id", CID_A, "--chat", CID_A],
    [*MESSAGES, "--chat", "X", "--group", "X"],
])
def test_alias_plus_canonical_rejected(fake: Fake, argv: list[str]) -> None:
    r = dws(fake, *argv)
    assert r.rc == 3 and r.err["category"] == "validation" and fake.records == []
    if "--chat" in argv and "--group" in argv:
        assert r.err["reason"] == "parameter_conflict"


def test_write_needs_confirmation(fake: Fake) -> None:
    r = dws(fake, "chat", "group", "rename", "--id", CID_A, "--name", "N")
    assert r.rc == 3 and r.err["reason"] == "confirmation_required" and fake.records == []
    r = dws(fake, "chat", "group", "rename", "--id", CID_A, "--name", "N", "--dry-run")
    assert r.out["tool"] == "update_group_name" and r.out["executed"] is False and fake.records == []


# ------------------------------------------------------------------ results


def test_messages_single_page_ledger(fake: Fake) -> None:
    fake.on("list_conversation_message_v2", {"payload": {"result": {"hasMore": True, "messages": [{}]}}})
    r = dws(fake, *MESSAGES, "--group", CID_A, "--limit", "5")
    assert (r.out["complete"], r.out["hasMore"], r.out["stopReason"]) == (False, True, "single_page")
    assert r.out["contractVersion"] == "im.message-list.v1"
    assert fake.calls()[0]["arguments"] == {"forward": False, "limit": 5, "openconversation_id": CID_A,
                                            "time": "2026-01-01 00:00:00"}
    r = dws(fake, *MESSAGES, "--group", CID_A)
    assert (r.out["complete"], r.out["stopReason"]) == (True, "source_complete")


def test_members_output(fake: Fake) -> None:
    r = dws(fake, "chat", "+chat-members-list", "--group", NAME_A)
    assert r.out["conversationId"] == CID_A and r.out["complete"] is True
    assert r.out["buckets"]["users"]["complete"] is True and r.out["contractVersion"] == "im.group-members.v1"
    assert [c["tool"] for c in fake.calls()] == ["search_groups", "get_group_members", "list_group_bots"]


def test_search_msg_calls(fake: Fake) -> None:
    fake.groups = [(CID_A, NAME_A), (CID_B, "项目群B")]
    r = dws(fake, "chat", "+search-msg", "--query", "k", *WINDOW, "--chat-query", NAME_A,
            "--chat-query", "项目群B", "--sender-query", "张三")
    assert r.rc == 0, r.stderr
    tools = [c["tool"] for c in fake.calls()]
    assert tools == ["search_groups", "search_groups", "search_contact_by_key_word", "search_messages",
                     "list_messages_by_ids"]
    args = fake.calls("search_messages")[0]["arguments"]
    assert args["openConversationIds"] == [CID_A, CID_B] and args["senderOpenDingTakIds"] == ["odid-1"]
    assert args["startTime"] == 1767196800000 and args["endTime"] == 1767283200000
    assert r.out["messages"][0]["content"] == "hi!"


def test_later_page_failures_keep_results(fake: Fake) -> None:
    page = {"result": {"hasMore": True, "nextCursor": "n2", "messages": [{"openMessageId": "m1"}]}}
    fake.on("search_messages", {"payload": page}, {"http": 500}, {"http": 500})
    r = dws(fake, *SEARCH, "--page-all")
    assert r.rc == 0 and r.out["count"] == 1 and r.out["partial"] is True and r.out["complete"] is False
    assert r.out["failures"][0]["stage"] == "search-page" and fake.calls("search_messages")[1]["arguments"][
        "cursor"] == "n2"
    members = {"result": {"hasMore": True, "nextCursor": "n2", "members": [{"openDingtalkId": "o1"}]}}
    fake.on("get_group_members", {"payload": members}, {"payload": NETWORK}, {"payload": NETWORK})
    r = dws(fake, *MEMBERS, "--group", CID_A)
    assert r.rc == 0 and r.out["buckets"]["users"]["complete"] is False and r.out["failedCount"] == 1
    assert r.out["failures"][0]["stage"] == "read"


def test_messages_page_all_follows_next_time(fake: Fake) -> None:
    p1 = {"result": {"hasMore": True, "nextPage": {"time": "2025-12-31 00:00:00"}, "messages": [{}]}}
    fake.on("list_conversation_message_v2", {"payload": p1})
    r = dws(fake, *MESSAGES, "--conversation-id", CID_A, "--page-all")
    assert r.rc == 0 and r.out["pagesFetched"] == 2 and r.out["complete"] is True
    args = [c["arguments"] for c in fake.calls()]
    assert args[0]["limit"] == 100 and args[1]["time"] == "2025-12-31 00:00:00"


def test_table_format_success(fake: Fake) -> None:
    r = dws(fake, "--format", "table", "chat", "+conversation-list")
    assert r.rc == 0 and "OPENCONVERSATIONID" in r.stdout and "complete: True" in r.stdout


# ------------------------------------------------------------------ mutants

NETWORK_TWICE = {"list_all_conversations": {"payload": NETWORK}, "times": 2}
GROUP_UPDATE = ["chat", "+chat-update", "--name", "N", "--yes", "--group"]
MUTANT_PROBES: dict[str, tuple[list[dict[str, Any]], list[str]]] = {
    "prefix-unknown-text": ([], [*SEARCH[:2], "--text", "k", *WINDOW, "--no-enrich"]),
    "prefix-cid-group-rejected": ([], [*MEMBERS, "--group", CID_A]),
    "prefix-business-error": ([{"list_all_conversations": {"payload": NETWORK}}], ["chat", "+conversation-list"]),
    "pick-first": ([{"groups": [(CID_A, NAME_A), (CID_B, NAME_A)]}], [*MEMBERS, "--group", NAME_A]),
    "name-as-id": ([], [*MEMBERS, "--group", NAME_A]),
    "cid-searched": ([], [*MEMBERS, "--chat-query", CID_A]),
    "first-page-only": ([{"search_groups": {"payload": {"result": [{"openConversationId": CID_A, "title": NAME_A}],
                                                        "hasMore": True, "nextCursor": "c2"}}}],
                        [*MEMBERS, "--group", NAME_A]),
    "zero-hit-untyped": ([], [*MEMBERS, "--group", "无此群"]),
    "mismatch-foreign-flag": ([], [*MEMBERS, "--conversation-id", NAME_A]),
    "direct-query-accepted": ([], [*MEMBERS, "--group", CID_A, "--chat-query", NAME_A]),
    "send-to-group-verbatim": ([], ["chat", "+send-to-group", "--group", NAME_A, "--text", "x", "--yes"]),
    "conversation-id-verbatim": ([], [*MEMBERS, "--conversation-id", NAME_A]),
    "stage-always-backend": ([NETWORK_TWICE], ["chat", "+conversation-list"]),
    "no-permission": ([{"list_all_conversations": {"payload": {"success": False, "code": "PERMISSION_DENIED"}}}],
                      ["chat", "+conversation-list"]),
    "no-not-found": ([{"list_all_conversations": {"payload": {"success": False, "code": "NOT_FOUND"}}}],
                     ["chat", "+conversation-list"]),
    "detail-first": ([{"list_all_conversations": {"payload": {"success": False, "code": "PARAM_ERROR",
                                                              "technical_detail": BACKEND_DETAIL}}}],
                     ["chat", "+conversation-list"]),
    "drop-trace": ([NETWORK_TWICE], ["chat", "+conversation-list"]),
    "misleading-hint": ([NETWORK_TWICE], ["chat", "+conversation-list"]),
    "invent-exec-started": ([NETWORK_TWICE], ["chat", "+conversation-list"]),
    "iserror-unclassified": ([{"list_all_conversations": {"payload": NETWORK, "isError": True}}],
                             ["chat", "+conversation-list"]),
    "fallback-classified": ([{"list_all_conversations": {"payload": {"success": False}}}],
                            ["chat", "+conversation-list"]),
    "exit-code-mismatch": ([], [*MEMBERS]),
    "category-bogus": ([], [*MEMBERS]),
    "error-on-stdout": ([], [*MEMBERS]),
    "table-error-text": ([NETWORK_TWICE], ["--format", "table", "chat", "+conversation-list"]),
    "auth-whoami": ([], ["auth", "whoami"]),
    "retry-writes": ([{"update_group_name": {"http": 503}}], [*GROUP_UPDATE, CID_A]),
    "read-retry-twice": ([{"list_all_conversations": {"http": 503}, "times": 2}], ["chat", "+conversation-list"]),
    "no-read-retry": ([{"list_all_conversations": {"http": 503}}], ["chat", "+conversation-list"]),
    "partial-as-complete": ([{"list_all_conversations": {"payload": {"result": {
        "hasMore": True, "nextCursor": 2, "conversations": [{}]}}}}, {"list_all_conversations": {"http": 400}}],
        ["chat", "+conversation-list", "--page-all"]),
    "single-page-complete": ([{"list_conversation_message_v2": {"payload": {"result": {"hasMore": True}}}}],
                             [*MESSAGES, "--group", CID_A]),
    "members-incomplete-lies": ([{"get_group_members": {"payload": {"result": {
        "hasMore": True, "nextCursor": "n2", "members": [{}]}}}}], [*MEMBERS, "--group", CID_A, "--page-limit",
                                                                    "1"]),
    "convlist-changed": ([], ["chat", "+conversation-list"]),
    "alias-in-help": ([], ["chat", "+search-msg", "--help"]),
    "alias-conflict-accepted": ([], [*MEMBERS, "--conversation-id", CID_A, "--chat", CID_A]),
    "tools-list-probe": ([], ["chat", "+conversation-list"]),
    "no-confirm": ([], ["chat", "group", "rename", "--id", CID_A, "--name", "N"]),
    "untrusted-auth": ([{"untrusted": True}], ["chat", "+conversation-list"]),
}


def _observe(fake: Fake, setup: list[dict[str, Any]], argv: list[str], mutant: str) -> tuple:
    fake.records.clear()
    fake.script.clear()
    trusted = True
    for item in setup:
        for key, val in item.items():
            if key == "groups":
                fake.groups = val
            elif key == "untrusted":
                trusted = False
            elif key != "times":
                fake.on(key, *[dict(val) for _ in range(item.get("times", 1))])
    r = dws(fake, *argv, mutant=mutant, trusted=trusted)
    calls = [(c["method"], c["tool"], json.dumps(c["arguments"], sort_keys=True),
              "authorization" in c["headers"]) for c in fake.records]
    return r.rc, r.stdout, r.stderr, calls


def test_every_probe_names_a_registered_mutant() -> None:
    """Runtime mutants are probed here; schema/catalog mutants are covered by the schema helper's tests."""
    assert set(MUTANT_PROBES) <= set(ref_mutants.MUTANTS)


@pytest.mark.parametrize("name", sorted(MUTANT_PROBES))
def test_mutant_changes_observable_behaviour(fake: Fake, name: str) -> None:
    setup, argv = MUTANT_PROBES[name]
    base = _observe(fake, setup, argv, "")
    fake.groups = [(CID_A, NAME_A)]
    mutated = _observe(fake, setup, argv, name)
    assert base != mutated, f"mutant {name} is not observable on its probe {argv}"
