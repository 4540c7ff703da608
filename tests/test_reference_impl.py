"""Fast smoke tests of the reference `dws` (fixtures/reference) against a tiny in-test fake MCP server.

The fake here is deliberately minimal and independent of fake_mcp/: it scripts replies per tool and records
every request, so these tests pin the reference's wire behaviour on their own. The mutant probes at the end
check that every registered mutant really changes observable behaviour (the gate-level mutation matrix lives
with the runtime gates).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DWS = REPO / "fixtures" / "reference" / "dws"
sys.path.insert(0, str(DWS.parent))
from refdws import mutants as ref_mutants  # noqa: E402

CID_A = "cidTESTa00000001"
CID_B = "cidTESTb00000002"
NAME_A = "项目群A"
PRODUCTS = ("im", "chat", "bot", "contact")
T_ARGS = ["--time", "2026-01-01 00:00:00"]
WINDOW = ["--start", "2026-01-01T00:00:00+08:00", "--end", "2026-01-02T00:00:00+08:00"]
BACKEND_DETAIL = ("调用 McpService.queryToolMeta 失败: status = StatusCode.UNAVAILABLE; connect: "
                  "Connection refused (111)")
NETWORK = {"success": False, "code": "NETWORK_ERROR", "trace_id": "T1", "technical_detail": BACKEND_DETAIL,
           "retryable": True}


class Fake:
    """Scripted replies per tool (consumed in order), then world-backed defaults; records every request."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.script: dict[str, list[dict[str, Any]]] = {}
        self.groups: list[tuple[str, str]] = [(CID_A, NAME_A)]
        self.lock = threading.Lock()

    def on(self, tool: str, *replies: dict[str, Any]) -> Fake:
        self.script.setdefault(tool, []).extend(replies)
        return self

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.records if r["method"] == "tools/call" and (tool is None or r["tool"] == tool)]

    def business(self) -> list[dict[str, Any]]:
        return [r for r in self.calls() if r["tool"] not in ("search_groups", "search_contact_by_key_word")]

    def default(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if tool == "search_groups":
            hits = [(c, t) for c, t in self.groups if args.get("keyword", "") in t]
            start = int(args.get("cursor") or 0)
            page = hits[start:start + int(args.get("limit") or 10)]
            more = start + len(page) < len(hits)
            body: dict[str, Any] = {"result": [{"openConversationId": c, "title": t} for c, t in page],
                                    "hasMore": more}
            if more:
                body["nextCursor"] = str(start + len(page))
            return {"payload": body}
        table = {
            "get_group_members": {"result": {"hasMore": False, "members": [
                {"memberEmpName": "张三", "openDingtalkId": "odid-1"}]}},
            "list_group_bots": {"result": {"bots": [{"name": "bot", "robotCode": "rc-1"}]}},
            "search_messages": {"result": {"hasMore": False, "messages": [
                {"openMessageId": "m1", "openConversationId": CID_A, "content": "hi"}]}},
            "list_messages_by_ids": {"result": {"messages": [{"openMessageId": "m1", "content": "hi!"}]}},
            "list_all_conversations": {"result": {"hasMore": False, "nextCursor": "", "conversations": [
                {"openConversationId": CID_A, "title": NAME_A}]}},
            "list_conversation_message_v2": {"result": {"hasMore": False, "messages": [{"openMessageId": "m1"}]}},
            "search_contact_by_key_word": {"result": [{"name": "张三", "openDingtalkId": "odid-1",
                                                       "userId": "u1"}]},
        }
        return {"payload": table.get(tool, {"success": True, "result": {}})}

    def record(self, rec: dict[str, Any]) -> None:
        with self.lock:
            self.records.append(rec)

    def reply(self, rec: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.records.append(rec)
            queue = self.script.get(rec["tool"] or "")
            if queue:
                return queue.pop(0)
        return self.default(rec["tool"] or "", rec["arguments"] or {})


def _handler(fake: Fake) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            msg = json.loads(raw or b"{}")
            params = msg.get("params") or {}
            rec = {"product": self.path.rsplit("/", 1)[-1], "method": msg.get("method"),
                   "tool": params.get("name"), "arguments": params.get("arguments"),
                   "headers": {k.lower(): v for k, v in self.headers.items()}}
            if msg.get("method") != "tools/call":
                fake.record(rec)
                return self._send(200, {"jsonrpc": "2.0", "id": msg.get("id"), "result": {}})
            spec = fake.reply(rec)
            if "drop" in spec:
                self.close_connection = True
                return
            if "http" in spec:
                return self._send(spec["http"], {"error": "boom"})
            if "rpc_error" in spec:
                return self._send(200, {"jsonrpc": "2.0", "id": msg.get("id"),
                                        "error": {"code": spec["rpc_error"], "message": "invalid params"}})
            result: dict[str, Any]
            if "structured" in spec:
                result = {"structuredContent": spec["structured"], "content": []}
            elif "text" in spec:
                result = {"content": [{"type": "text", "text": spec["text"]}]}
            else:
                result = {"content": [{"type": "text", "text": json.dumps(spec["payload"], ensure_ascii=False)}]}
            if spec.get("isError"):
                result["isError"] = True
            self._send(200, {"jsonrpc": "2.0", "id": msg.get("id"), "result": result})

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return H


@pytest.fixture(scope="module")
def server():
    holder: dict[str, Fake] = {"fake": Fake()}

    class Proxy:
        def reply(self, rec: dict[str, Any]) -> dict[str, Any]:
            return holder["fake"].reply(rec)

        def record(self, rec: dict[str, Any]) -> None:
            holder["fake"].record(rec)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), _handler(Proxy()))  # type: ignore[arg-type]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv, holder
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def fake(server) -> Fake:
    srv, holder = server
    holder["fake"] = Fake()
    holder["fake"].port = srv.server_address[1]  # type: ignore[attr-defined]
    return holder["fake"]


class Run:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.out = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else None
        err = proc.stderr.strip()
        self.err = json.JSONDecoder().raw_decode(err)[0]["error"] if err.startswith("{") else None


def dws(fake: Fake | None, *argv: str, token: bool = True, mutant: str = "", trusted: bool = True,
        tmp: Path | None = None) -> Run:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp or "/nonexistent"),
           "HTTP_PROXY": "http://127.0.0.1:1", "HTTPS_PROXY": "http://127.0.0.1:1",
           "NO_PROXY": "127.0.0.1,localhost,::1", "DWS_DISABLE_KEYCHAIN": "1"}
    if trusted:
        env.update(DWS_ALLOW_HTTP_ENDPOINTS="1", DWS_TRUSTED_DOMAINS="127.0.0.1,localhost,::1")
    if fake is not None:
        for p in PRODUCTS:
            env[f"DINGTALK_{p.upper()}_MCP_URL"] = f"http://127.0.0.1:{fake.port}/mcp/{p}"  # type: ignore[attr-defined]
    if mutant:
        env["DWS_REF_MUTANT"] = mutant
    pre = ["--token", "t"] if token else []
    proc = subprocess.run([sys.executable, "-I", str(DWS), *pre, *argv], capture_output=True, text=True,
                          env=env, timeout=30)
    return Run(proc)


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

MEMBERS = ["chat", "+chat-members-list", "--member-types", "user"]
MESSAGES = ["chat", "+chat-messages", *T_ARGS]
SEARCH = ["chat", "+search-msg", "--query", "k", *WINDOW, "--no-enrich"]
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
