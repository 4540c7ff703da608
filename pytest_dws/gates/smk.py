"""SMK: the four smoke commands of D1 §7.4 / §11.3, against the fake backend instead of a real tenant.

They judge the result contract of the paginated reads (exit 0, complete/hasMore/partial/failedCount,
contractVersion, stopReason) on a deterministic world; counts come from the cast (cast.toml), never code.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_dws.assertions import (
    ABSENT,
    assert_complete_is_truthful,
    assert_equal,
    assert_exit_code,
    assert_not_called,
    assert_reaches_target,
)
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.runtime import Sc, Spec
from pytest_dws.registry import Access, gate

F = "SMK"
MCP = {Access.MCP}


def conv_list_run(ctx: GateContext) -> Spec:
    cmd = rt.require(ctx, "+conversation-list")
    assert cmd.call is not None
    return rt.spec(cmd, sc=Sc(page_caps=((cmd.call.name, rt.cast(ctx).conversation_page_cap),)))


def conv_list_failing_run(ctx: GateContext) -> Spec:
    """Several pages, and page 2 fails (an internal dependency failure on every attempt)."""
    cmd = rt.require(ctx, "+conversation-list")
    assert cmd.call is not None
    caps = ((cmd.call.name, rt.cast(ctx).conversation_page_cap),)
    return rt.spec(cmd, sc=Sc(reply="backend-dep", on=str(cmd.call), page=2, page_caps=caps))


def members_runs(ctx: GateContext) -> list[Spec]:
    cmd, c = rt.require(ctx, "+chat-members-list"), rt.cast(ctx)
    return [rt.spec(cmd, [cmd.group or "--group", v]) for v in (c.name, c.cid)]


def messages_runs(ctx: GateContext) -> tuple[Spec, Spec]:
    """A page that has more (limit below the message count), and one that holds everything."""
    cmd, c = rt.require(ctx, "+chat-messages"), rt.cast(ctx)
    flag, limit = cmd.group or "--group", cmd.limit or "--limit"
    return (rt.spec(cmd, [flag, c.name, limit, str(max(1, c.messages - 3))]),
            rt.spec(cmd, [flag, c.name, limit, str(c.messages + 10)]))


def search_runs(ctx: GateContext) -> tuple[Spec, Spec]:
    """--chat-query <name> --query k, and --chat-query <CID> with the --text-query compatibility spelling."""
    cmd, c, prof = rt.require(ctx, "+search-msg"), rt.cast(ctx), rt.profile(ctx)
    q = cmd.chat_query or "--chat-query"
    alias = next((a for a in prof.aliases if a.gate == "ALI-SEARCH-TEXT-QUERY"), None)
    text = [alias.alias, "k"] if alias else []
    drop = (alias.canonical,) if alias else ()
    return rt.spec(cmd, [q, c.name]), rt.spec(cmd, [q, c.cid, *text], drop=drop)


@rt.provider(F)
def _runs(ctx: GateContext) -> Iterable[Spec]:
    prof = rt.profile(ctx)
    if "+conversation-list" in prof.commands:
        yield conv_list_run(ctx)
        yield conv_list_failing_run(ctx)
    if "+chat-members-list" in prof.commands:
        yield from members_runs(ctx)
    if "+chat-messages" in prof.commands:
        yield from messages_runs(ctx)
    if "+search-msg" in prof.commands:
        yield from search_runs(ctx)


def inv_of(ctx: GateContext, s: Spec) -> Any:
    return rt.run(ctx, F, s)


def _result(inv: Any, what: str) -> dict[str, Any]:
    __tracebackhide__ = True
    assert_exit_code(inv, 0, what)
    out = inv.stdout_json
    if not isinstance(out, dict):
        raise AssertionError(f"{what}: no JSON result object on stdout\n{inv.describe()}")
    return out


def _fields(out: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    return {k: out.get(k, ABSENT) for k in keys}


def judge_later_page_failure(ctx: GateContext) -> None:
    """Page 2 of `+conversation-list --page-all` fails: exit 0, page 1 kept, complete false, the failure listed.

    Also the write-free half of DS-SAFETY-HOLDOUT (3): a partial result never passes as complete.
    """
    __tracebackhide__ = True
    what = "+conversation-list --page-all, page 2 failing"
    out = _result(inv_of(ctx, conv_list_failing_run(ctx)), what)
    assert_complete_is_truthful(out, complete=False, what=what)
    rows = out.get("conversations")
    kept = len(rows) if isinstance(rows, list) else None
    failed = out.get("failedCount")
    if out.get("partial") is not True or not isinstance(failed, int) or failed < 1 or \
            kept != rt.cast(ctx).conversation_page_cap:
        raise AssertionError(f"{what}: expected partial:true, failedCount >= 1 and the "
                             f"{rt.cast(ctx).conversation_page_cap} rows of page 1 kept; got partial="
                             f"{out.get('partial')!r}, failedCount={failed!r}, {kept!r} rows")


@gate("SMK-CONV-LIST", doc="D1 §2.1, §7.4 smoke 1, §11.3", access=MCP)
def conv_list(ctx: GateContext) -> None:
    """`+conversation-list --page-all`: exit 0, complete, count = N, failedCount 0 (and truthful when a page fails)."""

    def full() -> None:
        out = _result(inv_of(ctx, conv_list_run(ctx)), "+conversation-list --page-all")
        want = {"complete": True, "count": rt.cast(ctx).conversations, "failedCount": 0, "partial": False}
        assert_equal(want, _fields(out, want), "+conversation-list --page-all result")
        assert_complete_is_truthful(out, complete=True, what="+conversation-list --page-all")

    rt.collect([("every page", full), ("page 2 failing", lambda: judge_later_page_failure(ctx))])


@gate("SMK-MEMBERS", doc="D1 §7.4 smoke 2, §11.3", access=MCP)
def members(ctx: GateContext) -> None:
    """`+chat-members-list --group <name or CID>`: unique resolution, complete, users bucket complete."""
    c = rt.cast(ctx)

    def check(s: Spec) -> None:
        what = " ".join(s.args)
        out = _result(inv_of(ctx, s), what)
        if not isinstance(out.get("contractVersion"), str) or not out["contractVersion"]:
            raise AssertionError(f"{what}: no contractVersion in the result")
        users = (out.get("buckets") or {}).get("users") if isinstance(out.get("buckets"), dict) else None
        got = {"conversationId": out.get("conversationId", ABSENT), "complete": out.get("complete", ABSENT),
               "buckets.users.complete": users.get("complete", ABSENT) if isinstance(users, dict) else ABSENT}
        assert_equal({"conversationId": c.cid, "complete": True, "buckets.users.complete": True}, got, what)
        assert_complete_is_truthful(out, complete=True, what=what)

    rt.collect((" ".join(s.args), lambda s=s: check(s)) for s in members_runs(ctx))


@gate("SMK-MESSAGES", doc="D1 §7.4 smoke 3, §11.3", access=MCP)
def messages(ctx: GateContext) -> None:
    """`+chat-messages --group <name> --limit N`: one page that has more is not complete (stopReason single_page)."""
    cmd = rt.require(ctx, "+chat-messages")
    more, all_ = messages_runs(ctx)
    version = {"contractVersion": cmd.contract_version} if cmd.contract_version else {}

    def check(s: Spec, want: dict[str, Any]) -> None:
        what = " ".join(s.args)
        out = _result(inv_of(ctx, s), what)
        want = {**version, **want}
        assert_equal(want, _fields(out, want), f"{what} result")
        assert_complete_is_truthful(out, complete=want["complete"], what=what)

    rt.collect([
        ("page with more", lambda: check(more, {"complete": False, "hasMore": True, "stopReason": "single_page"})),
        ("whole history", lambda: check(all_, {"complete": True, "hasMore": False, "stopReason": "source_complete"})),
    ])


@gate("SMK-SEARCH", doc="D1 §7.4 smoke 4, §11.3", access=MCP)
def search(ctx: GateContext) -> None:
    """`+search-msg --chat-query <name> --query k` works; `--chat-query <CID> --text-query k` searches no group."""
    cmd, c, prof = rt.require(ctx, "+search-msg"), rt.cast(ctx), rt.profile(ctx)
    by_name, by_cid = search_runs(ctx)

    def check(s: Spec, stable: bool) -> None:
        what = " ".join(s.args)
        inv = inv_of(ctx, s)
        out = _result(inv, what)
        if stable:
            assert_not_called(inv, prof.resolver, what)
        assert_reaches_target(inv, cmd.call, cmd.id_key or "", [c.cid], what=what)
        want = {"complete": True, "failedCount": 0, "failures": []}
        assert_equal(want, _fields(out, want), f"{what} result")

    rt.collect([("--chat-query <name>", lambda: check(by_name, False)),
                ("--chat-query <CID>", lambda: check(by_cid, True))])
