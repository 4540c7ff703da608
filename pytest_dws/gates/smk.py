"""SMK: the four smoke commands of D1 §7.4 / §11.3, against the fake backend instead of a real tenant (each gate's
document reference says so: they are not D1 §7.4's real-environment smoke, which SMK-LIVE runs, opt-in).

They judge the result contract of the paginated reads (exit 0, complete/hasMore/partial/failedCount,
contractVersion, stopReason) on a deterministic world; counts come from the cast (cast.toml), never code. Each also
judges the completeness truth (D1 §9.4, §9.5, §11.1) of every paginated read of the profile that reads what its
command reads (the same business call): cut short by a failing later page, by its page limit, or by a cursor that
never ends, it never says ``complete: true`` and never exits 0 as a full result.
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
    assert_not_claimed_complete,
)
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.profile import Command
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.runtime import Sc, Spec
from pytest_dws.observe.runtime.targets import judge_effect
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


def members_commands(ctx: GateContext) -> list[Command]:
    """+chat-members-list as the profile pins it, and every run of its path the profile gives other business calls
    (both buckets: D1 §7.4 smoke 2 without --member-types)."""
    cmd = rt.require(ctx, "+chat-members-list")
    return [cmd, *(c for c in rt.profile(ctx).commands.values() if c.path == cmd.path and c.also_calls)]


def members_runs(ctx: GateContext) -> list[Spec]:
    c = rt.cast(ctx)
    return [rt.spec(cmd, [cmd.group or "--group", v]) for cmd in members_commands(ctx) for v in (c.name, c.cid)]


def bucket_failing_runs(ctx: GateContext) -> list[tuple[Command, Any, Spec]]:
    """Each other business call of a members run failing on every attempt (the bots read): ``(command, tool, run)``."""
    c = rt.cast(ctx)
    return [(cmd, tool, rt.spec(cmd, [cmd.group or "--group", c.cid], sc=Sc(reply="backend-dep", on=str(tool))))
            for cmd in members_commands(ctx) for tool in cmd.also_calls]


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


#: What cuts a paginated read short (the completeness truth cases): a later page failing on every attempt, the
#: page limit reached with pages left, a cursor that never ends (a fault the real service never sends).
TRUTH_CASES = ("later page failing", "page limit reached", "cursor never ends")


def paged(ctx: GateContext, smoke: str) -> list[Command]:
    """The paginated reads of the profile that read what the smoke command ``smoke`` reads (its business call)."""
    prof = rt.profile(ctx)
    if smoke not in prof.commands or prof.commands[smoke].call is None:
        return []
    call = str(prof.commands[smoke].call)
    return [c for c in prof.commands.values() if c.paginated and str(c.call) == call]


def truth_run(ctx: GateContext, cmd: Command, case: str) -> Spec:
    """``cmd`` on one row per page of its business call, given the unique group by its CID where it takes a
    target (a scoped read: its scope must not hide that the scan stopped early), asking for every page."""
    assert cmd.call is not None and cmd.page_limit is not None
    c, tool = rt.cast(ctx), cmd.call
    args = [*([cmd.group, c.cid] if cmd.group else []), *([cmd.page_all] if cmd.page_all else [])]
    one_per_page = ((tool.name, 1),)
    if case == "later page failing":
        return rt.spec(cmd, args, sc=Sc(reply="backend-dep", on=str(tool), after=1, page_caps=one_per_page))
    if case == "page limit reached":
        return rt.spec(cmd, [*args, cmd.page_limit, "1"], sc=Sc(page_caps=one_per_page))
    return rt.spec(cmd, args, sc=Sc(reply="endless", on=str(tool)))


def truth_checks(ctx: GateContext, smoke: str) -> list[tuple[str, Any]]:
    """One case per paginated read of ``smoke``'s kind and per way a read is cut short."""
    return [(f"{cmd.key}: {case}", lambda cmd=cmd, case=case: assert_not_claimed_complete(
        inv_of(ctx, truth_run(ctx, cmd, case)), what=f"{cmd.key}, {case}"))
        for cmd in paged(ctx, smoke) for case in TRUTH_CASES]


@rt.provider(F)
def _runs(ctx: GateContext) -> Iterable[Spec]:
    prof = rt.profile(ctx)
    if "+conversation-list" in prof.commands:
        yield conv_list_run(ctx)
        yield conv_list_failing_run(ctx)
    if "+chat-members-list" in prof.commands:
        yield from members_runs(ctx)
        yield from (s for _, _, s in bucket_failing_runs(ctx))
    if "+chat-messages" in prof.commands:
        yield from messages_runs(ctx)
    if "+search-msg" in prof.commands:
        yield from search_runs(ctx)
    for smoke in ("+conversation-list", "+chat-members-list", "+chat-messages", "+search-msg"):
        yield from (truth_run(ctx, cmd, case) for cmd in paged(ctx, smoke) for case in TRUTH_CASES)


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

    Also the write-free half of DS-SAFETY-HOLDOUT (3): a partial result never passes as complete. The failure is
    listed (``failures`` or ``failedCount``, the flags D1 §2.1 / §11.3 name); ``partial`` and the rest are the
    implementation's, judged only where they contradict ``complete`` (issue 35 rule 6)."""
    __tracebackhide__ = True
    what = "+conversation-list --page-all, page 2 failing"
    out = _result(inv_of(ctx, conv_list_failing_run(ctx)), what)
    assert_complete_is_truthful(out, complete=False, what=what)
    rows = out.get("conversations")
    kept = len(rows) if isinstance(rows, list) else None
    failures, failed = out.get("failures"), out.get("failedCount")
    listed = (isinstance(failures, list) and bool(failures)) or (isinstance(failed, int) and failed >= 1)
    if not listed or kept != rt.cast(ctx).conversation_page_cap:
        raise AssertionError(f"{what}: expected the failure listed (failures / failedCount >= 1) and the "
                             f"{rt.cast(ctx).conversation_page_cap} rows of page 1 kept; got failures="
                             f"{failures!r}, failedCount={failed!r}, {kept!r} rows")


@gate("SMK-CONV-LIST", doc="D1 §2.1, §7.4 smoke 1, §11.3; §9.4, §11.1 (on the fake backend)", access=MCP)
def conv_list(ctx: GateContext) -> None:
    """`+conversation-list --page-all`: exit 0, complete, count = N, failedCount 0; a read cut short (a failing later
    page, the page limit, an endless cursor) never says complete:true nor exits 0 as a full result."""

    def full() -> None:
        out = _result(inv_of(ctx, conv_list_run(ctx)), "+conversation-list --page-all")
        want = {"complete": True, "count": rt.cast(ctx).conversations, "failedCount": 0}  # D1 §2.1's flags
        assert_equal(want, _fields(out, want), "+conversation-list --page-all result")
        assert_complete_is_truthful(out, complete=True, what="+conversation-list --page-all")

    rt.collect([("every page", full), ("page 2 failing", lambda: judge_later_page_failure(ctx)),
                *truth_checks(ctx, "+conversation-list")])


@gate("SMK-MEMBERS", doc="D1 §7.4 smoke 2, §11.3; §9.4, §11.1 (on the fake backend)", access=MCP)
def members(ctx: GateContext) -> None:
    """`+chat-members-list --group <name or CID>`, pinned to users and with both buckets: unique resolution, complete,
    users bucket complete; every member read of the profile cut short (a failing later page, the page limit, an
    endless cursor, a failed bots read) says complete:false."""
    c = rt.cast(ctx)

    def check(s: Spec) -> None:
        what = " ".join(s.args)
        out = _result(inv_of(ctx, s), what)
        if not isinstance(out.get("contractVersion"), str) or not out["contractVersion"]:
            raise AssertionError(f"{what}: no contractVersion in the result")
        got = {"conversationId": out.get("conversationId", ABSENT), "complete": out.get("complete", ABSENT)}
        assert_equal({"conversationId": c.cid, "complete": True}, got, what)
        assert_complete_is_truthful(out, complete=True, what=what)
        users = (out.get("buckets") or {}).get("users") if isinstance(out.get("buckets"), dict) else None
        if isinstance(users, dict) and users.get("complete") is False:  # a bucket, where kept, may not contradict
            raise AssertionError(f"{what}: complete is true but .buckets.users.complete is false")

    rt.collect([*((" ".join(s.args), lambda s=s: check(s)) for s in members_runs(ctx)),
                *truth_checks(ctx, "+chat-members-list"),
                *((f"{cmd.key}: {tool} failing", lambda s=s, what=f"{cmd.key}, {tool} failing":
                   assert_not_claimed_complete(inv_of(ctx, s), what=what))
                  for cmd, tool, s in bucket_failing_runs(ctx))])


@gate("SMK-MESSAGES", doc="D1 §7.4 smoke 3, §11.3; §9.4, §11.1 (on the fake backend)", access=MCP)
def messages(ctx: GateContext) -> None:
    """`+chat-messages --group <name> --limit N`: one page that has more is not complete (stopReason single_page); a
    --page-all read cut short (a failing later page, the page limit, an endless cursor) says complete:false."""
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
        *truth_checks(ctx, "+chat-messages"),
    ])


@gate("SMK-SEARCH", doc="D1 §7.4 smoke 4, §11.3; §9.4, §11.1 (on the fake backend)", access=MCP)
def search(ctx: GateContext) -> None:
    """`+search-msg --chat-query <name> --query k` works and its result is the target's alone; `--chat-query <CID>
    --text-query k` searches no group; a scan cut short (a failing later page, the page limit, an endless cursor)
    says complete:false."""
    cmd, c, prof = rt.require(ctx, "+search-msg"), rt.cast(ctx), rt.profile(ctx)
    by_name, by_cid = search_runs(ctx)

    def check(s: Spec, stable: bool) -> None:
        what = " ".join(s.args)
        inv = inv_of(ctx, s)
        out = _result(inv, what)
        if stable:
            assert_not_called(inv, prof.resolver, what)
        judge_effect(ctx, cmd, inv, [c.cid], what)
        want = {"complete": True, "failedCount": 0, "failures": []}
        assert_equal(want, _fields(out, want), f"{what} result")

    rt.collect([("--chat-query <name>", lambda: check(by_name, False)),
                ("--chat-query <CID>", lambda: check(by_cid, True)),
                *truth_checks(ctx, "+search-msg")])


# -- SMK-LIVE: the real read-only smoke of D1 §7.4, opt-in ---------------------------------------------------------
def _live_commands(ctx: GateContext) -> list[tuple[str, list[str]]]:
    """(label, argv after the launcher) of D1 §7.4's real smoke: the profile's commands with the option's group."""
    prof = rt.profile(ctx)
    group, keyword = str(ctx.settings.live_smoke), str(prof.cli.get("live_smoke_keyword") or "dws-smoke-no-hit")
    out = []
    for cmd in prof.cli.get("live_smoke") or []:
        argv = [str(a).replace("{group}", group).replace("{keyword}", keyword) for a in cmd]
        label = " ".join(str(a) for a in cmd)
        out.append((label, [*prof.global_args(None), *argv]))
    return out


def _read_only(ctx: GateContext, label: str) -> str | None:
    """Why the live command ``label`` (the profile's words) must not run (None: the binary's own schema marks its
    command path read-only)."""
    from itertools import takewhile

    from pytest_dws.observe.binary.views import bin_schema

    view = bin_schema(ctx)
    words = list(takewhile(lambda a: not a.startswith("-"), label.split()))
    for n in range(len(words), 0, -1):
        key = view.primary.get(" ".join(words[:n])) or view.aliases.get(" ".join(words[:n]))
        if key is not None:
            effect = view.tools[key].get("effect")
            return None if effect == "read" else f"the schema marks {key} {effect!r}, not read-only"
    return "the schema does not list this command (only what it marks read-only runs against the service)"


def _refuse(why: str) -> None:
    from pytest_dws.core.errors import NotApplicable

    raise NotApplicable(f"refused: {why}", wants="a read-only smoke command")


def _shape(out: Any) -> dict[str, Any]:
    """What the report keeps of a live result: field names and counts, never the service's data."""
    if not isinstance(out, dict):
        return {"json": False}
    rows = {k: len(v) for k, v in out.items() if isinstance(v, list)}
    flags = {k: out[k] for k in ("complete", "hasMore", "partial", "failedCount", "stopReason", "count")
             if isinstance(out.get(k), (bool, int)) or (k == "stopReason" and isinstance(out.get(k), str))}
    return {"fields": sorted(out), "rows": rows, "flags": flags}


@gate("SMK-LIVE", doc="D1 §7.4 (\"真实环境至少再跑\"), §9.2 (\"真实环境 smoke 只验证集成连通性和输出合同\"), §10 b5",
      access={Access.BIN})
def live_smoke(ctx: GateContext) -> None:
    """Opt-in (--dws-live-smoke GROUP): D1 §7.4's four read-only commands against the real service with the user's
    own HOME, profile and environment; each exits 0 with a truthful result contract; a command the schema does not
    mark read-only is refused; the report keeps counts and field names, never the service's data."""
    import os
    import tempfile
    from pathlib import Path

    from pytest_dws.core.errors import NotApplicable
    from pytest_dws.launch import run_process

    if ctx.settings.live_smoke is None:
        raise NotApplicable("opt-in: --dws-live-smoke GROUP runs D1 §7.4's read-only smoke against the real service "
                            "with your own HOME and profile (every other SMK gate runs against the fake backend)",
                            wants="--dws-live-smoke (opt-in)")
    if ctx.settings.replay is not None or not ctx.settings.cli:
        raise NotApplicable("the live smoke needs a live --dws-cli (a recording has no service)",
                            wants="a live --dws-cli")
    checks: list[tuple[str, Any]] = []
    shapes: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="live-smoke-", dir=ctx.tmp_root))
    for label, argv in _live_commands(ctx):
        refused = _read_only(ctx, label)
        if refused is not None:
            shapes[label] = {"refused": refused}
            checks.append((label, lambda refused=refused: _refuse(refused)))
            continue
        inv = run_process([*ctx.settings.cli, *argv], env=dict(os.environ), cwd=work, timeout=ctx.settings.timeout)
        inv.envelope = rt.profile(ctx).errors  # the release's error keys (profile [errors])
        err = inv.error or {}
        shapes[label] = {"exit": inv.exit_code, **_shape(inv.stdout_json),
                         **({"error": {k: err[k] for k in ("category", "reason") if k in err}} if err else {})}

        def judge(inv: Any = inv, label: str = label) -> None:
            if inv.timed_out or inv.exit_code != 0:
                err = inv.error or {}
                raise AssertionError(f"{label}: exit {inv.exit_code}" + (" (timed out)" if inv.timed_out else "")
                                     + (f", error category {err.get('category')!r} reason {err.get('reason')!r}"
                                        if err else ""))
            out = inv.stdout_json
            want_complete = None if "+chat-messages" in label else True
            if isinstance(out, dict) and "+chat-messages" in label and out.get("hasMore") is True:
                want_complete = False  # one page that has more: never complete (D1 §11.3 single_page)
            assert_complete_is_truthful(out, complete=want_complete, what=label)

        checks.append((label, judge))
    ctx.section("live_smoke", shapes)
    if not checks:
        raise NotApplicable("the contract profile lists no live smoke commands ([cli] live_smoke)",
                            wants="live smoke commands in the contract profile")
    rt.collect(checks)
