"""Issue 35 (4): the fake answers each tool the contract profile names the way the real service does, as upstream's
own public tests describe it (DingTalk-Real-AI/dingtalk-workspace-cli; read there, never copied here).

Each shape below is our description of what an upstream test fixture sends for that tool (where the rows live, the
pagination flags and their types), with the file and test that send it. The fake's reply (first page and last page
of a world that needs two) must match one of them. A tool the profile names with no upstream fixture is listed in
``NO_UPSTREAM_FIXTURE`` with where its shape comes from instead, so no tool is silently unchecked. Shapes the real
service never sends (a full page without pagination metadata, a stalled cursor ...) are named fault scenarios of
the gates (fixtures/scenarios/d1/faults.toml), never the world's own answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from fake_mcp import FakeMCPServer, Scenario
from fake_mcp.client import MCPClient
from fake_mcp.world import TOOLS, World
from pytest_dws.inputs.profile import DEFAULT_PROFILE, load_profile

UP = "dingtalk-workspace-cli/"


@dataclass(frozen=True)
class Shape:
    """Where the rows are (``rows``: a dotted path; ``groups:KEY`` = a list of groups each holding KEY rows),
    the keys a row carries (one of each alternative tuple), and where pagination lives (``page``: the dotted path
    of the object holding hasMore/nextCursor, None: not paginated) and which types the next cursor has."""

    source: str
    rows: str
    row_keys: tuple[tuple[str, ...], ...] = ()
    page: str | None = None
    cursor: tuple[type, ...] = (str,)


SHAPES: dict[str, list[Shape]] = {
    "im/search_groups": [
        Shape(UP + "internal/shortcut/smart/search_msg_execution_test.go (searchMsgExecutionCaller, search_groups); "
              "internal/shortcut/targetresolver/resolver_test.go (hasMore + nextCursor 'page-2' beside result)",
              rows="result", row_keys=(("openConversationId",), ("title",)), page="", cursor=(str,)),
    ],
    "chat/get_group_members": [
        Shape(UP + "internal/shortcut/smart/coverage_completion_test.go "
              "(TestCrossPlatformCoverageChatMembersListPaginatesUserBucketAndDeduplicates: result.list, "
              "result.hasMore, result.nextCursor '2')",
              rows="result.list", row_keys=(("memberEmpName",), ("openDingtalkId",)), page="result"),
        Shape("../shared/contract/WIRE.md §3 (the payload the real 81f67c8d binary accepted: result.members)",
              rows="result.members", row_keys=(("memberEmpName",), ("openDingtalkId",)), page="result"),
    ],
    "bot/list_group_bots": [
        Shape(UP + "internal/shortcut/chat/lark_alignment_test.go (group name to bots: result.bots); "
              "internal/shortcut/smart/coverage_completion_test.go (result.bots with robotCode)",
              rows="result.bots", row_keys=(("robotCode",),)),
    ],
    "im/search_messages": [
        Shape(UP + "internal/shortcut/smart/search_msg_execution_test.go (searchMsgExecutionCaller: result.messages, "
              "result.hasMore, result.nextCursor 'c2'); test/mock_mcp/mock_mcp_smoke_test.go (search_messages)",
              rows="result.messages", row_keys=(("openMessageId",), ("openConversationId",)), page="result"),
    ],
    "im/list_messages_by_ids": [
        Shape(UP + "internal/helpers/connect_chatrecord_test.go (list_messages_by_ids: result.messages)",
              rows="result.messages", row_keys=(("openMessageId",),)),
        Shape(UP + "internal/shortcut/chat/chat_message_coverage_test.go (im/list_messages_by_ids: result as a list)",
              rows="result", row_keys=(("openMessageId",),)),
    ],
    "im/list_all_conversations": [
        Shape(UP + "internal/shortcut/chat/chat_list_cross_platform_coverage_test.go (result.conversations, "
              "result.hasMore, result.nextCursor); chat_conversation_projection_test.go (numeric nextCursor)",
              rows="result.conversations", row_keys=(("openConversationId",),), page="result", cursor=(str, int)),
    ],
    "chat/list_conversation_message_v2": [
        Shape(UP + "internal/shortcut/smart/chat_messages_test.go "
              "(TestCrossPlatformCoverageChatMessagesPageAllUsesTypedBoundaryAndDeduplicates: result.hasMore and a "
              "millisecond result.nextCursor number)",
              rows="result.messages", row_keys=(("openMessageId",), ("createTime",)), page="result", cursor=(int,)),
    ],
    "chat/list_individual_chat_message": [
        Shape(UP + "internal/shortcut/chat/remaining_read_pagination_test.go (chat/list_individual_chat_message: "
              "result.messages, result.hasMore, millisecond result.nextCursor)",
              rows="result.messages", row_keys=(("openMessageId",),), page="result", cursor=(int,)),
    ],
    "chat/search_at_me_message": [
        Shape(UP + "internal/helpers/chat_message_pagination_test.go (search_at_me_message: "
              "result.conversationMessagesList[].messages, result.hasMore, result.nextCursor); "
              "internal/shortcut/smart/at_me.go ('verified against the live gateway')",
              rows="groups:result.conversationMessagesList", row_keys=(("openConversationId",),), page="result"),
    ],
    "contact/search_contact_by_key_word": [
        Shape(UP + "internal/shortcut/smart/search_msg_execution_test.go (contact search: result list, hasMore); "
              "internal/shortcut/targetresolver/resolver_test.go (contact search)",
              rows="result", row_keys=(("name",), ("userId",)), page="", cursor=(str,)),
    ],
    "chat/send_personal_message": [
        Shape(UP + "test/mock_mcp/mock_mcp_smoke_test.go (send_personal_message: result.openMessageId)",
              rows="", row_keys=(("result.openMessageId",),)),
    ],
    "chat/get_conversation_info": [
        Shape(UP + "internal/shortcut/smart/search_msg_execution_test.go (get_conversation_info: "
              "result.openConversationId)", rows="", row_keys=(("result.openConversationId",),)),
    ],
}

#: Tools the profile names that no upstream test fixture answers: where their shape comes from instead.
NO_UPSTREAM_FIXTURE = {
    "chat/update_group_name": "no upstream fixture sends a reply (lark_alignment_test.go checks the request only); "
    "a success with the renamed group, documented in docs/fake_mcp.md",
    "im/get_group_invite_url": "no upstream fixture sends a reply (lark_alignment_test.go checks the request "
    "only); result.url, documented in docs/fake_mcp.md",
    "chat/get_group_invite_url": "as im/get_group_invite_url (the profile leaves its product open)",
}

CID_A, CID_B = "cidFIDELITYgroupA001", "cidFIDELITYgroupB002"
T0 = 1767225600000


def _world() -> World:
    """A world where every paged tool needs two pages at limit 2."""
    return World(_world_data())


def _world_data() -> dict[str, Any]:
    members = [{"name": f"成员{i}", "openDingtalkId": f"odid-fid-{i:04d}", "userId": f"u-fid-{i}"} for i in range(3)]
    messages = [{"openMessageId": f"m-fid-{i}", "sender": "odid-fid-0000", "content": f"k 第{i}条",
                 "createTime": T0 + i * 60_000} for i in range(3)]
    return {
        "groups": [{"cid": CID_A, "title": "保真群甲", "members": members, "bots": [{"name": "b", "robotCode": "rc"}],
                    "messages": messages},
                   {"cid": CID_B, "title": "保真群乙", "members": members[:1], "messages": []}],
        "contacts": [{"name": f"保真{i}", "userId": f"u-fid-{i}", "openDingtalkId": f"odid-fid-{i:04d}"}
                     for i in range(3)],
        "at_me": [{**m, "openConversationId": CID_A} for m in messages],
        "direct_chats": [{"openDingtalkId": "odid-fid-0001", "messages": messages}],
    }


#: (tool, first request, next-page request built from the first reply) per tool: the arguments a client sends.
def _requests(tool: str) -> dict[str, Any]:
    base: dict[str, dict[str, Any]] = {
        "im/search_groups": {"keyword": "保真", "limit": 1, "cursor": "0"},
        "chat/get_group_members": {"openconversation_id": CID_A, "cursor": "0", "limit": 2},
        "bot/list_group_bots": {"openConversationId": CID_A},
        "im/search_messages": {"keyword": "k", "limit": 2, "cursor": "0"},
        "im/list_messages_by_ids": {"openMsgIds": ["m-fid-0", "m-fid-1"]},
        "im/list_all_conversations": {"limit": 1},
        "chat/list_conversation_message_v2": {"openconversation_id": CID_A, "time": "2026-01-02 00:00:00",
                                              "forward": False, "limit": 2},
        "chat/list_individual_chat_message": {"openDingTalkId": "odid-fid-0001", "time": "2026-01-02 00:00:00",
                                              "forward": False, "limit": 2},
        "chat/search_at_me_message": {"openConversationId": CID_A, "cursor": "0", "limit": 2},
        "contact/search_contact_by_key_word": {"keyword": "保真", "limit": 2, "cursor": "0"},
        "chat/send_personal_message": {"openConversationId": CID_A, "content": "x"},
        "chat/get_conversation_info": {"openConversationId": CID_A},
    }
    return base[tool]


def _at(doc: Any, path: str) -> Any:
    for part in [p for p in path.split(".") if p]:
        doc = doc.get(part) if isinstance(doc, dict) else None
    return doc


def _problems(shape: Shape, payload: dict[str, Any]) -> list[str]:
    out = []
    if shape.rows.startswith("groups:"):
        groups = _at(payload, shape.rows[len("groups:"):])
        rows = [m for g in groups or [] if isinstance(g, dict) for m in g.get("messages") or []] \
            if isinstance(groups, list) and all(isinstance(g.get("messages"), list) for g in groups) else None
        if rows is None:
            out.append(f"{shape.rows}: not a list of groups with messages")
    elif shape.rows:
        rows = _at(payload, shape.rows)
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            out.append(f"{shape.rows}: not a list of objects ({type(rows).__name__})")
            rows = None
    else:
        rows = [payload]
    for row in rows or []:
        for keys in shape.row_keys:
            if not any(_at(row, k) not in (None, "") for k in keys):
                out.append(f"a row lacks {' or '.join(keys)}: {sorted(row)}")
                break
    if shape.page is not None:
        page = _at(payload, shape.page) if shape.page else payload
        more = page.get("hasMore") if isinstance(page, dict) else None
        if not isinstance(more, bool):
            out.append(f"{shape.page or '$'}.hasMore is {more!r}, not a bool")
        elif more:
            nxt = page.get("nextCursor")
            if isinstance(nxt, bool) or not isinstance(nxt, shape.cursor) or nxt in ("", 0):
                out.append(f"{shape.page or '$'}.nextCursor is {nxt!r} on a page with more (expected "
                           f"{'/'.join(t.__name__ for t in shape.cursor)})")
    return out


def _matches(tool: str, payload: dict[str, Any]) -> None:
    found = {s.source: _problems(s, payload) for s in SHAPES[tool]}
    if not any(not p for p in found.values()):
        raise AssertionError(f"{tool}: the fake's reply {payload} matches no shape upstream's tests send:\n" +
                             "\n".join(f"  {src}: {'; '.join(p)}" for src, p in found.items()))


def _next(tool: str, request: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any] | None:
    page = payload if tool in ("im/search_groups", "contact/search_contact_by_key_word") else payload.get("result")
    if not isinstance(page, dict) or page.get("hasMore") is not True:
        return None
    nxt = page["nextCursor"]
    if tool.endswith("_message_v2") or tool.endswith("individual_chat_message"):
        from datetime import UTC, datetime

        return {**request, "time": datetime.fromtimestamp(nxt / 1000, UTC).isoformat()}
    return {**request, "cursor": nxt}


def profile_tools() -> set[str]:
    """The backend tools the default profile names (business calls, the resolver) and those its commands reach on
    the way (bots, enrichment, contacts, direct chats, the conversation lookup a client may verify an ID with)."""
    prof = load_profile(DEFAULT_PROFILE)
    named = {c.call for c in prof.commands.values() if c.call is not None} | {prof.resolver}
    tools = {f"{p}/{t.name}" for t in named for p in ([t.product] if t.product else ["im", "chat"])}
    return tools | {"bot/list_group_bots", "im/list_messages_by_ids", "contact/search_contact_by_key_word",
                    "chat/list_individual_chat_message", "chat/get_conversation_info"}


def test_every_tool_the_profile_names_is_checked_or_named_unchecked() -> None:
    tools = profile_tools()
    assert tools <= set(SHAPES) | set(NO_UPSTREAM_FIXTURE), sorted(tools - set(SHAPES) - set(NO_UPSTREAM_FIXTURE))
    modelled = {f"{p}/{t}" for p, t in TOOLS}
    assert set(SHAPES) <= modelled, sorted(set(SHAPES) - modelled)


@pytest.mark.parametrize("tool", sorted(SHAPES))
def test_the_fake_answers_each_page_as_upstreams_tests_describe_the_service(tool: str) -> None:
    world = _world()
    product, name = tool.split("/")
    request: dict[str, Any] | None = _requests(tool)
    pages = 0
    while request is not None and pages < 5:
        payload = world.call(product, name, request)
        assert payload.get("success") is not False, f"{tool}: {payload}"
        _matches(tool, payload)
        request, pages = _next(tool, request, payload), pages + 1
    assert request is None, f"{tool}: still more after {pages} pages"
    if SHAPES[tool][0].page is not None:
        assert pages == 2, f"{tool}: the fidelity world must need two pages, it needed {pages}"


def test_an_unknown_conversation_is_resource_not_found_from_the_lookup() -> None:
    """upstream internal/helpers/chat_search_scope_error.go maps RESOURCE_NOT_FOUND from the conversation lookup to
    "the CID does not exist" (a scoped search stops): the fake's lookup answers exactly that for an unknown ID."""
    payload = _world().call("chat", "get_conversation_info", {"openConversationId": "cidFIDELITYnowhere01"})
    assert (payload.get("success"), payload.get("code")) == (False, "RESOURCE_NOT_FOUND")


def test_a_tool_the_world_does_not_model_is_an_unknown_tool_never_a_success() -> None:
    """MCP specification (server/tools, Error Handling: 'Unknown tools' -> JSON-RPC -32602): the fake never answers
    an unmodelled tool with a success a client could pass on (upstream's own mock answers `{"success":true}`)."""
    with FakeMCPServer() as srv:
        srv.load(Scenario.build("fidelity"))
        client = MCPClient(srv.url)
        try:
            reply = client.call("chat", "get_conversation_members_v9", {"openConversationId": CID_A})
        finally:
            client.close()
    assert reply.payload is None and (reply.error or {}).get("code") == -32602


def test_the_search_service_may_ignore_its_conversation_filter_as_a_named_fault() -> None:
    """upstream internal/shortcut/smart/search_msg.go (its scoped search): the service can drop the conversation
    filter, which is why that release verifies the CID and scopes the results itself (the reference's scope-client
    variant). The world honours the filter unless a fault scenario names the quirk; then it returns every group's
    rows, and a client that trusts the filter passes another group's messages on."""
    world = _world()
    args = {"keyword": "k", "limit": 50, "openConversationIds": [CID_B]}
    assert world.call("im", "search_messages", args)["result"]["messages"] == []
    quirky = World({**_world_data(), "quirks": ["search-ignores-conversation-filter"]})
    rows = quirky.call("im", "search_messages", args)["result"]["messages"]
    assert {r["openConversationId"] for r in rows} == {CID_A}
