"""Client side of the wire: the real binary's parse rule and a keep-alive test client.

``parse_tool_result`` restates ``internal/transport/client.go: ToolCallResult.UnmarshalJSON`` so that
tests (here and in ``pytest_dws``) judge a reply exactly as the binary would: ``structuredContent``
wins, otherwise the first text block that parses as a JSON object is the payload.
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: The request headers the e81 binary sends (docs/wire.md §2), with a placeholder token.
WIRE_HEADERS: dict[str, str] = {
    "Content-Type": "application/json",
    "Accept": "application/json",
    "Authorization": "Bearer t",
    "X-User-Access-Token": "t",
    "X-Cli-Source": "dws-cli",
    "X-Cli-Version": "v0.0.0-fake",
    "X-Cli-Execution-Id": "exec-0001",
    "X-Dws-Agent-Id": "agent-fake",
    "X-Dws-Source": "dws",
    "X-Dingtalk-Source": "dws",
    "X-Dingtalk-Scenario-Code": "fake",
    "Claw-Type": "fake",
}


def parse_tool_result(result: Any) -> dict[str, Any] | None:
    """Payload of an MCP tool result as the real binary reads it (None when there is none)."""
    if not isinstance(result, dict):
        return None
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        return structured
    for block in result.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            try:
                value = json.loads(block["text"])
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def tools_call_body(tool: str, arguments: dict[str, Any], rpc_id: Any = 3) -> bytes:
    """Request body laid out like the Go binary's (docs/wire.md §2): struct fields in declaration order,
    map keys (``params`` and ``arguments``) sorted, UTF-8 unescaped, id 3 by default."""
    def enc(value: Any, sort: bool = False) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort)

    return ('{"jsonrpc":"2.0","id":' + enc(rpc_id) + ',"method":"tools/call","params":{"arguments":'
            + enc(arguments, sort=True) + ',"name":' + enc(tool) + "}}").encode("utf-8")


@dataclass
class ToolReply:
    """One HTTP reply, decoded as far as it goes."""

    status: int
    headers: dict[str, str]
    body: bytes
    rpc: dict[str, Any] | None  # the JSON-RPC response object, None if the body is not JSON
    payload: dict[str, Any] | None  # parse_tool_result(rpc["result"])
    is_error: bool  # result.isError

    @property
    def error(self) -> dict[str, Any] | None:
        """The JSON-RPC ``error`` object, if any."""
        return self.rpc.get("error") if isinstance(self.rpc, dict) else None


class MCPClient:
    """Keep-alive HTTP/1.1 client speaking the binary's wire format (for tests and the bench)."""

    def __init__(self, base_url: str, headers: dict[str, str] | None = None, timeout: float = 10.0) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = dict(WIRE_HEADERS if headers is None else headers)
        self.timeout = timeout
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> ToolReply:
        """Send one raw request and decode the reply (``rpc``/``payload`` stay None when not JSON)."""
        self.conn.request(method, path, body=body, headers=self.headers if headers is None else headers)
        resp = self.conn.getresponse()
        data = resp.read()
        rpc: Any = None
        try:
            rpc = json.loads(data) if data else None
        except ValueError:
            rpc = None
        rpc = rpc if isinstance(rpc, dict) else None
        result = rpc.get("result") if rpc else None
        return ToolReply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data, rpc,
                         parse_tool_result(result),
                         bool(isinstance(result, dict) and result.get("isError")))

    def call(self, product: str, tool: str, arguments: dict[str, Any] | None = None,
             rpc_id: Any = 3) -> ToolReply:
        """One ``tools/call`` exactly as the binary sends it."""
        return self.request("POST", f"/mcp/{product}", tools_call_body(tool, arguments or {}, rpc_id))

    def rpc(self, product: str, method: str, params: Any = None, rpc_id: Any = 1) -> ToolReply:
        """Any other JSON-RPC method (``initialize``, ``tools/list``...); ``rpc_id=None`` = notification."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if rpc_id is not None:
            msg["id"] = rpc_id
        if params is not None:
            msg["params"] = params
        return self.request("POST", f"/mcp/{product}", json.dumps(msg).encode())

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> MCPClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
