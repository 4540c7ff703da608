"""Every override kind and every matching criterion of fake_mcp's fault injection."""

from __future__ import annotations

import http.client
import threading
from pathlib import Path

import pytest

from fake_mcp import BUSINESS_PRESETS, REPLY_KINDS, FakeMCPServer, MCPClient, Reply, Scenario, override

BASIC = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios" / "basic"
CID_A = "cidTESTa00000001"
CONV_ARGS = {"limit": 100}
UPDATE_ARGS = {"group_name": "新名字", "openconversation_id": CID_A}


def with_faults(server: FakeMCPServer, *overrides: dict, base: str = "unique_group") -> None:
    server.load(Scenario.load(BASIC / f"{base}.json").with_overrides(*overrides))


# -- business failures -----------------------------------------------------------------------
def test_d1_replay_as_text_payload(server, client):
    with_faults(server, override("list_all_conversations", Reply.business("NETWORK_ERROR_QUERYTOOLMETA"),
                                 product="im", call=1))
    reply = client.call("im", "list_all_conversations", CONV_ARGS)
    assert reply.status == 200 and not reply.is_error
    assert reply.rpc["result"]["content"][0]["type"] == "text"
    p = reply.payload
    assert (p["success"], p["code"], p["trace_id"], p["retryable"]) == (False, "NETWORK_ERROR", "T1", True)
    assert "queryToolMeta" in p["technical_detail"] and "UNAVAILABLE" in p["technical_detail"]
    assert server.transcript.records[-1].outcome == "fault:business"
    # call=1 only: the second call is answered by the world
    assert client.call("im", "list_all_conversations", CONV_ARGS).payload["result"]["hasMore"] is False
    assert server.transcript.records[-1].outcome == "ok"


@pytest.mark.parametrize("preset", sorted(BUSINESS_PRESETS))
def test_every_preset(server, client, preset):
    with_faults(server, override("get_group_members", Reply.business(preset)))
    payload = client.call("chat", "get_group_members", {"cursor": "0", "openconversation_id": CID_A}).payload
    assert payload == BUSINESS_PRESETS[preset]


@pytest.mark.parametrize(("carrier", "is_error", "structured"), [
    ("text", False, False), ("isError", True, False), ("structured", False, True),
    ("structured_isError", True, True)])
def test_business_carriers(server, client, carrier, is_error, structured):
    reply_dict = Reply.business("NETWORK_ERROR_UNAVAILABLE", as_=carrier, traceId="TX", trace_id=None,
                                execution_started=False)
    with_faults(server, override("search_groups", reply_dict))
    reply = client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10})
    assert reply.is_error is is_error
    assert ("structuredContent" in reply.rpc["result"]) is structured
    assert reply.payload["traceId"] == "TX" and "trace_id" not in reply.payload
    assert reply.payload["execution_started"] is False and reply.payload["code"] == "NETWORK_ERROR"


def test_payload_kind_returns_exact_payload(server, client):
    exact = {"result": [{"title": "项目群A", "openConversationId": CID_A}] * 10}  # full page, no metadata
    with_faults(server, override("search_groups", Reply.payload(exact), call=2))
    first = client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10}).payload
    second = client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10}).payload
    assert first["hasMore"] is False and second == exact


def test_result_kind_structured_content_differs_from_text(server, client):
    result = {"content": [{"type": "text", "text": '{"from":"text"}'}], "structuredContent": {"from": "structured"},
              "isError": True}
    with_faults(server, override("search_groups", Reply.result(result)))
    reply = client.call("im", "search_groups", {"keyword": "x"})
    assert reply.rpc["result"] == result and reply.payload == {"from": "structured"} and reply.is_error


def test_text_kind_non_json_is_error(server, client):
    with_faults(server, override("get_group_members", Reply.text("opencid or cid is required", is_error=True)))
    reply = client.call("chat", "get_group_members", {"cursor": "0", "openconversation_id": CID_A})
    assert reply.is_error and reply.payload is None
    assert reply.rpc["result"]["content"] == [{"type": "text", "text": "opencid or cid is required"}]


# -- transport-level faults ------------------------------------------------------------------
@pytest.mark.parametrize(("status", "retry_after"), [(429, 1), (500, None), (503, "2")])
def test_http_status_faults(server, client, status, retry_after):
    with_faults(server, override("update_group_name", Reply.http(status, retry_after=retry_after)))
    reply = client.call("chat", "update_group_name", UPDATE_ARGS)
    assert reply.status == status and reply.rpc is None
    assert reply.headers.get("retry-after") == (None if retry_after is None else str(retry_after))
    assert server.world.group(CID_A)["title"] == "项目群A"  # a faulted write is not applied
    assert server.transcript.writes()[0].outcome == "fault:http"
    assert server.transcript.writes()[0].status == status
    # the connection stays usable after an error status
    assert client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10}).status == 200


def test_http_fault_with_json_body_and_headers(server, client):
    reply_dict = {"kind": "http", "status": 502, "body": {"error": "bad gateway"}, "headers": {"X-Fake": "1"}}
    with_faults(server, override("search_groups", reply_dict))
    reply = client.call("im", "search_groups", {"keyword": "x"})
    assert (reply.status, reply.rpc, reply.headers["x-fake"]) == (502, {"error": "bad gateway"}, "1")


def test_jsonrpc_error(server, client):
    with_faults(server, override("get_group_members", Reply.jsonrpc_error(-32602, "Invalid params", {"f": "x"})))
    reply = client.call("chat", "get_group_members", {"cursor": "0", "openconversation_id": CID_A}, rpc_id=7)
    assert reply.status == 200 and reply.rpc["id"] == 7
    assert reply.error == {"code": -32602, "message": "Invalid params", "data": {"f": "x"}}
    assert "result" not in reply.rpc


def test_malformed_json_reply(server, client):
    with_faults(server, override("search_groups", Reply.malformed()))
    reply = client.call("im", "search_groups", {"keyword": "x"})
    assert reply.status == 200 and reply.headers["content-type"] == "application/json"
    assert reply.rpc is None and reply.body.startswith(b'{"jsonrpc":"2.0"')


def test_drop_closes_without_reply_and_server_keeps_serving(server):
    with_faults(server, override("search_groups", Reply.drop(), call=1))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    from fake_mcp import WIRE_HEADERS, tools_call_body

    conn.request("POST", "/mcp/im", tools_call_body("search_groups", {"keyword": "x"}), WIRE_HEADERS)
    with pytest.raises(http.client.RemoteDisconnected):
        conn.getresponse()
    conn.close()
    rec = server.transcript.records[-1]
    assert (rec.status, rec.outcome, rec.tool) == (0, "fault:drop", "search_groups")
    with MCPClient(server.url) as c:
        assert c.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10}).status == 200


def test_delay_then_world_reply_and_delay_then_fault(server, client):
    with_faults(server,
                override("search_groups", Reply.delay(0.01)),
                override("search_groups", Reply.http(503), call=2))
    first = client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10})
    assert first.status == 200 and first.payload["result"][0]["openConversationId"] == CID_A
    second = client.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10})
    assert second.status == 503
    assert [r.outcome for r in server.transcript.records] == ["fault:delay", "fault:delay+http"]


def test_reply_level_delay_key(server, client):
    with_faults(server, override("search_groups", {"kind": "business", "preset": "RATE_LIMITED", "delay": 0.01}))
    assert client.call("im", "search_groups", {"keyword": "x"}).payload["code"] == "RATE_LIMITED"


def test_stop_interrupts_a_long_delay():
    srv = FakeMCPServer(scenario=Scenario.build("slow", overrides=[override("search_groups", Reply.delay(60))]))
    srv.start()
    outcome: list[object] = []

    def call() -> None:
        try:
            with MCPClient(srv.url, timeout=30) as c:
                outcome.append(c.call("im", "search_groups", {"keyword": "x"}).status)
        except (OSError, http.client.HTTPException) as exc:
            outcome.append(type(exc).__name__)

    worker = threading.Thread(target=call)
    worker.start()
    prefix = f"fake_mcp-{srv.port}-"
    while srv.transcript.arrived == 0 and worker.is_alive():
        threading.Event().wait(0.005)  # the call is now sleeping in its injected delay
    srv.stop()
    worker.join(20)
    assert not worker.is_alive() and len(outcome) == 1
    assert not [t for t in threading.enumerate() if t.name.startswith(prefix)]


# -- matching ------------------------------------------------------------------------------
def test_failure_on_page_n_of_a_paginated_read(server, client):
    with_faults(server, override("list_all_conversations", Reply.business("NETWORK_ERROR_UNAVAILABLE"), page=2),
                base="conversations_multi_page")
    p1 = client.call("im", "list_all_conversations", {"limit": 100}).payload
    assert p1["result"]["nextCursor"] == "2"
    p2 = client.call("im", "list_all_conversations", {"cursor": 2, "limit": 100}).payload
    assert p2["success"] is False and p2["code"] == "NETWORK_ERROR"
    p3 = client.call("im", "list_all_conversations", {"cursor": 4, "limit": 100}).payload
    assert p3["result"]["hasMore"] is False
    assert [r.outcome for r in server.transcript.records] == ["ok", "fault:business", "ok"]


def test_page_of_search_groups_with_string_cursor(server, client):
    with_faults(server, override("search_groups", Reply.http(500), page=2), base="paginated_groups")
    assert client.call("im", "search_groups", {"cursor": "0", "keyword": "周会群", "limit": 10}).status == 200
    assert client.call("im", "search_groups", {"cursor": "10", "keyword": "周会群", "limit": 10}).status == 500
    assert client.call("im", "search_groups", {"cursor": "opaque", "keyword": "周会群", "limit": 10}).status == 200


def test_call_numbers_list(server, client):
    with_faults(server, override("search_groups", Reply.http(500), call=[1, 3]))
    statuses = [client.call("im", "search_groups", {"keyword": "x"}).status for _ in range(4)]
    assert statuses == [500, 200, 500, 200]
    server.reset()  # call numbers restart with the scenario
    assert client.call("im", "search_groups", {"keyword": "x"}).status == 500


def test_product_and_args_matching(server, client):
    with_faults(server,
                override("get_group_invite_url", Reply.http(503), product="chat"),
                override("search_groups", Reply.business("PERMISSION_DENIED"), args={"keyword": "项目群A"}))
    assert client.call("im", "get_group_invite_url", {"openConversationId": CID_A}).status == 200
    assert client.call("chat", "get_group_invite_url", {"openConversationId": CID_A}).status == 503
    assert client.call("im", "search_groups", {"keyword": "周报群"}).payload["hasMore"] is False
    assert client.call("im", "search_groups", {"keyword": "项目群A"}).payload["code"] == "PERMISSION_DENIED"


def test_first_match_wins_and_with_overrides_prepends(server, client):
    base = Scenario.build("order", overrides=[override("search_groups", Reply.http(500))])
    server.load(base.with_overrides(override("search_groups", Reply.http(429))))
    assert client.call("im", "search_groups", {"keyword": "x"}).status == 429
    server.load(base)
    assert client.call("im", "search_groups", {"keyword": "x"}).status == 500


def test_endless_keeps_the_worlds_rows_and_claims_more_with_a_fresh_cursor_every_call(server, client):
    """A listing that never ends (issue 34: a cursor never ends): where the tool keeps its pagination (beside a
    top-level row list, or in result), hasMore:true and an advancing cursor, call after call."""
    with_faults(server, override("list_all_conversations", Reply.endless()),
                override("search_groups", Reply.endless()))
    cursors = []
    for _ in range(3):
        page = client.call("im", "list_all_conversations", CONV_ARGS).payload["result"]
        assert page["hasMore"] is True and page["conversations"]
        cursors.append(page["nextCursor"])
    assert len(set(cursors)) == 3 and all(c.isdigit() for c in cursors)
    top = client.call("im", "search_groups", {"keyword": "项目群"}).payload
    assert top["hasMore"] is True and top["nextCursor"] and isinstance(top["result"], list)
    assert server.transcript.records[-1].outcome == "fault:endless"


def test_every_reply_kind_is_covered_here():
    covered = {"payload", "business", "result", "text", "http", "jsonrpc_error", "malformed", "drop", "delay",
               "endless"}
    assert covered == set(REPLY_KINDS)
