"""The harness of the reference implementation's own tests: a tiny scripted fake MCP server (independent of
fake_mcp/, so the reference's wire behaviour is pinned on its own), the reference launched as a process, and its
parsed output. Used by tests/test_reference_impl.py and tests/test_reference_results.py."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DWS = REPO / "fixtures" / "reference" / "dws"
sys.path.insert(0, str(DWS.parent))

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


@contextlib.contextmanager
def serve() -> Iterator[tuple[ThreadingHTTPServer, dict[str, Fake]]]:
    """The scripted fake server; ``holder["fake"]`` is the Fake that answers (swapped per test by :func:`fresh`)."""
    holder: dict[str, Fake] = {"fake": Fake()}

    class Proxy:
        def reply(self, rec: dict[str, Any]) -> dict[str, Any]:
            return holder["fake"].reply(rec)

        def record(self, rec: dict[str, Any]) -> None:
            holder["fake"].record(rec)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), _handler(Proxy()))  # type: ignore[arg-type]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv, holder
    finally:
        srv.shutdown()
        srv.server_close()


def fresh(server: tuple[ThreadingHTTPServer, dict[str, Fake]]) -> Fake:
    """A clean Fake for one test on the running server."""
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
        tmp: Path | None = None, consulted: Path | None = None) -> Run:
    """One run of the reference against ``fake`` (None: no endpoint); ``consulted``: its coverage file
    (refdws.coverage: the switch points the run reached)."""
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
    if consulted is not None:
        env["DWS_CONSULTED_FILE"] = str(consulted)
    pre = ["--token", "t"] if token else []
    proc = subprocess.run([sys.executable, "-I", str(DWS), *pre, *argv], capture_output=True, text=True,
                          env=env, timeout=30)
    return Run(proc)


MEMBERS = ["chat", "+chat-members-list", "--member-types", "user"]
MESSAGES = ["chat", "+chat-messages", *T_ARGS]
SEARCH = ["chat", "+search-msg", "--query", "k", *WINDOW, "--no-enrich"]


def reference_mutants() -> Any:
    """The reference's mutant registry (refdws.mutants; the reference is on sys.path from here)."""
    from refdws import mutants

    return mutants
