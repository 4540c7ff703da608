"""Backend state the chat shortcuts read and write: groups, conversations, contacts, messages, and paging.

A canned reply per tool would let an implementation pass without paginating, without matching names
the way the backend does, or without its writes landing anywhere.  The world model answers from state
instead: ``search_groups`` does a substring match (several groups may share a title), paginated tools
honour the page size the client asks for (optionally capped per tool by the scenario) and hand out
``hasMore`` + ``nextCursor``, and writes change what later reads return.

Payload shapes follow docs/wire.md §3 (observed from the real binary); where it is silent the shape is
the closest analogue and is documented in ``docs/fake_mcp.md``.  Cursors issued here are decimal
offsets, so a page index can be derived from any request cursor (used by ``page`` overrides).
"""

from __future__ import annotations

import copy
import threading
from datetime import datetime, timedelta, timezone
from typing import Any

Payload = dict[str, Any]

#: Rows per page when the request does not say (the scenario may cap it per tool, see ``page_sizes``).
DEFAULT_PAGE_SIZE = 100
#: Clock used for messages created by writes when the scenario does not pin ``now_ms``.
DEFAULT_NOW_MS = 1767225600000  # 2026-01-01T00:00:00Z

#: The fake world's signed-in user (whose messages it records as sent by ``odid-fake-self``).
SELF = {"userId": "user-fake-self", "name": "合成测试本人", "openDingTalkId": "odid-fake-self", "corpId": "corp-fake"}


class ParamError(Exception):
    """A request argument the backend would reject; becomes a ``PARAM_ERROR`` payload."""


def failure(code: str, message: str) -> Payload:
    """A backend business failure as the real gateway reports it (``success:false`` in a 200 reply)."""
    return {"success": False, "code": code, "errorMsg": message}


def _int_arg(value: Any, name: str) -> int:
    """Accept an integer or a decimal string (clients differ); reject bools and anything else."""
    if isinstance(value, bool):
        raise ParamError(f"{name} must be an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise ParamError(f"{name} must be an integer")


def _offset(cursor: Any) -> int:
    """Offset encoded in a cursor this world issued; absent, empty and ``"0"`` mean the first page."""
    if cursor is None or cursor == "":
        return 0
    try:
        return _int_arg(cursor, "cursor")
    except ParamError:
        raise ParamError("invalid cursor") from None


def ms_or_none(value: Any) -> int | None:
    """Epoch milliseconds from an int or numeric string; anything else disables that bound."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def text_arg(args: dict[str, Any], key: str, what: str | None = None) -> str:
    """The required non-blank string argument ``key`` (stripped); absent or blank is a parameter error naming
    ``what`` (default: the key)."""
    value = str(args.get(key) or "").strip()
    if not value:
        raise ParamError(f"{what or key} is required")
    return value


def id_list(value: Any) -> list[str]:
    """A list of ids sent either as a JSON array or as a comma-separated string."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        return [str(v) for v in value]
    raise ParamError("expected a list of ids")


def flag_arg(value: Any) -> bool:
    """Boolean sent as a JSON bool or as ``"true"``/``"false"``."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "newer")
    return bool(value)


def _message_row(message: dict[str, Any], cid: str | None) -> dict[str, Any]:
    """Scenario message -> wire row (``sender`` is renamed to the field the backend uses)."""
    row = {k: v for k, v in message.items() if k != "sender"}
    if cid is not None:
        row.setdefault("openConversationId", cid)
    if "sender" in message:
        row["senderOpenDingTalkId"] = message["sender"]
    return row


class _Group:
    """A group and its precomputed wire rows (reads are the hot path, writes rebuild what changed)."""

    __slots__ = ("bot_rows", "cid", "extra", "member_rows", "message_rows", "owner", "title")

    def __init__(self, data: dict[str, Any]) -> None:
        self.cid: str = data["cid"]
        self.title: str = data["title"]
        self.owner: str | None = data.get("owner")
        self.extra: dict[str, Any] = dict(data.get("extra") or {})
        self.member_rows = [
            {"memberEmpName": m["name"], **{k: v for k, v in m.items() if k != "name"}}
            for m in data.get("members") or []
        ]
        self.bot_rows = [dict(b) for b in data.get("bots") or []]
        self.message_rows = [_message_row(m, self.cid) for m in data.get("messages") or []]

    def search_row(self) -> dict[str, Any]:
        return {"title": self.title, "openConversationId": self.cid, **self.extra}

    def to_dict(self) -> dict[str, Any]:
        return {"cid": self.cid, "title": self.title, "owner": self.owner,
                "members": copy.deepcopy(self.member_rows), "bots": copy.deepcopy(self.bot_rows),
                "messages": copy.deepcopy(self.message_rows)}


class WorldState:
    """The state of one fake world and how its tools page through it (the tools: :mod:`fake_mcp.world`)."""

    def __init__(self, data: dict[str, Any] | None = None, *, unmodelled: str = "error") -> None:
        data = copy.deepcopy(data or {})
        self.unmodelled = unmodelled
        self._lock = threading.RLock()
        self.page_sizes: dict[str, int] = dict(data.get("page_sizes") or {})
        #: named behaviours of the real service a fault scenario may switch on (QUIRKS)
        self.quirks: frozenset[str] = frozenset(data.get("quirks") or ())
        self.tz = timezone(timedelta(minutes=int(data.get("utc_offset_minutes", 480))))
        self._now_ms = int(data.get("now_ms", DEFAULT_NOW_MS))
        self._sent = 0
        self.groups: dict[str, _Group] = {}
        for g in data.get("groups") or []:
            self.groups[g["cid"]] = _Group(g)
        conversations = data.get("conversations")
        if conversations is None:  # absent: one conversation per group, in group order
            conversations = [{"openConversationId": g.cid, "title": g.title, "type": "group"}
                             for g in self.groups.values()]
        self.conversations: list[dict[str, Any]] = conversations
        self.contacts: list[dict[str, Any]] = data.get("contacts") or []
        self.at_me = [_message_row(m, m.get("openConversationId")) for m in data.get("at_me") or []]
        self.invite_urls: dict[str, Any] = data.get("invite_urls") or {}
        self.direct_chats: list[dict[str, Any]] = []
        for chat in data.get("direct_chats") or []:
            rows = [_message_row(m, None) for m in chat.get("messages") or []]
            self.direct_chats.append({**{k: v for k, v in chat.items() if k != "messages"},
                                      "messages": rows})
        self._reindex_messages()

    # -- inspection ------------------------------------------------------------------------------
    def group(self, cid: str) -> dict[str, Any] | None:
        """A copy of one group's current state (tests check that writes landed)."""
        with self._lock:
            g = self.groups.get(cid)
            return g.to_dict() if g else None

    def snapshot(self) -> dict[str, Any]:
        """A copy of the whole state, for debugging and for the JSONL log."""
        with self._lock:
            return {"groups": [g.to_dict() for g in self.groups.values()],
                    "conversations": copy.deepcopy(self.conversations),
                    "contacts": copy.deepcopy(self.contacts)}


    def page_index(self, tool: str, args: dict[str, Any]) -> int | None:
        """1-based page a request asks for, derived from its cursor and page size (None: opaque)."""
        try:
            return _offset(args.get("cursor")) // self._page_size(tool, args) + 1
        except ParamError:
            return None

    # -- pagination helpers ------------------------------------------------------------------------
    def _page_size(self, tool: str, args: dict[str, Any]) -> int:
        limit = args.get("limit")
        size = DEFAULT_PAGE_SIZE if limit is None else _int_arg(limit, "limit")
        if size <= 0:
            raise ParamError("limit must be positive")
        cap = self.page_sizes.get(tool)
        return min(size, cap) if cap else size

    def _page(self, tool: str, args: dict[str, Any], rows: list[Any]) -> tuple[list[Any], bool, str]:
        size = self._page_size(tool, args)
        start = _offset(args.get("cursor"))
        end = start + size
        more = end < len(rows)
        return rows[start:end], more, (str(end) if more else "")

    def _paged_result(self, tool: str, args: dict[str, Any], rows: list[Any], key: str) -> Payload:
        """``{"result": {"hasMore", <key>: page, "nextCursor" (only when more)}}``: the shape of docs/wire.md §3."""
        page, more, nxt = self._page(tool, args, rows)
        result: dict[str, Any] = {"hasMore": more, key: page}
        if more:
            result["nextCursor"] = nxt
        return {"result": result}

    def _paged_rows(self, tool: str, args: dict[str, Any], rows: list[Any]) -> Payload:
        """``{"result": page, "hasMore", "nextCursor" (only when more)}``: the search tools' flat page shape."""
        page, more, nxt = self._page(tool, args, rows)
        payload: Payload = {"result": page, "hasMore": more}
        if more:
            payload["nextCursor"] = nxt
        return payload

    def _group_arg(self, args: dict[str, Any], key: str) -> _Group | Payload:
        cid = args.get(key)
        if not isinstance(cid, str) or not cid.strip():
            return failure("PARAM_ERROR", "openCid or cid is required")
        group = self.groups.get(cid)
        if group is None:
            return failure("RESOURCE_NOT_FOUND", "conversation not found")
        return group

    def _timeline(self, tool: str, args: dict[str, Any], rows: list[dict[str, Any]]) -> Payload:
        """Time-anchored reads (``time`` + ``forward`` + ``limit``): the CLI pages these by time."""
        forward = flag_arg(args.get("forward", False))
        ms = self._anchor_ms(args.get("time"))
        if forward:
            picked = [r for r in rows if ms is None or r.get("createTime", 0) >= ms]
            picked.sort(key=lambda r: r.get("createTime", 0))
        else:
            picked = [r for r in rows if ms is None or r.get("createTime", 0) <= ms]
            picked.sort(key=lambda r: r.get("createTime", 0), reverse=True)
        size = self._page_size(tool, args)
        page, more = picked[:size], len(picked) > size
        result: dict[str, Any] = {"hasMore": more, "messages": page}
        if more:  # the service's continuation: a millisecond anchor just past the page's last row, as a number
            result["nextCursor"] = int(page[-1].get("createTime", 0)) + (1 if forward else -1)
        return {"result": result}

    def _anchor_ms(self, anchor: Any) -> int | None:
        """A time anchor as epoch ms: ``YYYY-MM-DD HH:MM:SS`` at the world's offset (what clients send first), an
        RFC 3339 time (what a client sends to continue from a millisecond cursor), or the ms number itself."""
        if anchor is None or anchor == "":
            return None
        if isinstance(anchor, int) and not isinstance(anchor, bool):
            return anchor
        if not isinstance(anchor, str):
            raise ParamError("time must be 'YYYY-MM-DD HH:MM:SS' or RFC 3339")
        text = anchor.strip()
        if text.isdigit():
            return int(text)
        try:
            moment = datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=self.tz)
        except ValueError:
            try:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                raise ParamError("time must be 'YYYY-MM-DD HH:MM:SS' or RFC 3339") from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=self.tz)
        return int(moment.timestamp() * 1000)

    def _reindex_messages(self) -> None:
        index: dict[str, dict[str, Any]] = {}
        for g in self.groups.values():
            for row in g.message_rows:
                index.setdefault(str(row.get("openMessageId")), row)
        for chat in self.direct_chats:
            for row in chat["messages"]:
                index.setdefault(str(row.get("openMessageId")), row)
        for row in self.at_me:
            index.setdefault(str(row.get("openMessageId")), row)
        self._messages_by_id = index
