"""fake_mcp on the wire: exact docs/wire.md §2-3 requests, the binary's parse rule, and the world model."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest

from fake_mcp import (
    PRODUCTS,
    WIRE_HEADERS,
    FakeMCPServer,
    Scenario,
    endpoint_var,
    isolation_env,
    parse_tool_result,
    tools_call_body,
)

BASIC = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios" / "basic"
CID_A = "cidTESTa00000001"


def load(server: FakeMCPServer, name: str) -> Scenario:
    return server.load(BASIC / f"{name}.json")


# -- the parse rule ---------------------------------------------------------------------------
def test_parse_rule_structured_content_wins_over_text():
    result = {"content": [{"type": "text", "text": '{"a":1}'}], "structuredContent": {"b": 2}}
    assert parse_tool_result(result) == {"b": 2}


def test_parse_rule_first_text_block_that_is_a_json_object():
    result = {"content": [
        {"type": "image", "data": "xx"},
        {"type": "text", "text": "not json"},
        {"type": "text", "text": "[1, 2]"},
        {"type": "text", "text": '{"first": true}'},
        {"type": "text", "text": '{"second": true}'},
    ]}
    assert parse_tool_result(result) == {"first": True}


@pytest.mark.parametrize("result", [None, [], {}, {"content": []}, {"content": [{"type": "text", "text": "x"}]},
                                    {"structuredContent": [1], "content": [{"type": "text", "text": "1"}]}])
def test_parse_rule_no_payload(result):
    assert parse_tool_result(result) is None


# -- exact request bytes and headers ---------------------------------------------------------
def test_tools_call_body_matches_wire_layout():
    body = tools_call_body("search_groups", {"limit": 10, "keyword": "项目群A", "cursor": "0"})
    assert body == ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":'
                    '{"cursor":"0","keyword":"项目群A","limit":10},"name":"search_groups"}}').encode()


def test_exact_wire_request_is_answered_as_plain_json_and_recorded(server):
    load(server, "unique_group")
    conn = http.client.HTTPConnection("127.0.0.1", server.port)
    body = ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":'
            '{"cursor":"0","keyword":"项目群A","limit":10},"name":"search_groups"}}').encode()
    conn.request("POST", "/mcp/im", body, WIRE_HEADERS)
    resp = conn.getresponse()
    raw = resp.read()
    assert resp.status == 200
    assert resp.getheader("Content-Type") == "application/json"
    assert resp.getheader("Mcp-Session-Id") is None
    rpc = json.loads(raw)
    assert rpc["jsonrpc"] == "2.0" and rpc["id"] == 3 and "error" not in rpc
    assert rpc["result"]["content"][0]["type"] == "text"
    assert "isError" not in rpc["result"] and "structuredContent" not in rpc["result"]
    assert parse_tool_result(rpc["result"]) == {
        "result": [{"title": "项目群A", "openConversationId": CID_A}], "hasMore": False}
    conn.close()

    (rec,) = server.transcript.records
    assert (rec.seq, rec.product, rec.path, rec.http_method) == (1, "im", "/mcp/im", "POST")
    assert (rec.rpc_method, rec.rpc_id, rec.tool) == ("tools/call", 3, "search_groups")
    assert rec.arguments == {"cursor": "0", "keyword": "项目群A", "limit": 10}
    assert (rec.status, rec.outcome) == (200, "ok")
    for name, value in WIRE_HEADERS.items():
        assert rec.headers[name.lower()] == value


def test_keep_alive_serves_many_calls_on_one_connection(server, client):
    load(server, "unique_group")
    client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10})
    sock = client.conn.sock
    for _ in range(20):
        reply = client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10})
        assert reply.status == 200 and reply.payload["result"][0]["openConversationId"] == CID_A
        assert reply.headers.get("connection") != "close"
    assert client.conn.sock is sock  # never reconnected
    assert len(server.transcript) == 21


# -- the chat shortcut flows of docs/wire.md §3 --------------------------------------------------------
def test_members_list_flow_shapes(server, client):
    load(server, "unique_group")
    found = client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10}).payload
    cid = found["result"][0]["openConversationId"]
    members = client.call("chat", "get_group_members", {"cursor": "0", "openconversation_id": cid}).payload
    assert members["result"]["hasMore"] is False
    assert [m["memberEmpName"] for m in members["result"]["members"]] == ["张三", "李四", "王五"]
    assert members["result"]["members"][0]["openDingtalkId"] == "odid-a-01"
    bots = client.call("bot", "list_group_bots", {"openConversationId": cid}).payload
    assert bots == {"result": {"bots": [{"name": "项目助手", "robotCode": "rc-test-0001"}]}}
    assert [r.tool for r in server.transcript.calls()] == ["search_groups", "get_group_members", "list_group_bots"]
    assert [r.tool for r in server.transcript.business_calls()] == ["get_group_members", "list_group_bots"]
    assert server.transcript.writes() == []


def test_search_groups_substring_and_same_name_groups(server, client):
    load(server, "same_name_groups")
    rows = client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群", "limit": 10}).payload["result"]
    assert [(r["title"], r["openConversationId"]) for r in rows] == [
        ("项目群", "cidTESTa00000011"), ("项目群", "cidTESTa00000012"), ("项目群-测试", "cidTESTa00000013")]
    rows = client.call("im", "search_groups", {"cursor": "0", "keyword": "测试", "limit": 10}).payload["result"]
    assert [r["openConversationId"] for r in rows] == ["cidTESTa00000013"]


def test_search_groups_zero_hits(server, client):
    load(server, "zero_hits")
    payload = client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群", "limit": 10}).payload
    assert payload == {"result": [], "hasMore": False}


def test_search_groups_pages_follow_next_cursor(server, client):
    load(server, "paginated_groups")
    page1 = client.call("im", "search_groups", {"cursor": "0", "keyword": "周会群", "limit": 10}).payload
    assert len(page1["result"]) == 10 and page1["hasMore"] is True and page1["nextCursor"] == "10"
    assert all(r["title"] != "周会群" for r in page1["result"])
    page2 = client.call("im", "search_groups",
                        {"cursor": page1["nextCursor"], "keyword": "周会群", "limit": 10}).payload
    assert page2 == {"result": [{"title": "周会群", "openConversationId": "cidTESTp00000099"}], "hasMore": False}
    small = client.call("im", "search_groups", {"cursor": "0", "keyword": "周会群", "limit": 4}).payload
    assert len(small["result"]) == 4 and small["nextCursor"] == "4"


def test_same_name_across_pages(server, client):
    load(server, "paginated_same_name_groups")
    rows, cursor = [], "0"
    while True:
        page = client.call("im", "search_groups", {"cursor": cursor, "keyword": "项目群", "limit": 10}).payload
        rows += page["result"]
        if not page["hasMore"]:
            break
        cursor = page["nextCursor"]
    exact = [r["openConversationId"] for r in rows if r["title"] == "项目群"]
    assert exact == ["cidTESTq00000000", "cidTESTq00000099"]
    assert [r.arguments["cursor"] for r in server.transcript.calls("search_groups")] == ["0", "10"]


def test_conversations_numeric_cursor_pages(server, client):
    load(server, "conversations_multi_page")
    p1 = client.call("im", "list_all_conversations", {"limit": 100}).payload["result"]
    assert (p1["hasMore"], p1["nextCursor"], len(p1["conversations"])) == (True, "2", 2)
    p2 = client.call("im", "list_all_conversations", {"cursor": 2, "limit": 100}).payload["result"]
    assert (p2["hasMore"], p2["nextCursor"]) == (True, "4")
    p3 = client.call("im", "list_all_conversations", {"cursor": 4, "limit": 100}).payload["result"]
    assert (p3["hasMore"], p3["nextCursor"], len(p3["conversations"])) == (False, "", 1)
    ids = [c["openConversationId"] for c in p1["conversations"] + p2["conversations"] + p3["conversations"]]
    assert ids == [f"cidTESTc0000000{i}" for i in range(1, 6)]
    unmuted = client.call("im", "list_all_conversations", {"limit": 100, "excludeMuted": True}).payload
    assert "cidTESTc00000002" not in [c["openConversationId"] for c in unmuted["result"]["conversations"]]


def test_conversations_default_to_groups(server, client):
    load(server, "unique_group")
    convs = client.call("im", "list_all_conversations", {"limit": 100}).payload["result"]["conversations"]
    assert [c["openConversationId"] for c in convs] == [CID_A, "cidTESTb00000001"]


def test_messages_search_window_pages_and_enrich(server, client):
    load(server, "messages_has_more")
    args = {"cursor": "0", "endTime": 1767283200000, "keyword": "发布", "limit": 100, "startTime": 1767196800000}
    p1 = client.call("im", "search_messages", args).payload["result"]
    assert p1["hasMore"] is True and p1["nextCursor"] == "2" and len(p1["messages"]) == 2
    row = p1["messages"][0]
    assert set(row) >= {"openMessageId", "openConversationId", "senderOpenDingTalkId", "content", "createTime"}
    assert row["openConversationId"] == "cidTESTm00000001"
    ids = [m["openMessageId"] for m in p1["messages"]]
    enriched = client.call("im", "list_messages_by_ids", {"openMsgIds": ids}).payload
    assert [m["openMessageId"] for m in enriched["result"]["messages"]] == ids
    outside = client.call("im", "search_messages", {**args, "startTime": 0, "endTime": 1767196800000}).payload
    assert outside["result"] == {"hasMore": False, "messages": []}
    by_sender = client.call("im", "search_messages", {**args, "senderOpenDingTakIds": ["odid-a-02"]}).payload
    assert {m["senderOpenDingTalkId"] for m in by_sender["result"]["messages"]} == {"odid-a-02"}
    other = client.call("im", "search_messages", {**args, "openConversationIds": ["cidTESTzzzzzzzz9"]}).payload
    assert other["result"]["messages"] == []


def test_conversation_messages_by_time(server, client):
    load(server, "unique_group")
    older = client.call("chat", "list_conversation_message_v2", {
        "forward": False, "limit": 10, "openconversation_id": CID_A, "time": "2026-01-01 00:00:00"}).payload
    assert [m["openMessageId"] for m in older["result"]["messages"]] == ["msg-a-0002", "msg-a-0001"]
    newer = client.call("chat", "list_conversation_message_v2", {
        "forward": True, "limit": 1, "openconversation_id": CID_A, "time": "2026-01-01 00:00:00"}).payload
    assert newer["result"]["hasMore"] is True
    assert [m["openMessageId"] for m in newer["result"]["messages"]] == ["msg-a-0003"]


def test_other_world_tools(server, client):
    load(server, "unique_group")
    at_me = client.call("chat", "search_at_me_message", {"cursor": "0", "limit": 10, "openConversationId": CID_A})
    groups = at_me.payload["result"]["conversationMessagesList"]
    assert [(g["openConversationId"], [m["openMessageId"] for m in g["messages"]]) for g in groups] == [
        (CID_A, ["msg-a-0004"])]
    for product in ("im", "chat"):
        invite = client.call(product, "get_group_invite_url", {"openConversationId": CID_A}).payload
        assert invite["result"]["url"].startswith("http://127.0.0.1/")
    contacts = client.call("contact", "search_contact_by_key_word", {"keyword": "张"}).payload
    assert [c["userId"] for c in contacts["result"]] == ["user-a-01"]
    direct = client.call("chat", "list_individual_chat_message",
                         {"forward": False, "limit": 10, "openDingTalkId": "odid-a-02"}).payload
    assert [m["openMessageId"] for m in direct["result"]["messages"]] == ["msg-d-0001"]


def test_writes_are_recorded_and_applied(server, client):
    load(server, "unique_group")
    upd = client.call("chat", "update_group_name", {"group_name": "项目群B", "openconversation_id": CID_A}).payload
    assert upd["success"] is True
    assert server.world.group(CID_A)["title"] == "项目群B"
    rows = client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群B", "limit": 10}).payload["result"]
    assert [r["openConversationId"] for r in rows] == [CID_A]
    convs = client.call("im", "list_all_conversations", {"limit": 100}).payload["result"]["conversations"]
    assert convs[0]["title"] == "项目群B"
    sent = client.call("chat", "send_personal_message",
                       {"content": "你好", "msgType": "text", "openConversationId": CID_A}).payload
    msg_id = sent["result"]["openMessageId"]
    got = client.call("im", "list_messages_by_ids", {"openMsgIds": [msg_id]}).payload["result"]["messages"]
    assert got[0]["content"] == "你好" and got[0]["openConversationId"] == CID_A
    assert [r.tool for r in server.transcript.writes()] == ["update_group_name", "send_personal_message"]
    server.reset()  # a fresh world: the write is gone, the transcript is empty
    assert server.world.group(CID_A)["title"] == "项目群A" and len(server.transcript) == 0


@pytest.mark.parametrize(("product", "tool", "args", "code"), [
    ("chat", "get_group_members", {"cursor": "0"}, "PARAM_ERROR"),
    ("chat", "get_group_members", {"cursor": "0", "openconversation_id": "cidTESTzzzzzzzz9"}, "RESOURCE_NOT_FOUND"),
    ("chat", "get_group_members", {"cursor": "x1", "openconversation_id": CID_A}, "PARAM_ERROR"),
    ("im", "search_groups", {"cursor": "0", "keyword": "a", "limit": 0}, "PARAM_ERROR"),
    ("chat", "update_group_name", {"openconversation_id": CID_A}, "PARAM_ERROR"),
    ("im", "list_messages_by_ids", {}, "PARAM_ERROR"),
])
def test_world_business_failures(server, client, product, tool, args, code):
    load(server, "unique_group")
    payload = client.call(product, tool, args).payload
    assert payload["success"] is False and payload["code"] == code
    assert server.transcript.records[-1].outcome == "ok"


def test_an_unknown_tool_is_a_jsonrpc_unknown_tool_error_and_is_recorded(server, client):
    """Issue 35 (4): a tool the world does not model is answered as MCP specifies for unknown tools (JSON-RPC
    -32602), never with a success a client could pass on; its fail-closed path is exercised."""
    load(server, "unique_group")
    for product, tool in (("calendar", "list_events"), ("chat", "search_groups")):
        reply = client.call(product, tool, {"x": 1})
        assert reply.payload is None and reply.error == {"code": -32602, "message": f"Unknown tool: {tool}"}
    assert [(r.product, r.tool, r.outcome) for r in server.transcript.calls()] == [
        ("calendar", "list_events", "error:unknown_tool"), ("chat", "search_groups", "error:unknown_tool")]
    assert [r.tool for r in server.transcript.writes()] == []


def test_a_world_that_answers_unmodelled_tools_empty_says_so(server, client):
    """`unmodelled: empty` (the schema gates' worlds: examples judge whether a command runs) is named, opt-in."""
    server.load(Scenario.from_dict({"name": "lenient", "world": {}, "unmodelled": "empty"}))
    assert client.call("calendar", "list_events", {"x": 1}).payload == {"success": True, "result": {}}
    assert server.transcript.calls()[-1].outcome == "ok"


def test_protocol_methods_answered_and_recorded(server, client):
    load(server, "unique_group")
    init = client.rpc("im", "initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                           "clientInfo": {"name": "x", "version": "1"}})
    assert init.rpc["result"]["protocolVersion"] == "2025-03-26"
    assert "tools" in init.rpc["result"]["capabilities"]
    note = client.rpc("im", "notifications/initialized", rpc_id=None)
    assert (note.status, note.body) == (202, b"")
    tools = client.rpc("im", "tools/list", {})
    assert "search_groups" in [t["name"] for t in tools.rpc["result"]["tools"]]
    assert client.rpc("im", "ping").rpc["result"] == {}
    unknown = client.rpc("im", "resources/list")
    assert unknown.status == 200 and unknown.error["code"] == -32601
    t = server.transcript
    assert [r.rpc_method for r in t.records] == [
        "initialize", "notifications/initialized", "tools/list", "ping", "resources/list"]
    assert (t.count("tools/list"), t.count("initialize"), t.count("tools/call")) == (1, 1, 0)
    assert t.records[-1].outcome == "error:method_not_found"


def test_transcript_queries_clear_and_dump(server, client, tmp_path):
    load(server, "unique_group")
    client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10})
    client.call("chat", "get_group_members", {"cursor": "0", "openconversation_id": CID_A})
    client.call("contact", "search_contact_by_key_word", {"keyword": "张三"})
    t = server.transcript
    assert [r.seq for r in t] == [1, 2, 3] and len(t) == 3
    assert [r.tool for r in t.calls(product="chat")] == ["get_group_members"]
    assert t.call_tuples()[0] == ("/mcp/im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10})
    assert [r.tool for r in t.business_calls()] == ["get_group_members"]
    out = tmp_path / "t.jsonl"
    t.dump_jsonl(out)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [d["tool"] for d in lines] == ["search_groups", "get_group_members", "search_contact_by_key_word"]
    assert lines[0] == t.records[0].to_dict()
    t.clear()
    assert len(t) == 0 and t.records == []
    client.call("im", "search_groups", {"cursor": "0", "keyword": "x", "limit": 10})
    assert t.records[0].seq == 1


def test_env_points_every_product_at_the_server(server):
    env = server.env()
    assert len(PRODUCTS) == len(set(PRODUCTS))
    for product in PRODUCTS:
        assert env[endpoint_var(product)] == f"{server.url}/mcp/{product}"
    assert env["DINGTALK_AITABLE_HELPER_MCP_URL"].endswith("/mcp/aitable-helper")
    assert env["DWS_ALLOW_HTTP_ENDPOINTS"] == "1"
    assert env["DWS_TRUSTED_DOMAINS"] == "127.0.0.1,localhost,::1"
    assert server.product_url("im") == server.url + "/mcp/im"
    assert server.url.startswith("http://127.0.0.1:")


def test_isolation_env(tmp_path):
    env = isolation_env(tmp_path / "iso")
    root = tmp_path / "iso"
    assert env["HOME"] == env["USERPROFILE"] == str(root)
    assert Path(env["DWS_CONFIG_DIR"]).is_dir() and Path(env["DWS_KEYCHAIN_DIR"]).is_dir()
    assert env["DWS_DISABLE_KEYCHAIN"] == "1"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        assert env[name] == "http://127.0.0.1:1"
    assert env["NO_PROXY"] == "127.0.0.1,localhost,::1"
