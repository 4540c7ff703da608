"""Issue 38 (group D): the directory reads the binary's smart shortcuts and helpers make before they preview are
answered in the shapes upstream parses, so the schema gates' dry runs reach the command's own behaviour.

Each test sends one JSON-RPC ``tools/call`` through fake_mcp's client, in the schema gates' synthetic world, and
reads the reply along the path the named upstream function reads it (DingTalk-Real-AI/dingtalk-workspace-cli at
81f67c8d, or cf8cf95 where named; read there, never copied here): the typed fields that function takes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fake_mcp import FakeMCPServer, Scenario
from fake_mcp.client import MCPClient
from pytest_dws.observe.binary.worlds import (
    SYN_GROUP,
    SYN_ODID,
    SYN_PERSON,
    SYN_USER,
    SYN_VALUE,
    prebuilt,
    synthetic_world,
)


@pytest.fixture(scope="module")
def client() -> Iterator[MCPClient]:
    with FakeMCPServer(scenario=prebuilt(synthetic_world("schema-synthetic", {SYN_GROUP}, {SYN_PERSON}))) as srv:
        with MCPClient(srv.url) as c:
            yield c


def _call(client: MCPClient, product: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    reply = client.call(product, tool, args)
    assert reply.status == 200 and reply.error is None, reply.body
    assert isinstance(reply.payload, dict) and reply.payload.get("success") is True, reply.payload
    return reply.payload


def test_a_base_search_finds_the_one_base_of_the_name(client: MCPClient) -> None:
    """smart/resolve_base.go: search_bases {query}; resolveBaseItems unwraps result -> bases; baseId and name
    strings; exactly one candidate resolves."""
    bases = _call(client, "aitable", "search_bases", {"query": SYN_GROUP})["result"]["bases"]
    assert [b["name"] for b in bases] == [SYN_GROUP]
    assert isinstance(bases[0]["baseId"], str) and bases[0]["baseId"]


def test_the_tables_of_any_base_carry_the_worlds_names(client: MCPClient) -> None:
    """smart/resolve_table.go: get_tables {baseId}; result -> tables of tableId and name, filtered locally by a
    case-insensitive substring of --name: the suite's --name finds exactly one."""
    tables = _call(client, "aitable", "get_tables", {"baseId": SYN_VALUE})["result"]["tables"]
    assert [t for t in tables if SYN_GROUP.lower() in t["name"].lower()] == [
        {"tableId": tables[0]["tableId"], "name": SYN_GROUP}]
    assert all(isinstance(t["tableId"], str) and t["tableId"] for t in tables)


def test_a_view_lookup_answers_the_view_asked_for_with_every_block(client: MCPClient) -> None:
    """cf8cf95 helpers/aitable.go getViewRaw: get_views {baseId, tableId, viewIds}; data.views[0] with viewType;
    the view get commands project aggregate, filter, sort, group, columns, custom.widthMap, conditionalFormats."""
    views = _call(client, "aitable", "get_views", {"baseId": SYN_VALUE, "tableId": SYN_VALUE,
                                                    "viewIds": [SYN_VALUE]})["data"]["views"]
    assert len(views) == 1 and views[0]["viewId"] == SYN_VALUE and views[0]["viewType"] == "Grid"
    assert isinstance(views[0]["custom"]["widthMap"], dict)
    assert all(isinstance(views[0][k], list) for k in ("filter", "sort", "group", "columns", "conditionalFormats"))


def test_filter_views_list_with_criteria_and_need_their_sheet(client: MCPClient) -> None:
    """helpers/sheet_filter_view.go fetchFilterViews: get_filter_views {nodeId, sheetId}; result.filterViews of
    id / filterViewId with criteria keyed by column offset. Without a node or sheet the service refuses."""
    views = _call(client, "sheet", "get_filter_views", {"nodeId": SYN_VALUE, "sheetId": SYN_VALUE})[
        "result"]["filterViews"]
    assert views and all(v["id"] == v["filterViewId"] and isinstance(v["criteria"]["0"], dict) for v in views)
    refused = client.call("sheet", "get_filter_views", {"nodeId": "", "sheetId": SYN_VALUE}).payload or {}
    assert (refused.get("success"), refused.get("code")) == (False, "PARAM_ERROR")


def test_a_department_search_has_a_numeric_id_at_the_top_level(client: MCPClient) -> None:
    """smart/resolve_dept.go resolveDeptItems and dept_members.go deptMembersCandidateItems: search_dept_by_keyword
    {query}; a top-level deptList (dept_members.go reads only top-level lists) of a numeric deptId and name."""
    depts = _call(client, "contact", "search_dept_by_keyword", {"query": SYN_VALUE})["deptList"]
    assert len(depts) == 1 and depts[0]["name"] == SYN_VALUE
    assert isinstance(depts[0]["deptId"], int) and not isinstance(depts[0]["deptId"], bool)


def test_a_mobile_lookup_names_one_user(client: MCPClient) -> None:
    """smart/by_mobile.go byMobileExtractUserID: search_user_by_mobile {mobile}; result[].userId (not "0")."""
    users = _call(client, "contact", "search_user_by_mobile", {"mobile": "13800138000"})["result"]
    assert len(users) == 1 and isinstance(users[0]["userId"], str) and users[0]["userId"] not in ("", "0")


def test_a_document_search_finds_the_document_of_the_name(client: MCPClient) -> None:
    """smart/find_doc.go shortcutFindDocItems: search_documents {keyword, pageSize}; result -> documents of title,
    url, docType, docId."""
    docs = _call(client, "doc", "search_documents", {"keyword": SYN_GROUP, "pageSize": 10})["result"]["documents"]
    assert [d["title"] for d in docs] == [SYN_GROUP]
    assert all(isinstance(docs[0][k], str) and docs[0][k] for k in ("url", "docType", "docId"))


def test_a_mail_user_search_finds_the_user_of_the_name(client: MCPClient) -> None:
    """smart/find_mail_user.go findMailUserUnwrap: search_mail_users {keyword, size}; result -> users of name,
    email, userId."""
    users = _call(client, "mail", "search_mail_users", {"keyword": SYN_PERSON, "size": "10"})["result"]["users"]
    assert [u["name"] for u in users] == [SYN_PERSON]
    assert "@" in users[0]["email"] and users[0]["userId"]


def test_the_mailbox_its_inbox_threads_and_mails(client: MCPClient) -> None:
    """smart/search_mail.go searchMailFirstMailbox (list_user_mailboxes: emailAccounts[].email), recent_mail.go
    recentMailInboxFolder (list_folders {email}: folders[] displayName 收件箱 -> id) and list_mailbox_threads
    {email, folderId, size} (threads: at least one, else '最近没有邮件'), search_emails {email, query, size}
    (messages of subject, from, messageId)."""
    accounts = _call(client, "mail", "list_user_mailboxes", {})["result"]["emailAccounts"]
    email = accounts[0]["email"]
    assert isinstance(email, str) and "@" in email
    folders = _call(client, "mail", "list_folders", {"email": email})["result"]["folders"]
    inbox = [f["id"] for f in folders if f["displayName"] in ("收件箱", "inbox")]
    assert len(inbox) == 1
    threads = _call(client, "mail", "list_mailbox_threads", {"email": email, "folderId": inbox[0], "size": 20})[
        "result"]["threads"]
    assert threads and all(t["threadId"] and t["subject"] and t["senders"] for t in threads)
    mails = _call(client, "mail", "search_emails", {"email": email, "query": "isRead:false", "size": "20"})[
        "result"]["messages"]
    assert mails and all(m["messageId"] and m["subject"] and m["from"]["email"] for m in mails)


def test_todo_cards_page_by_number_and_carry_the_worlds_names(client: MCPClient) -> None:
    """smart/todo_shared.go shortcutListAllTodoCards: get_user_todos_in_current_org {pageNum, pageSize (strings),
    roleTypes}; result.todoCards of taskId and subject; a page shorter than pageSize is the last."""
    args = {"roleTypes": ["executor"], "pageSize": "1"}
    first = _call(client, "todo", "get_user_todos_in_current_org", {**args, "pageNum": "1"})["result"]["todoCards"]
    second = _call(client, "todo", "get_user_todos_in_current_org", {**args, "pageNum": "2"})["result"]["todoCards"]
    last = _call(client, "todo", "get_user_todos_in_current_org", {**args, "pageNum": "3"})["result"]["todoCards"]
    assert [c["subject"] for c in first + second] == [SYN_GROUP, SYN_PERSON] and last == []
    assert all(isinstance(c["taskId"], str) and c["taskId"] for c in first + second)


def test_a_file_download_is_a_loopback_ticket_the_server_answers() -> None:
    """helpers/markdown.go fetchMarkdownContent -> drive.go downloadFromDrive: drive/get_file_info {fileId} gives the
    remote name (parseRemoteFileName: result.fileName), drive/download_file {fileId} a ticket (doc.go
    parseDownloadInfo: result.resourceUrl), fetched with a plain GET that must answer 200 (defaultHTTPGetFile)."""
    world = prebuilt(synthetic_world("schema-synthetic", {SYN_GROUP}, {SYN_PERSON}))
    with FakeMCPServer(scenario=world) as srv, MCPClient(srv.url) as c:
        info = _call(c, "drive", "get_file_info", {"fileId": SYN_VALUE})["result"]
        assert info["fileName"] == f"{SYN_VALUE}.md"
        url = _call(c, "drive", "download_file", {"fileId": SYN_VALUE})["result"]["resourceUrl"]
        assert isinstance(url, str) and url.startswith(srv.url + "/")
        got = c.request("GET", url[len(srv.url):], None, {})
        assert got.status == 200 and got.body.decode("utf-8").startswith("# ")
        assert srv.transcript.records[-1].outcome == "ok"
        doc = _call(c, "doc", "download_file", {"nodeId": SYN_VALUE})["result"]["resourceUrl"]
        assert doc == url
        srv.reset()  # a fresh world still points its tickets at this server
        assert _call(c, "drive", "download_file", {"fileId": SYN_VALUE})["result"]["resourceUrl"] == url


def test_a_message_the_schema_world_does_not_hold_is_one_of_its_synthetic_person(client: MCPClient) -> None:
    """shortcut/chat/lark_alignment.go resolveReplySender: im/list_messages_by_ids {openMsgIds}; a message of that
    id whose senderOpenDingTalkId is an open ID (chat.go isOpenID: D-prefixed). Only a world that answers what it
    does not model holds every message; the D1 worlds answer none for an unknown ID, as the service does."""
    rows = _call_rows(client, {"openMsgIds": [SYN_VALUE]})
    assert [(r["openMessageId"], r["senderOpenDingTalkId"]) for r in rows] == [(SYN_VALUE, SYN_ODID)]
    with FakeMCPServer(scenario=Scenario.build("d1", contacts=[{"name": SYN_PERSON, "openDingtalkId": SYN_ODID}])) \
            as srv, MCPClient(srv.url) as c:
        assert _call_rows(c, {"openMsgIds": [SYN_VALUE]}) == []


def _call_rows(client: MCPClient, args: dict[str, Any]) -> list[dict[str, Any]]:
    reply = client.call("im", "list_messages_by_ids", args)
    assert reply.status == 200 and isinstance(reply.payload, dict), reply.body
    rows = reply.payload["result"]["messages"]
    assert isinstance(rows, list)
    return rows


def test_a_users_profile_names_their_department_by_number(client: MCPClient) -> None:
    """smart/org.go and team.go shortcutOrgExtractDeptID: contact/get_user_info_by_user_ids {user_id_list};
    result[].orgEmployeeModel.depts[].deptId, a number; a contact of the world keeps its name."""
    rows = _call(client, "contact", "get_user_info_by_user_ids", {"user_id_list": [SYN_USER, SYN_VALUE]})["result"]
    models = [r["orgEmployeeModel"] for r in rows]
    assert [m["userId"] for m in models] == [SYN_USER, SYN_VALUE] and models[0]["name"] == SYN_PERSON
    assert all(isinstance(m["depts"][0]["deptId"], int) for m in models)


def test_a_listing_holds_the_innermost_names_so_a_filter_by_one_finds_one() -> None:
    """smart/todo_done.go shortcutTodoMatch and resolve_table.go filter a listing by substring and refuse several
    matches: in a world whose names nest (the examples world holds 周报, 团队周报, 整理周报 ...), the todos and
    tables hold the names that contain no other, so `--task 周报` and `--name 任务` each find exactly one."""
    nested = {"周报", "团队周报", "整理周报", "任务", "任务已完成", SYN_GROUP}
    with FakeMCPServer(scenario=prebuilt(synthetic_world("nested", nested, {SYN_PERSON}))) as srv, \
            MCPClient(srv.url) as c:
        cards = _call(c, "todo", "get_user_todos_in_current_org", {"pageNum": "1", "pageSize": "20"})["result"][
            "todoCards"]
        assert [x["subject"] for x in cards if "周报" in x["subject"]] == ["周报"]
        tables = _call(c, "aitable", "get_tables", {"baseId": "B"})["result"]["tables"]
        assert [t["name"] for t in tables if "任务" in t["name"]] == ["任务"]
        assert {SYN_GROUP, SYN_PERSON} <= {t["name"] for t in tables}
