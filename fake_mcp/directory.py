"""The directory reads of the fake world: bases and their tables and views, sheet filter views, departments,
documents, mail users, the signed-in user's mailbox, and todos.

Why: the schema gates dry-run every command, and many of the binary's smart shortcuts and helpers resolve a
name or read a listing before they preview (upstream 81f67c8d internal/shortcut/smart/resolve_base.go,
dept_members.go, find_doc.go, recent_mail.go, todo_done.go; cf8cf95 internal/helpers/aitable.go getViewRaw).
An empty success makes them refuse ('没有找到…'), so a regression of the command itself would go unseen. These
tools answer in the shapes upstream parses, from the world's own names, without the scenario spelling out a
directory:

- a search by keyword is *open*: the world holds one entity of each name a client asks for (never ambiguous),
  as the schema worlds resolve every name the suite types; a search without a keyword lists the world's names;
- a listing (the tables of a base, the views of a table, the todos, the mails) holds one entity per name the
  world knows (its group titles and contact names) that contains none of its other names, so a client's own
  filter by any of those names finds exactly one;
- an entity's ID is derived from its kind and name (stable across runs); a lookup by ID answers the IDs asked.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from .world_state import SELF, ParamError, Payload, WorldState, failure, id_list, text_arg

#: The one department every user of the world is in (contact/get_user_info_by_user_ids).
DEPARTMENT = "合成测试部门"

#: The signed-in user's mailbox (mail/list_user_mailboxes): the world's SELF.
SELF_MAILBOX = f"{SELF['userId']}@mail.fake.invalid"


def derived_id(kind: str, name: str) -> str:
    """A stable ID for the entity ``name`` of ``kind`` (``base-1a2b3c4d``)."""
    return f"{kind}-{zlib.crc32(name.encode('utf-8')):08x}"


def derived_number(name: str) -> int:
    """A stable numeric ID (departments: upstream dept_members.go parses ``deptId`` as an int64)."""
    return 100000 + zlib.crc32(name.encode("utf-8")) % 900000


class DirectoryReads(WorldState):
    """The directory tools (``DIRECTORY_TOOLS``), answered from the world's names."""

    # -- the world's names ----------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every name the world knows, in order and once each: its group titles, then its contact names."""
        out: dict[str, None] = {}
        for group in self.groups.values():
            out.setdefault(group.title, None)
        for contact in self.contacts:
            if isinstance(contact.get("name"), str) and contact["name"]:
                out.setdefault(contact["name"], None)
        return list(out)

    def listed(self) -> list[str]:
        """The names a listing holds: the world's names that contain none of its other names (case-insensitively).
        The binary filters a listing by substring itself (smart/resolve_table.go, todo_done.go) and refuses more
        than one match; a world whose names nest (`周报`, `团队周报`, `整理周报`) would answer every filter by the
        shorter name ambiguously, so the listing holds the innermost ones and a filter by any of them finds one."""
        names = self.names()
        key = tuple(names)
        if self._listed[0] != key:
            folded = [n.casefold() for n in names]
            inner = [n for n, f in zip(names, folded, strict=True)
                     if not any(g != f and g in f for g in folded)]
            self._listed = (key, inner)
        return list(self._listed[1])

    _listed: tuple[tuple[str, ...], list[str]] = ((), [])

    def _found(self, keyword: Any, make: Callable[[str], dict[str, Any]]) -> list[dict[str, Any]]:
        """An open search: the one entity named ``keyword``; no keyword lists one entity per world name."""
        text = str(keyword or "").strip()
        return [make(text)] if text else [make(n) for n in self.names()]

    # -- aitable -----------------------------------------------------------------------------------
    def search_bases(self, args: dict[str, Any]) -> Payload:
        """``query`` (smart/resolve_base.go: resolveBaseItems unwraps ``result`` then ``bases``; baseId, name)."""
        rows = self._found(args.get("query"), lambda n: {"baseId": derived_id("base", n), "name": n})
        return {"success": True, "result": {"bases": rows, "hasMore": False}}

    def get_tables(self, args: dict[str, Any]) -> Payload:
        """``baseId``: one table per world name (smart/resolve_table.go filters them by name locally)."""
        base = text_arg(args, "baseId")
        rows = [{"tableId": derived_id("table", f"{base}/{n}"), "name": n} for n in self.listed()]
        return {"success": True, "result": {"tables": rows}}

    def get_views(self, args: dict[str, Any]) -> Payload:
        """``baseId``, ``tableId``, ``viewIds``: the views asked for, each a Grid view with every block the
        ``view get <attr>`` commands project (cf8cf95 helpers/aitable.go getViewRaw reads ``data.views[0]``)."""
        table = text_arg(args, "tableId")
        ids = id_list(args.get("viewIds")) or [derived_id("view", f"{table}/{n}") for n in self.listed()]
        views = [{"viewId": v, "name": v, "viewType": "Grid", "aggregate": {}, "filter": [], "sort": [],
                  "group": [], "columns": [], "custom": {"widthMap": {}}, "conditionalFormats": []} for v in ids]
        return {"success": True, "data": {"views": views}}

    # -- sheet -----------------------------------------------------------------------------------
    def get_filter_views(self, args: dict[str, Any]) -> Payload:
        """``nodeId``, ``sheetId`` (both required): one filter view per world name, with a criterion on its first
        column (helpers/sheet_filter_view.go fetchFilterViews reads ``result.filterViews``; findFilterViewByID
        matches ``id``)."""
        node, sheet = str(args.get("nodeId") or "").strip(), str(args.get("sheetId") or "").strip()
        if not node or not sheet:
            return failure("PARAM_ERROR", "nodeId and sheetId are required")
        views = [{"id": (fid := derived_id("filterview", f"{node}/{sheet}/{n}")), "filterViewId": fid, "name": n,
                  "range": "A1:B2", "criteria": {"0": {"filterType": "values", "visibleValues": [n]}}}
                 for n in self.listed()]
        return {"success": True, "result": {"filterViews": views}}

    # -- contact ---------------------------------------------------------------------------------
    def search_dept_by_keyword(self, args: dict[str, Any]) -> Payload:
        """``query``: the department of that name (smart/resolve_dept.go and dept_members.go read a top-level
        ``deptList`` of ``{deptId (number), name}``: 'verified against the live gateway')."""
        rows = self._found(args.get("query"), lambda n: {"deptId": derived_number(n), "name": n})
        return {"success": True, "deptList": rows}

    def search_user_by_mobile(self, args: dict[str, Any]) -> Payload:
        """``mobile``: the contact holding it, else the open directory's person of that number
        (smart/by_mobile.go byMobileExtractUserID reads ``result[].userId``)."""
        mobile = text_arg(args, "mobile")
        rows = [c for c in self.contacts if str(c.get("mobile") or "") == mobile]
        if not rows:
            rows = [{"userId": derived_id("user", mobile), "name": f"合成手机用户{mobile[-4:]}", "mobile": mobile}]
        return {"success": True, "result": rows}

    def get_user_info_by_user_ids(self, args: dict[str, Any]) -> Payload:
        """``user_id_list``: each user's profile, a contact of the world where one has that userId, else the open
        directory's user; every user is in one department (smart/org.go and team.go shortcutOrgExtractDeptID read
        ``result[].orgEmployeeModel.depts[].deptId`` as a number)."""
        ids = [str(i) for i in id_list(args.get("user_id_list"))]
        if not ids:
            raise ParamError("user_id_list is required")
        known = {str(c.get("userId")): c for c in self.contacts if c.get("userId")}
        known[SELF["userId"]] = SELF
        dept = {"deptId": derived_number(DEPARTMENT), "deptName": DEPARTMENT}
        rows = []
        for uid in ids:
            who = known.get(uid, {})
            model = {"userId": uid, "name": str(who.get("name") or f"合成用户{uid[-4:]}"), "depts": [dict(dept)]}
            odid = who.get("openDingtalkId") or who.get("openDingTalkId")
            if odid:
                model["openDingTalkId"] = odid
            rows.append({"orgEmployeeModel": model})
        return {"success": True, "result": rows}

    # -- doc ---------------------------------------------------------------------------------------
    def search_documents(self, args: dict[str, Any]) -> Payload:
        """``keyword``, ``pageSize``: the document of that name (smart/find_doc.go shortcutFindDocItems unwraps
        ``result`` then ``documents``: title, url, docType, docId)."""
        def doc(name: str) -> dict[str, Any]:
            node = derived_id("doc", name)
            return {"docId": node, "nodeId": node, "title": name, "name": name, "docType": "alidoc",
                    "url": f"http://127.0.0.1/docs/{node}"}
        return {"success": True, "result": {"documents": self._found(args.get("keyword"), doc), "hasMore": False}}

    # -- mail ----------------------------------------------------------------------------------------
    def search_mail_users(self, args: dict[str, Any]) -> Payload:
        """``keyword``: the mail user of that name (smart/find_mail_user.go findMailUserUnwrap: ``result.users``
        of name, email, userId)."""
        def user(name: str) -> dict[str, Any]:
            uid = derived_id("user", name)
            return {"name": name, "nickname": name, "email": f"{uid}@mail.fake.invalid", "userId": uid}
        return {"success": True, "result": {"users": self._found(args.get("keyword"), user)}}

    def list_user_mailboxes(self, args: dict[str, Any]) -> Payload:
        """The signed-in user's one mailbox (smart/search_mail.go searchMailPickMailbox: ``emailAccounts[].email``)."""
        return {"success": True, "result": {"emailAccounts": [{"email": SELF_MAILBOX, "name": SELF["name"]}]}}

    def list_folders(self, args: dict[str, Any]) -> Payload:
        """``email``: the mailbox's folders, the inbox first (smart/recent_mail.go recentMailInboxFolder looks for
        displayName 收件箱/inbox)."""
        text_arg(args, "email")
        return {"success": True, "result": {"folders": [{"id": "folder-inbox", "displayName": "收件箱"},
                                                        {"id": "folder-sent", "displayName": "已发送"}]}}

    def list_mailbox_threads(self, args: dict[str, Any]) -> Payload:
        """``email``, ``folderId``, ``size``: one thread per world name (smart/recent_mail.go: ``threads`` of
        subject, senders, lastModifiedDateTime, threadId)."""
        text_arg(args, "email")
        rows = [{"threadId": m["messageId"], "subject": m["subject"], "senders": [m["from"]],
                 "lastModifiedDateTime": m["date"]} for m in self._mails()]
        return {"success": True, "result": {"threads": rows[: self._size(args)]}}

    def search_emails(self, args: dict[str, Any]) -> Payload:
        """``email``, ``query``, ``size``: the mailbox's mails (smart/search_mail.go searchMailMessages:
        ``messages`` of subject, from, date, messageId). The query language is not modelled: every mail matches."""
        text_arg(args, "email")
        return {"success": True, "result": {"messages": self._mails()[: self._size(args)]}}

    def _mails(self) -> list[dict[str, Any]]:
        sender = {"name": SELF["name"], "email": SELF_MAILBOX}
        return [{"messageId": derived_id("mail", n), "subject": n, "from": sender, "isRead": False,
                 "date": "2026-01-01T00:00:00Z"} for n in self.listed()]

    @staticmethod
    def _size(args: dict[str, Any]) -> int:
        text = str(args.get("size") or "20").strip()
        return int(text) if text.isdigit() and int(text) > 0 else 20

    # -- todo ----------------------------------------------------------------------------------------
    def get_user_todos_in_current_org(self, args: dict[str, Any]) -> Payload:
        """``pageNum``, ``pageSize`` (decimal strings): one todo per world name, the signed-in user its executor
        (smart/todo_shared.go shortcutListAllTodoCards pages ``result.todoCards`` of taskId, subject)."""
        page, size = self._number(args.get("pageNum"), 1), self._number(args.get("pageSize"), 20)
        cards = [{"taskId": str(derived_number(f"todo/{n}")), "subject": n, "isDone": False,
                  "executorIds": [SELF["userId"]], "creatorId": SELF["userId"]} for n in self.listed()]
        start = (page - 1) * size
        return {"success": True, "result": {"todoCards": cards[start:start + size],
                                             "hasMore": start + size < len(cards)}}

    @staticmethod
    def _number(value: Any, default: int) -> int:
        text = str(value if value is not None else default).strip()
        if not text.isdigit() or int(text) <= 0:
            raise ParamError("pageNum and pageSize must be positive integers")
        return int(text)


#: ``(product, tool)`` -> DirectoryReads method: the products the binaries call them on (recordings of
#: 81f67c8d and cf8cf95: aitable, sheet, contact, doc, mail, todo).
DIRECTORY_TOOLS: dict[tuple[str, str], str] = {
    ("aitable", "search_bases"): "search_bases",
    ("aitable", "get_tables"): "get_tables",
    ("aitable", "get_views"): "get_views",
    ("sheet", "get_filter_views"): "get_filter_views",
    ("contact", "search_dept_by_keyword"): "search_dept_by_keyword",
    ("contact", "search_user_by_mobile"): "search_user_by_mobile",
    ("contact", "get_user_info_by_user_ids"): "get_user_info_by_user_ids",
    ("doc", "search_documents"): "search_documents",
    ("mail", "search_mail_users"): "search_mail_users",
    ("mail", "list_user_mailboxes"): "list_user_mailboxes",
    ("mail", "list_folders"): "list_folders",
    ("mail", "list_mailbox_threads"): "list_mailbox_threads",
    ("mail", "search_emails"): "search_emails",
    ("todo", "get_user_todos_in_current_org"): "get_user_todos_in_current_org",
}
