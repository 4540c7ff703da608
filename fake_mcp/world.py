"""Backend state the chat shortcuts read and write, and the tool handlers that serve it.

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
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

Payload = dict[str, Any]

#: Rows per page when the request does not say (the scenario may cap it per tool, see ``page_sizes``).
DEFAULT_PAGE_SIZE = 100
#: Clock used for messages created by writes when the scenario does not pin ``now_ms``.
DEFAULT_NOW_MS = 1767225600000  # 2026-01-01T00:00:00Z


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


def _ms_or_none(value: Any) -> int | None:
    """Epoch milliseconds from an int or numeric string; anything else disables that bound."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def _id_list(value: Any) -> list[str]:
    """A list of ids sent either as a JSON array or as a comma-separated string."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        return [str(v) for v in value]
    raise ParamError("expected a list of ids")


def _flag(value: Any) -> bool:
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


class World:
    """Mutable backend state built from a scenario's ``world`` section.

    Thread-safe: every tool call runs under one lock, which is cheap next to HTTP parsing and keeps
    writes atomic with respect to concurrent reads.
    """

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        data = copy.deepcopy(data or {})
        self._lock = threading.RLock()
        self.page_sizes: dict[str, int] = dict(data.get("page_sizes") or {})
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

    # -- dispatch --------------------------------------------------------------------------------
    def handler(self, product: str, tool: str) -> Callable[[dict[str, Any]], Payload] | None:
        """The bound handler serving ``product/tool``, or None when the world does not model it."""
        name = TOOLS.get((product, tool))
        return getattr(self, name) if name else None

    def call(self, product: str, tool: str, args: dict[str, Any]) -> Payload:
        """Answer one tool call; unknown tools succeed with an empty result (and are recorded)."""
        handler = self.handler(product, tool)
        if handler is None:
            return {"success": True, "result": {}}
        with self._lock:
            try:
                return handler(args)
            except ParamError as exc:
                return failure("PARAM_ERROR", str(exc))

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
        forward = _flag(args.get("forward", False))
        anchor = args.get("time")
        ms: int | None = None
        if isinstance(anchor, str) and anchor.strip():
            try:
                moment = datetime.strptime(anchor.strip(), "%Y-%m-%d %H:%M:%S").replace(tzinfo=self.tz)
            except ValueError:
                raise ParamError("time must be 'YYYY-MM-DD HH:MM:SS'") from None
            ms = int(moment.timestamp() * 1000)
        if forward:
            picked = [r for r in rows if ms is None or r.get("createTime", 0) >= ms]
            picked.sort(key=lambda r: r.get("createTime", 0))
        else:
            picked = [r for r in rows if ms is None or r.get("createTime", 0) <= ms]
            picked.sort(key=lambda r: r.get("createTime", 0), reverse=True)
        size = self._page_size(tool, args)
        return {"result": {"hasMore": len(picked) > size, "messages": picked[:size]}}

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

    # -- read tools ----------------------------------------------------------------------------
    def search_groups(self, args: dict[str, Any]) -> Payload:
        keyword = str(args.get("keyword") or "").strip().casefold()
        rows = [g.search_row() for g in self.groups.values() if keyword in g.title.casefold()]
        page, more, nxt = self._page("search_groups", args, rows)
        payload: Payload = {"result": page, "hasMore": more}
        if more:
            payload["nextCursor"] = nxt
        return payload

    def get_group_members(self, args: dict[str, Any]) -> Payload:
        group = self._group_arg(args, "openconversation_id")
        if isinstance(group, dict):
            return group
        return self._paged_result("get_group_members", args, group.member_rows, "members")

    def list_group_bots(self, args: dict[str, Any]) -> Payload:
        group = self._group_arg(args, "openConversationId")
        if isinstance(group, dict):
            return group
        return {"result": {"bots": list(group.bot_rows)}}

    def search_messages(self, args: dict[str, Any]) -> Payload:
        keyword = str(args.get("keyword") or "").strip().casefold()
        cids = set(_id_list(args.get("openConversationIds")))
        senders = set(_id_list(args.get("senderOpenDingTakIds")) + _id_list(args.get("senderOpenDingTalkIds")))
        sender_users = set(_id_list(args.get("senderUserIds")))
        if sender_users:
            senders |= {str(c.get("openDingtalkId")) for c in self.contacts
                        if c.get("userId") in sender_users and c.get("openDingtalkId") is not None}
        start, end = _ms_or_none(args.get("startTime")), _ms_or_none(args.get("endTime"))
        rows = []
        for g in self.groups.values():
            if cids and g.cid not in cids:
                continue
            for row in g.message_rows:
                created = row.get("createTime", 0)
                if keyword and keyword not in str(row.get("content", "")).casefold():
                    continue
                if (senders or sender_users) and row.get("senderOpenDingTalkId") not in senders:
                    continue
                if (start is not None and created < start) or (end is not None and created > end):
                    continue
                rows.append(row)
        return self._paged_result("search_messages", args, rows, "messages")

    def list_messages_by_ids(self, args: dict[str, Any]) -> Payload:
        ids = _id_list(args.get("openMsgIds"))
        if not ids:
            raise ParamError("openMsgIds is required")
        rows = [self._messages_by_id[i] for i in ids if i in self._messages_by_id]
        return {"result": {"messages": rows}}

    def list_all_conversations(self, args: dict[str, Any]) -> Payload:
        rows = self.conversations
        if _flag(args.get("excludeMuted", False)):
            rows = [c for c in rows if not c.get("muted")]
        page, more, nxt = self._page("list_all_conversations", args, rows)
        return {"result": {"hasMore": more, "nextCursor": nxt, "conversations": page}}

    def list_conversation_message_v2(self, args: dict[str, Any]) -> Payload:
        group = self._group_arg(args, "openconversation_id")
        if isinstance(group, dict):
            return group
        return self._timeline("list_conversation_message_v2", args, group.message_rows)

    def list_individual_chat_message(self, args: dict[str, Any]) -> Payload:
        odid, user = args.get("openDingTalkId"), args.get("userId")
        if not odid and not user:
            raise ParamError("openDingTalkId or userId is required")
        for chat in self.direct_chats:
            if (odid and chat.get("openDingtalkId") == odid) or (user and chat.get("userId") == user):
                return self._timeline("list_individual_chat_message", args, chat["messages"])
        return {"result": {"hasMore": False, "messages": []}}

    def search_at_me_message(self, args: dict[str, Any]) -> Payload:
        cid = args.get("openConversationId")
        start, end = _ms_or_none(args.get("startTime")), _ms_or_none(args.get("endTime"))
        rows = [
            r for r in self.at_me
            if (not cid or r.get("openConversationId") == cid)
            and (start is None or r.get("createTime", 0) >= start)
            and (end is None or r.get("createTime", 0) <= end)
        ]
        return self._paged_result("search_at_me_message", args, rows, "messages")

    def get_group_invite_url(self, args: dict[str, Any]) -> Payload:
        cid = args.get("openConversationId")
        if not isinstance(cid, str) or not cid.strip():
            return failure("PARAM_ERROR", "openCid or cid is required")
        if cid in self.invite_urls:
            value = self.invite_urls[cid]
            return {"result": value if isinstance(value, dict) else {"url": value}}
        if cid not in self.groups:
            return failure("RESOURCE_NOT_FOUND", "conversation not found")
        return {"result": {"url": f"http://127.0.0.1/invite/{cid}"}}

    def search_contact_by_key_word(self, args: dict[str, Any]) -> Payload:
        keyword = str(args.get("keyword") or "").strip()
        if not keyword:
            raise ParamError("keyword is required")
        folded = keyword.casefold()
        rows = [
            c for c in self.contacts
            if folded in str(c.get("name", "")).casefold()
            or keyword in (c.get("userId"), c.get("openDingtalkId"), c.get("openDingTalkId"))
        ]
        return {"result": rows, "hasMore": False}

    # -- write tools ---------------------------------------------------------------------------
    def update_group_name(self, args: dict[str, Any]) -> Payload:
        group = self._group_arg(args, "openconversation_id")
        if isinstance(group, dict):
            return group
        name = args.get("group_name")
        if not isinstance(name, str) or not name.strip():
            raise ParamError("group_name is required")
        group.title = name
        for conv in self.conversations:
            if conv.get("openConversationId") == group.cid:
                conv["title"] = name
        return {"success": True, "result": {"openConversationId": group.cid, "title": name}}

    def send_personal_message(self, args: dict[str, Any]) -> Payload:
        cid, receiver = args.get("openConversationId"), args.get("receiverOpenDingTalkId")
        if not cid and not receiver:
            return failure("PARAM_ERROR", "openCid or cid is required")
        self._sent += 1
        row: dict[str, Any] = {
            "openMessageId": f"msgFAKE{self._sent:08d}",
            "senderOpenDingTalkId": "odid-fake-self",
            "content": args.get("content", args.get("text", "")),
            "msgType": args.get("msgType", "text"),
            "createTime": self._now_ms + self._sent * 1000,
        }
        if cid:
            group = self.groups.get(cid)
            if group is None:
                return failure("RESOURCE_NOT_FOUND", "conversation not found")
            row["openConversationId"] = cid
            group.message_rows.append(row)
        else:
            chat = next((c for c in self.direct_chats if c.get("openDingtalkId") == receiver), None)
            if chat is None:
                chat = {"openDingtalkId": receiver, "messages": []}
                self.direct_chats.append(chat)
            chat["messages"].append(row)
        self._messages_by_id[row["openMessageId"]] = row
        return {"success": True, "result": {"openMessageId": row["openMessageId"]}}


#: ``(product, tool)`` -> World method.  Products are the ones the real binary calls (docs/wire.md §3,
#: docs/contract.md R5.2); ``get_group_invite_url`` is served under both ``im`` and ``chat``.
TOOLS: dict[tuple[str, str], str] = {
    ("im", "search_groups"): "search_groups",
    ("chat", "get_group_members"): "get_group_members",
    ("bot", "list_group_bots"): "list_group_bots",
    ("im", "search_messages"): "search_messages",
    ("im", "list_messages_by_ids"): "list_messages_by_ids",
    ("im", "list_all_conversations"): "list_all_conversations",
    ("chat", "list_conversation_message_v2"): "list_conversation_message_v2",
    ("chat", "list_individual_chat_message"): "list_individual_chat_message",
    ("chat", "search_at_me_message"): "search_at_me_message",
    ("im", "get_group_invite_url"): "get_group_invite_url",
    ("chat", "get_group_invite_url"): "get_group_invite_url",
    ("contact", "search_contact_by_key_word"): "search_contact_by_key_word",
    ("chat", "update_group_name"): "update_group_name",
    ("chat", "send_personal_message"): "send_personal_message",
}


def product_tools(product: str) -> list[str]:
    """Names of the world-backed tools of one product (what ``tools/list`` advertises)."""
    return sorted(tool for (p, tool) in TOOLS if p == product)
