"""JSON-RPC / MCP reply encoding shared by the world path and the override path.

One place decides how a payload becomes an MCP ``tools/call`` result, so that a fault rendered "as
text" is byte-for-byte the same shape as a normal world reply, differing only in the payload.
"""

from __future__ import annotations

import json
from typing import Any

#: Standard JSON-RPC error codes used by the server itself.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

#: How a payload is carried in the result (see ``tool_result``).
CARRIERS = ("text", "isError", "structured", "structured_isError")

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dumps(value: Any) -> str:
    """Compact JSON with non-ASCII kept as is (the real backend sends UTF-8 text)."""
    return _dumps(value)


def tool_result(payload: Any, carrier: str = "text") -> dict[str, Any]:
    """Wrap a payload as an MCP tool result.

    ``text``: one text block holding the JSON (what the real backend sends);
    ``isError``: the same plus ``isError: true``;
    ``structured`` / ``structured_isError``: ``structuredContent`` plus the same JSON as a text block
    (MCP servers send both; the client rule makes ``structuredContent`` win).
    """
    result: dict[str, Any] = {"content": [{"type": "text", "text": dumps(payload)}]}
    if carrier in ("structured", "structured_isError"):
        result["structuredContent"] = payload
    if carrier in ("isError", "structured_isError"):
        result["isError"] = True
    return result


def encode_result(rpc_id: Any, result: Any) -> bytes:
    """A complete JSON-RPC success response body."""
    return dumps({"jsonrpc": "2.0", "id": rpc_id, "result": result}).encode("utf-8")


def encode_payload(rpc_id: Any, payload: Any) -> bytes:
    """Fast path for the common case: payload as a single text block (one ``dumps`` of the payload)."""
    text = dumps(dumps(payload))
    head = dumps({"jsonrpc": "2.0", "id": rpc_id})[:-1]
    return (head + ',"result":{"content":[{"type":"text","text":' + text + "}]}}").encode("utf-8")


def encode_error(rpc_id: Any, code: int, message: str, data: Any = None) -> bytes:
    """A complete JSON-RPC error response body."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return dumps({"jsonrpc": "2.0", "id": rpc_id, "error": error}).encode("utf-8")
