"""Fault injection as data: which call gets which abnormal reply.

Gates need failures at precise points (the 2nd call of a tool, page 3 of a listing, only the update
call), in every form a backend or gateway produces them: business payloads (as text, ``isError`` or
``structuredContent``), HTTP errors, JSON-RPC errors, broken JSON, dropped connections and delays.
Overrides are plain dicts (validated by the scenario schema) so that scenario files and Python code
describe them the same way; :class:`Reply` and :func:`override` are conveniences that build them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from . import jsonrpc

#: Failure payloads for the D1 §3.1 rows.  ``NETWORK_ERROR_QUERYTOOLMETA`` is the D1 §2.2 replay.
BUSINESS_PRESETS: dict[str, dict[str, Any]] = {
    "NETWORK_ERROR_QUERYTOOLMETA": {
        "success": False, "code": "NETWORK_ERROR", "trace_id": "T1",
        "technical_detail": "调用 McpService.queryToolMeta 失败: status = StatusCode.UNAVAILABLE; "
                            "connect: Connection refused (111)",
        "retryable": True,
    },
    "NETWORK_ERROR_UNAVAILABLE": {
        "success": False, "code": "NETWORK_ERROR", "trace_id": "T2",
        "technical_detail": "rpc error: status = StatusCode.UNAVAILABLE; upstream dependency unavailable",
        "retryable": True,
    },
    "PARAM_ERROR": {
        "success": False, "code": "PARAM_ERROR", "errorMsg": "openCid or cid is required",
        "trace_id": "T3", "retryable": False,
    },
    "PERMISSION_DENIED": {
        "success": False, "code": "PERMISSION_DENIED", "errorMsg": "no permission for this conversation",
        "traceId": "T4", "retryable": False,
    },
    "RESOURCE_NOT_FOUND": {
        "success": False, "code": "RESOURCE_NOT_FOUND", "errorMsg": "conversation not found",
        "traceId": "T5", "retryable": False,
    },
    "RATE_LIMITED": {
        "success": False, "code": "RATE_LIMITED", "errorMsg": "too many requests",
        "trace_id": "T6", "retryable": True,
    },
    "FALLBACK": {"success": False},
}

REPLY_KINDS = ("payload", "business", "result", "text", "http", "jsonrpc_error", "malformed", "drop",
               "delay", "endless")


def business_payload(preset: str | None = None, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """Preset merged with explicit fields; a field set to None removes it (e.g. swap trace_id/traceId)."""
    merged: dict[str, Any] = dict(BUSINESS_PRESETS[preset]) if preset else {"success": False}
    for key, value in (payload or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True, slots=True)
class Rendered:
    """An HTTP reply decided by an override (status 0 = drop the connection)."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    close: bool = False


def render(reply: dict[str, Any], rpc_id: Any) -> Rendered:
    """Turn a validated non-delay reply into bytes (the server adds framing and recording)."""
    kind = reply["kind"]
    if kind == "payload":
        return Rendered(200, jsonrpc.encode_result(rpc_id, jsonrpc.tool_result(reply["payload"],
                                                                                reply.get("as", "text"))))
    if kind == "business":
        payload = business_payload(reply.get("preset"), reply.get("payload"))
        return Rendered(200, jsonrpc.encode_result(rpc_id, jsonrpc.tool_result(payload, reply.get("as", "text"))))
    if kind == "result":
        return Rendered(200, jsonrpc.encode_result(rpc_id, reply["result"]))
    if kind == "text":
        result: dict[str, Any] = {"content": [{"type": "text", "text": reply["text"]}]}
        if reply.get("isError"):
            result["isError"] = True
        return Rendered(200, jsonrpc.encode_result(rpc_id, result))
    if kind == "jsonrpc_error":
        return Rendered(200, jsonrpc.encode_error(rpc_id, reply.get("code", jsonrpc.INTERNAL_ERROR),
                                                  reply.get("message", "fake error"), reply.get("data")))
    if kind == "malformed":
        body = reply.get("body", '{"jsonrpc":"2.0","id":' + jsonrpc.dumps(rpc_id) + ',"result":{"content":[')
        return Rendered(200, body.encode("utf-8"))
    if kind == "drop":
        return Rendered(0, b"", close=True)
    if kind == "http":
        return _render_http(reply)
    raise ValueError(f"unknown reply kind {kind!r}")


def endless(payload: Any, call_no: int) -> Any:
    """The world's own answer, made to claim more pages for ever: ``hasMore:true`` and a fresh, advancing
    ``nextCursor`` (a decimal string past any row) wherever the reply keeps its pagination (beside a top-level row
    list, else in ``result``). A fault scenario: a client must stop at its own page limit and say so."""
    if not isinstance(payload, dict):
        payload = {}
    result = payload.get("result")
    node = result if isinstance(result, dict) and "hasMore" not in payload else payload
    node["hasMore"] = True
    node["nextCursor"] = str(1_000_000 + call_no)
    return payload


def _render_http(reply: dict[str, Any]) -> Rendered:
    status = int(reply["status"])
    headers = [(str(k), str(v)) for k, v in (reply.get("headers") or {}).items()]
    if reply.get("retry_after") is not None:
        headers.append(("Retry-After", str(reply["retry_after"])))
    body = reply.get("body")
    if body is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "status"
        return Rendered(status, phrase.encode(), "text/plain; charset=utf-8", tuple(headers))
    if isinstance(body, str):
        return Rendered(status, body.encode("utf-8"), "text/plain; charset=utf-8", tuple(headers))
    return Rendered(status, jsonrpc.dumps(body).encode("utf-8"), "application/json", tuple(headers))


@dataclass(frozen=True, slots=True)
class Override:
    """One compiled override: match criteria plus the reply dict."""

    tool: str
    product: str | None
    calls: frozenset[int] | None
    page: int | None
    args: dict[str, Any] | None
    reply: dict[str, Any]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Override:
        call = data.get("call")
        calls = None if call is None else frozenset([call] if isinstance(call, int) else call)
        return cls(data["tool"], data.get("product"), calls, data.get("page"), data.get("args"),
                   data["reply"])

    def matches(self, product: str, call_no: int, args: dict[str, Any],
                page_of: Callable[[], int | None]) -> bool:
        if self.product is not None and self.product != product:
            return False
        if self.calls is not None and call_no not in self.calls:
            return False
        if self.args is not None and any(args.get(k, _MISSING) != v for k, v in self.args.items()):
            return False
        return self.page is None or page_of() == self.page


_MISSING = object()


class OverrideSet:
    """Overrides indexed by tool, in scenario order (first match wins)."""

    def __init__(self, overrides: Iterable[dict[str, Any]] = ()) -> None:
        self.by_tool: dict[str, list[Override]] = {}
        for data in overrides:
            ov = Override.from_dict(data)
            self.by_tool.setdefault(ov.tool, []).append(ov)

    def replies(self, tool: str, product: str, call_no: int, args: dict[str, Any],
                page_of: Callable[[], int | None]) -> list[dict[str, Any]]:
        """The replies to apply, in order: any number of ``delay`` replies, then at most one other.

        A ``delay`` match keeps scanning so that "wait, then fail" and "wait, then answer normally" are
        both expressible; an empty list (or only delays) means the world answers.
        """
        chain: list[dict[str, Any]] = []
        for ov in self.by_tool.get(tool, ()):
            if ov.matches(product, call_no, args, page_of):
                chain.append(ov.reply)
                if ov.reply["kind"] != "delay":
                    break
        return chain


class Reply:
    """Builders for reply dicts (same shape as in scenario files)."""

    @staticmethod
    def payload(payload: Any, as_: str = "text") -> dict[str, Any]:
        return {"kind": "payload", "payload": payload, "as": as_}

    @staticmethod
    def business(preset: str | None = None, as_: str = "text", **fields: Any) -> dict[str, Any]:
        reply: dict[str, Any] = {"kind": "business", "as": as_}
        if preset:
            reply["preset"] = preset
        if fields:
            reply["payload"] = fields
        return reply

    @staticmethod
    def result(result: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "result", "result": result}

    @staticmethod
    def text(text: str, is_error: bool = False) -> dict[str, Any]:
        return {"kind": "text", "text": text, "isError": is_error}

    @staticmethod
    def http(status: int, retry_after: int | str | None = None, body: Any = None) -> dict[str, Any]:
        reply: dict[str, Any] = {"kind": "http", "status": status}
        if retry_after is not None:
            reply["retry_after"] = retry_after
        if body is not None:
            reply["body"] = body
        return reply

    @staticmethod
    def jsonrpc_error(code: int = jsonrpc.INVALID_PARAMS, message: str = "Invalid params",
                      data: Any = None) -> dict[str, Any]:
        reply: dict[str, Any] = {"kind": "jsonrpc_error", "code": code, "message": message}
        if data is not None:
            reply["data"] = data
        return reply

    @staticmethod
    def malformed(body: str | None = None) -> dict[str, Any]:
        return {"kind": "malformed"} if body is None else {"kind": "malformed", "body": body}

    @staticmethod
    def drop() -> dict[str, Any]:
        return {"kind": "drop"}

    @staticmethod
    def endless() -> dict[str, Any]:
        """A listing whose cursor never ends (a fault the real service never sends): see :func:`endless`."""
        return {"kind": "endless"}

    @staticmethod
    def delay(seconds: float) -> dict[str, Any]:
        return {"kind": "delay", "seconds": seconds}


def override(tool: str, reply: dict[str, Any], *, product: str | None = None,
             call: int | list[int] | None = None, page: int | None = None,
             args: dict[str, Any] | None = None) -> dict[str, Any]:
    """An override dict; only the criteria given are matched (see the scenario schema)."""
    data: dict[str, Any] = {"tool": tool, "reply": reply}
    for key, value in (("product", product), ("call", call), ("page", page), ("args", args)):
        if value is not None:
            data[key] = value
    return data
