"""Malformed requests, concurrency and shutdown: the server answers, records and keeps serving."""

from __future__ import annotations

import http.client
import json
import socket
import threading

import pytest

from fake_mcp import WIRE_HEADERS, FakeMCPServer, MCPClient, Scenario, tools_call_body
from fake_mcp.httpd import DRAIN_LIMIT

CID = "cidTESTa00000001"
SCENARIO = Scenario.build("robust", groups=[{"cid": CID, "title": "项目群A",
                                              "members": [{"name": "张三", "openDingtalkId": "odid-1"}]}])
SEARCH = {"cursor": "0", "keyword": "项目群A", "limit": 10}


@pytest.fixture(scope="module")
def server():
    with FakeMCPServer(scenario=SCENARIO) as srv:
        yield srv


@pytest.fixture
def client(server):
    server.reset()
    with MCPClient(server.url) as c:
        yield c


def still_serving(client: MCPClient) -> None:
    """The same keep-alive connection still answers a normal call."""
    reply = client.call("im", "search_groups", SEARCH)
    assert reply.status == 200 and reply.payload["result"][0]["openConversationId"] == CID


def raw_exchange(server: FakeMCPServer, data: bytes) -> bytes:
    """Send raw bytes on a fresh socket and read until the server closes or 2 s of silence."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(data)
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            pass
    return b"".join(chunks)


def test_non_json_body(server, client):
    reply = client.request("POST", "/mcp/im", b"this is not json{", WIRE_HEADERS)
    assert reply.status == 400 and reply.error["code"] == -32700
    assert server.transcript.records[-1].outcome == "error:parse_error"
    still_serving(client)


@pytest.mark.parametrize("body", [b"", b"\xff\xfe\x00garbage", b"[" * 100000])
def test_undecodable_bodies(server, client, body):
    reply = client.request("POST", "/mcp/im", body, WIRE_HEADERS)
    assert reply.status == 400 and reply.error["code"] == -32700
    still_serving(client)


@pytest.mark.parametrize(("payload", "outcome"), [
    ([{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}], "error:invalid_request"),
    ({"id": 1, "method": "tools/call", "params": {"name": "x"}}, "error:invalid_request"),
    ({"jsonrpc": "2.0", "id": 1, "method": 5}, "error:invalid_request"),
    ("just a string", "error:invalid_request"),
])
def test_invalid_requests(server, client, payload, outcome):
    reply = client.request("POST", "/mcp/im", json.dumps(payload).encode(), WIRE_HEADERS)
    assert reply.status == 400 and reply.error["code"] == -32600
    assert server.transcript.records[-1].outcome == outcome
    still_serving(client)


@pytest.mark.parametrize("params", [None, [], {}, {"name": ""}, {"name": 5}, {"arguments": {}},
                                    {"name": "search_groups", "arguments": [1]}])
def test_missing_or_bad_params(server, client, params):
    msg = {"jsonrpc": "2.0", "id": 9, "method": "tools/call"}
    if params is not None:
        msg["params"] = params
    reply = client.request("POST", "/mcp/im", json.dumps(msg).encode(), WIRE_HEADERS)
    assert reply.status == 200 and reply.error["code"] == -32602 and reply.rpc["id"] == 9
    rec = server.transcript.records[-1]
    assert (rec.rpc_method, rec.outcome) == ("tools/call", "error:invalid_params")
    still_serving(client)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "BREW"])
def test_wrong_http_method(server, client, method):
    reply = client.request(method, "/mcp/im", None, {"Accept": "application/json"})
    assert reply.status == 405 and reply.headers["allow"] == "POST"
    assert reply.error["code"] == -32600
    assert server.transcript.records[-1].outcome == "error:method_not_allowed"
    still_serving(client)


def test_head_gets_no_body(server, client):
    reply = client.request("HEAD", "/mcp/im", None, {})
    assert reply.status == 405 and reply.body == b""
    still_serving(client)


@pytest.mark.parametrize("path", ["/mcp/nope", "/", "/mcp", "/mcp/im/extra", "/other/im"])
def test_unknown_product_or_path(server, client, path):
    reply = client.request("POST", path, tools_call_body("search_groups", SEARCH), WIRE_HEADERS)
    assert reply.status == 404 and reply.error["code"] == -32600
    rec = server.transcript.records[-1]
    assert (rec.product, rec.path, rec.tool, rec.outcome) == (None, path, "search_groups", "error:unknown_product")
    still_serving(client)


def test_trailing_slash_and_query_string_route(server, client):
    for path in ("/mcp/im/", "/mcp/im?x=1"):
        reply = client.request("POST", path, tools_call_body("search_groups", SEARCH), WIRE_HEADERS)
        assert reply.status == 200 and reply.payload["hasMore"] is False
    assert [r.product for r in server.transcript.records] == ["im", "im"]


def test_ten_megabyte_body_is_refused_and_drained(server, client):
    big = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"blob":"' \
        + b"a" * (10 << 20) + b'"}}}'
    reply = client.request("POST", "/mcp/im", big, WIRE_HEADERS)
    assert reply.status == 413 and reply.error["code"] == -32600
    assert server.transcript.records[-1].outcome == "error:body_too_large"
    still_serving(client)  # drained: the same connection is still in sync


def test_absurd_content_length_closes_the_connection(server, client):
    data = (f"POST /mcp/im HTTP/1.1\r\nHost: x\r\nContent-Length: {DRAIN_LIMIT + 1}\r\n\r\n").encode() + b"{}"
    answer = raw_exchange(server, data)
    assert answer.startswith(b"HTTP/1.1 413 ") and b"Connection: close" in answer
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == -32600
    still_serving(client)


@pytest.mark.parametrize("length", ["abc", "-5"])
def test_bad_content_length(server, client, length):
    data = f"POST /mcp/im HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode()
    answer = raw_exchange(server, data)
    assert answer.startswith(b"HTTP/1.1 400 ") and b"Connection: close" in answer
    still_serving(client)


def test_garbage_request_line_gets_a_json_error(server, client):
    answer = raw_exchange(server, b"GARBAGE\r\n\r\n")
    assert b" 400 " in answer.split(b"\r\n", 1)[0]
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == -32600
    assert server.transcript.records[-1].outcome == "error:bad_http"
    still_serving(client)


def test_request_line_too_long(server, client):
    answer = raw_exchange(server, b"POST /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 414 ")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == -32600
    assert server.transcript.records[-1].outcome == "error:bad_http"
    still_serving(client)


def test_too_many_headers(server, client):
    headers = b"".join(b"X-H%d: v\r\n" % i for i in range(150))
    answer = raw_exchange(server, b"POST /mcp/im HTTP/1.1\r\n" + headers + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431 ")
    still_serving(client)


def test_world_bug_is_a_500_not_a_dead_connection(server, client, monkeypatch, capsys):
    def boom(args):
        raise RuntimeError("bug")

    monkeypatch.setattr(server.world, "search_groups", boom)
    reply = client.call("im", "search_groups", SEARCH)
    assert reply.status == 500 and reply.error["code"] == -32603
    assert server.transcript.records[-1].outcome == "error:internal"
    assert "internal error in im/search_groups" in capsys.readouterr().err
    monkeypatch.undo()
    still_serving(client)


def test_header_without_colon(server, client):
    answer = raw_exchange(server, b"POST /mcp/im HTTP/1.1\r\nno colon here\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 ")
    still_serving(client)


def test_chunked_body(server):
    body = tools_call_body("search_groups", SEARCH)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:20], body[20:])) + b"0\r\n\r\n"
    data = b"POST /mcp/im HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked
    answer = raw_exchange(server, data)
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["result"]["content"][0]["type"] == "text"


def test_http10_and_expect_continue(server):
    body = tools_call_body("search_groups", SEARCH)
    answer = raw_exchange(server, b"POST /mcp/im HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    assert answer.startswith(b"HTTP/1.1 200 ") and b"Connection: close" in answer
    answer = raw_exchange(server, b"POST /mcp/im HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                                  b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    assert answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 ")


def test_tools_call_without_id_is_not_executed(server, client):
    msg = {"jsonrpc": "2.0", "method": "tools/call",
           "params": {"name": "update_group_name", "arguments": {"group_name": "X", "openconversation_id": CID}}}
    reply = client.request("POST", "/mcp/chat", json.dumps(msg).encode(), WIRE_HEADERS)
    assert (reply.status, reply.body) == (202, b"")
    assert server.transcript.records[-1].outcome == "error:missing_id"
    assert server.world.group(CID)["title"] == "项目群A"


def test_only_loopback_hosts():
    with pytest.raises(ValueError):
        FakeMCPServer(host="0.0.0.0")
    with pytest.raises(ValueError):
        FakeMCPServer(host="example.invalid")


def test_concurrent_clients_lose_no_record():
    clients, calls = 8, 500
    with FakeMCPServer(scenario=SCENARIO) as srv:
        errors: list[str] = []

        def run(n: int) -> None:
            headers = dict(WIRE_HEADERS)
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
            try:
                for i in range(calls):
                    headers["X-Cli-Execution-Id"] = f"c{n}-{i}"
                    conn.request("POST", "/mcp/im", tools_call_body("search_groups", SEARCH, rpc_id=i), headers)
                    resp = conn.getresponse()
                    rpc = json.loads(resp.read())
                    if resp.status != 200 or rpc["id"] != i:
                        errors.append(f"{n}-{i}: {resp.status}")
            finally:
                conn.close()

        threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        records = srv.transcript.records
        assert len(records) == clients * calls == srv.transcript.arrived
        assert [r.seq for r in records] == list(range(1, clients * calls + 1))
        sent = {f"c{n}-{i}" for n in range(clients) for i in range(calls)}
        assert {r.headers["x-cli-execution-id"] for r in records} == sent
        for n in range(clients):  # each connection's calls are recorded in its own order
            mine = [int(r.headers["x-cli-execution-id"].split("-")[1]) for r in records
                    if r.headers["x-cli-execution-id"].startswith(f"c{n}-")]
            assert mine == list(range(calls))


def test_shutdown_leaves_no_thread_and_no_open_port():
    srv = FakeMCPServer(scenario=SCENARIO).start()
    port, prefix = srv.port, f"fake_mcp-{srv.port}-"
    idle = []
    for _ in range(3):  # keep-alive connections left open by their clients
        c = MCPClient(srv.url)
        assert c.call("im", "search_groups", SEARCH).status == 200
        idle.append(c)
    half = socket.create_connection(("127.0.0.1", port))
    half.sendall(b"POST /mcp/im HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")  # stuck mid-body
    assert [t for t in threading.enumerate() if t.name.startswith(prefix)]
    srv.stop()
    srv.stop()  # idempotent
    assert not srv.running
    assert not [t for t in threading.enumerate() if t.name.startswith(prefix)]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    for c in idle:
        c.close()
    half.close()


def test_ipv6_loopback_when_available():
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    with FakeMCPServer(host="::1", scenario=SCENARIO) as srv:
        assert srv.url.startswith("http://[::1]:")
        conn = http.client.HTTPConnection("::1", srv.port, timeout=5)
        conn.request("POST", "/mcp/im", tools_call_body("search_groups", SEARCH), WIRE_HEADERS)
        assert conn.getresponse().status == 200
        conn.close()
