"""JSON-RPC / MCP layer of the fake backend and its public face, :class:`FakeMCPServer`.

One POST to ``/mcp/<product>`` is one JSON-RPC message (docs/wire.md §2).  Every request is recorded before
its reply is written (so a client that saw the reply also sees the record), including malformed ones:
a ``tools/list`` or an ``initialize`` from an implementation is evidence for a gate, not a crash.
``tools/call`` goes through the scenario's overrides first, then to the world model.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import jsonrpc
from .env import PRODUCTS, endpoint_env
from .httpd import Handler, HTTPServer
from .overrides import OverrideSet, endless, render
from .scenario import Scenario
from .transcript import Record, Transcript
from .world import World, product_tools

#: Largest request body that is parsed; bigger ones get HTTP 413 and a JSON-RPC error.
DEFAULT_MAX_BODY = 1 << 20
PROTOCOL_VERSION = "2025-06-18"


class _State:
    """Everything a scenario determines; replaced as a whole by ``load``/``reset`` (atomic swap)."""

    __slots__ = ("counts", "lock", "overrides", "scenario", "world")

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.world = World(scenario.world, unmodelled=scenario.unmodelled)
        self.overrides = OverrideSet(scenario.overrides)
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def next_call(self, tool: str) -> int:
        """1-based number of this call among the calls of ``tool`` since the scenario was (re)loaded."""
        with self.lock:
            n = self.counts.get(tool, 0) + 1
            self.counts[tool] = n
            return n


class _Exchange:
    """One request being answered: what gets recorded, and the single way to reply."""

    __slots__ = ("arguments", "arrived", "h", "method", "product", "rpc_id", "seq", "tool", "transcript")

    def __init__(self, transcript: Transcript, h: Handler, product: str | None) -> None:
        self.seq, self.arrived = transcript.next_seq(), time.time()
        self.transcript, self.h, self.product = transcript, h, product
        self.method: str | None = None
        self.rpc_id: Any = None
        self.tool: str | None = None
        self.arguments: dict[str, Any] | None = None

    def reply(self, status: int, outcome: str, body: bytes = b"", *, send: bool = True, **kw: Any) -> None:
        """Record, then write the reply (``send=False``: record only, e.g. for a dropped connection)."""
        h = self.h
        self.transcript.add(Record(self.seq, self.arrived, self.product, getattr(h, "path", None) or "",
                                   getattr(h, "command", None) or "",
                                   self.method, self.rpc_id, self.tool, self.arguments, h.hdict, status,
                                   outcome))
        if send:
            h.reply(status, body, **kw)

    def error(self, status: int, outcome: str, code: int, message: str) -> None:
        self.reply(status, outcome, jsonrpc.encode_error(self.rpc_id, code, message))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class FakeMCPServer:
    """Loopback MCP server with one JSON-RPC endpoint per product (``/mcp/<product>``).

    ``load`` a scenario to set the backend state and the fault overrides; read ``transcript`` to see
    what the implementation sent.  Usable as a context manager.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, scenario: Any = None,
                 products: tuple[str, ...] = PRODUCTS, max_body: int = DEFAULT_MAX_BODY) -> None:
        if not _loopback(host):
            raise ValueError(f"fake_mcp only listens on loopback, not {host!r}")
        self.host = host
        self._port = port
        self.products = tuple(products)
        self.max_body = max_body
        self.transcript = Transcript()
        self._routes = {f"/mcp/{p}{slash}": p for p in self.products for slash in ("", "/")}
        self._state = _State(Scenario.coerce(scenario) if scenario is not None else Scenario.empty())
        self._httpd: HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FakeMCPServer:
        """Bind and serve in a background thread (returns self; a no-op when already running)."""
        if self._httpd is not None:
            return self
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        self._stopping.clear()
        self._httpd = HTTPServer((self.host, self._port), self, family)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"{self._httpd.thread_prefix}serve", daemon=True)
        self._thread.start()
        self._state.world.base_url = self.url
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every connection, join every thread.  Idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()  # ends injected delays early
        httpd.shutdown()
        if thread is not None:
            thread.join(timeout)
        httpd.server_close()
        httpd.close_all(timeout)
        self._httpd = self._thread = None

    def __enter__(self) -> FakeMCPServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeMCPServer is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def product_url(self, product: str) -> str:
        return f"{self.url}/mcp/{product}"

    def env(self) -> dict[str, str]:
        """Endpoint variables for every product plus the trusted-loopback variables."""
        return endpoint_env(self.url, self.products)

    # -- scenario ------------------------------------------------------------------------------
    def load(self, scenario: Scenario | dict[str, Any] | str | Path) -> Scenario:
        """Replace world and overrides with a fresh copy of ``scenario``; clear the transcript.

        An invalid scenario raises :class:`ScenarioError` and leaves the previous one in place.
        """
        self._swap(_State(Scenario.coerce(scenario)))
        return self._state.scenario

    def reset(self) -> None:
        """Re-apply the last loaded scenario from scratch (fresh world, call counts at 0)."""
        self._swap(_State(self._state.scenario))

    def _swap(self, state: _State) -> None:
        """Serve ``state`` from now on (its downloads at this server's URL) with a clear transcript."""
        if self._httpd is not None:
            state.world.base_url = self.url
        self._state = state
        self.transcript.clear()

    @property
    def scenario(self) -> Scenario:
        return self._state.scenario

    @property
    def world(self) -> World:
        """Live backend state (``srv.world.group(cid)`` shows whether a write landed)."""
        return self._state.world

    # -- request handling (called from connection threads) ----------------------------------
    def http_error(self, h: Handler, status: int, message: str) -> None:
        """An HTTP-level error found while parsing (bad request line, header too long...)."""
        ex = _Exchange(self.transcript, h, None)
        try:
            ex.error(status, "error:bad_http", jsonrpc.INVALID_REQUEST, message)
        except OSError:
            pass

    def serve(self, h: Handler) -> None:
        """Answer one parsed HTTP request: record it, then reply (or drop the connection)."""
        path = h.path
        product = self._routes.get(path)
        if product is None:
            product = self._routes.get(path.split("?", 1)[0])
        ex = _Exchange(self.transcript, h, product)
        body, why = h.read_body(self.max_body)
        if h.command == "GET" and (content := self._state.world.file_content(path)) is not None:
            ex.reply(200, "ok", content, content_type="text/markdown; charset=utf-8")  # a download (.files)
            return
        if h.command != "POST":
            ex.reply(405, "error:method_not_allowed", jsonrpc.encode_error(
                None, jsonrpc.INVALID_REQUEST, f"HTTP method {h.command} not allowed; use POST"),
                extra=(("Allow", "POST"),))
            return
        if body is None:
            if why == "body_too_large":
                ex.error(413, "error:body_too_large", jsonrpc.INVALID_REQUEST, "request body too large")
            else:
                ex.error(400, f"error:{why}", jsonrpc.INVALID_REQUEST, "invalid request body length")
            return
        try:
            msg = json.loads(body)
        except (ValueError, RecursionError):
            ex.error(400, "error:parse_error", jsonrpc.PARSE_ERROR, "Parse error")
            return
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
            ex.rpc_id = msg.get("id") if isinstance(msg, dict) else None
            why = "batch requests are not supported" if isinstance(msg, list) else "Invalid Request"
            ex.error(400, "error:invalid_request", jsonrpc.INVALID_REQUEST, why)
            return
        self._dispatch(ex, msg)

    def _dispatch(self, ex: _Exchange, msg: dict[str, Any]) -> None:
        method: str = msg["method"]
        params = msg.get("params")
        ex.method, ex.rpc_id = method, msg.get("id")
        if method == "tools/call" and isinstance(params, dict):
            name, arguments = params.get("name"), params.get("arguments")
            ex.tool = name if isinstance(name, str) else None
            ex.arguments = arguments if isinstance(arguments, dict) else None
        if ex.product is None:
            ex.error(404, "error:unknown_product", jsonrpc.INVALID_REQUEST, f"unknown MCP endpoint {ex.h.path}")
        elif "id" not in msg:  # a notification: never answered with a body, never executed
            ex.reply(202, "ok" if method.startswith("notifications/") else "error:missing_id")
        elif method == "tools/call":
            raw_args = params.get("arguments") if isinstance(params, dict) else None
            if not ex.tool or (raw_args is not None and not isinstance(raw_args, dict)):
                ex.error(200, "error:invalid_params", jsonrpc.INVALID_PARAMS,
                         "params.name (string) and params.arguments (object) are required")
            else:
                self._tools_call(ex, ex.tool, ex.arguments or {})
        elif method == "initialize":
            requested = params.get("protocolVersion") if isinstance(params, dict) else None
            result = {"protocolVersion": requested if isinstance(requested, str) else PROTOCOL_VERSION,
                      "capabilities": {"tools": {"listChanged": False}},
                      "serverInfo": {"name": "fake_mcp", "version": "1"}}
            ex.reply(200, "ok", jsonrpc.encode_result(ex.rpc_id, result))
        elif method == "tools/list":
            tools = [{"name": t, "description": f"fake_mcp world tool {ex.product}/{t}",
                      "inputSchema": {"type": "object"}} for t in product_tools(ex.product)]
            ex.reply(200, "ok", jsonrpc.encode_result(ex.rpc_id, {"tools": tools}))
        elif method == "ping":
            ex.reply(200, "ok", jsonrpc.encode_result(ex.rpc_id, {}))
        else:
            ex.error(200, "error:method_not_found", jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")

    def _tools_call(self, ex: _Exchange, tool: str, args: dict[str, Any]) -> None:
        state = self._state
        product = ex.product or ""
        call_no = state.next_call(tool)
        kinds: list[str] = []
        final: dict[str, Any] | None = None
        if tool in state.overrides.by_tool:
            for r in state.overrides.replies(tool, product, call_no, args,
                                             lambda: state.world.page_index(tool, args)):
                kinds.append(r["kind"])
                if r["kind"] == "delay":
                    self._stopping.wait(float(r["seconds"]))
                else:
                    final = r
            if final is not None and final.get("delay"):
                self._stopping.wait(float(final["delay"]))
        outcome = "fault:" + "+".join(kinds) if kinds else "ok"
        if final is None and state.world.handler(product, tool) is None and not state.world.answers_unmodelled():
            # MCP: "Unknown tools" are a protocol error, -32602 (never a success the client could pass on)
            ex.error(200, "error:unknown_tool", jsonrpc.INVALID_PARAMS, f"Unknown tool: {tool}")
            return
        if final is None:
            try:
                data = jsonrpc.encode_payload(ex.rpc_id, state.world.call(product, tool, args))
            except Exception as exc:  # a bug in the world model must not kill the connection
                sys.stderr.write(f"fake_mcp: internal error in {product}/{tool}: {exc!r}\n")
                ex.error(500, "error:internal", jsonrpc.INTERNAL_ERROR, repr(exc))
                return
            ex.reply(200, outcome, data)
            return
        if final["kind"] == "endless":  # the world answers, the override keeps its cursor going
            handled = state.world.handler(product, tool) is not None or state.world.answers_unmodelled()
            payload = endless(state.world.call(product, tool, args) if handled else {}, call_no)
            ex.reply(200, outcome, jsonrpc.encode_payload(ex.rpc_id, payload))
            return
        rendered = render(final, ex.rpc_id)
        if rendered.status == 0:  # drop: record it, then close without sending a byte
            ex.h.close_connection = True
            ex.reply(0, outcome, send=False)
            return
        ex.reply(rendered.status, outcome, rendered.body, content_type=rendered.content_type,
                 extra=rendered.headers, close=rendered.close)
