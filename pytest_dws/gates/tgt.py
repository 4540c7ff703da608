"""TGT: the unified chat target contract (D1 §4, §6, §7.2, §8.2, §11.1), judged on the wire.

Per D1 §7.2 each gate runs for every command of the profile's test matrix (e81: +chat-members-list,
+chat-messages, +search-msg); TGT-OTHER-SHORTCUTS covers @me, invite, send-to-group and rename. Runs are
declared once (``_runs``) and judged by small functions that ACC-* and DS-SAFETY-HOLDOUT reuse."""

from __future__ import annotations

import re
from typing import Any

from pytest_dws.assertions import (
    ABSENT,
    assert_calls,
    assert_cid_never_searched,
    assert_conflict_rejected,
    assert_equal,
    assert_error_classified,
    assert_exit_code,
    assert_no_business_calls,
)
from pytest_dws.core.outcome import looks_like_cid
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.profile import Command
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.runtime import Spec
from pytest_dws.observe.runtime.targets import (
    PAGINATION_CASES,
    ambiguity_commands,
    ambiguous_run,
    conflict_runs,
    convlist_runs,
    group_commands,
    help_run,
    inv_of,
    judge_ambiguous,
    judge_effect,
    judge_name_rejected,
    judge_named,
    judge_stable,
    judge_two_queries,
    judge_zero_hit,
    matrix,
    mismatch_runs,
    name_rule_checks,
    others,
    pagination_run,
    target_cases,
    zero_hit_run,
)
from pytest_dws.registry import Access, NotApplicable, gate
from pytest_dws.verdict import attribution
from pytest_dws.verdict.cases import Check

MCP = {Access.MCP}

# -- gates ---------------------------------------------------------------------------------------------------
@gate("TGT-GROUP-CID", doc="D1 §4 rule 1, §7.2 b1", access=MCP, subjects=matrix)
def group_cid(ctx: GateContext, subject: str) -> None:
    """`--group <cid>` does no search, and the lower layer receives the same CID: it reaches the backend (in the
    business call or a lookup verifying it), no other group is targeted and the result is the target's alone
    (strict `scope-argument`: the business call itself carries it)."""
    cmd = rt.require(ctx, subject)
    judge_stable(ctx, cmd, cmd.group or "--group")


@gate("TGT-GROUP-NAME", doc="D1 §4 rule 2, §7.2 b2", access=MCP, subjects=matrix)
def group_name(ctx: GateContext, subject: str) -> None:
    """`--group <name>` is resolved uniquely before anything uses its CID or writes, and the lower layer then
    receives only the CID (never the name; the result is the target's alone; extra read-only calls allowed)."""
    cmd = rt.require(ctx, subject)
    judge_named(ctx, cmd, cmd.group or "--group")


def _flag(subject: str, flag: str | None, what: str) -> str:
    """The command's flag the gate is about; a matrix command without it is a profile fault of that item."""
    if not flag:
        raise AssertionError(f"{subject}: the profile names no {what}")
    return flag


@gate("TGT-CONVID-CID", doc="D1 §7.2 b3", access=MCP, subjects=matrix)
def convid_cid(ctx: GateContext, subject: str) -> None:
    """`--conversation-id <cid>` does no search, and the effect lands on that CID alone."""
    cmd = rt.require(ctx, subject)
    judge_stable(ctx, cmd, _flag(subject, cmd.conversation_id, "stable-ID flag (conversation_id)"))


@gate("TGT-CHATQUERY-NAME", doc="D1 §7.2 b4", access=MCP, subjects=matrix)
def chatquery_name(ctx: GateContext, subject: str) -> None:
    """`--chat-query <name>` resolves uniquely before its CID is used, and the effect lands on that CID alone (two
    names on a repeatable flag: both searched, the effect lands on both CIDs)."""
    cmd = rt.require(ctx, subject)
    query = _flag(subject, cmd.chat_query, "name-query flag (chat_query)")
    checks = [("one name", lambda: judge_named(ctx, cmd, query))]
    if cmd.chat_query_repeatable:
        checks.append(("two names", lambda: judge_two_queries(ctx, cmd)))
    rt.collect(checks)


@gate("TGT-CHATQUERY-CID", doc="D1 §4 rule 3, §7.2 b5", access=MCP, subjects=matrix)
def chatquery_cid(ctx: GateContext, subject: str) -> None:
    """`--chat-query <cid>` is normalised to a stable ID and never treated as a name: no search, the effect lands
    on that CID alone."""
    cmd = rt.require(ctx, subject)
    judge_stable(ctx, cmd, _flag(subject, cmd.chat_query, "name-query flag (chat_query)"))


@gate("TGT-MULTI-ZERO-CALLS", doc="D1 §4 rule 4, §6, §7.2 b6, §9.4, §10", access=MCP, subjects=ambiguity_commands)
def multi_zero_calls(ctx: GateContext, subject: str) -> None:
    """Several candidates => fail closed, 0 business calls, no default to the first candidate."""
    judge_ambiguous(ctx, rt.require(ctx, subject))


@gate("TGT-NAME-NEVER-IN-ID", doc="D1 §4 rule 5, §7.2 b7, §8.2", access=MCP)
def name_never_in_id(ctx: GateContext) -> None:
    """A natural name never reaches a stable-ID argument (every run; strict: a name to the ID flag fails)."""
    prof = rt.profile(ctx)
    strict = [(attribution.name_rejected_label(prof.commands[k]),
               lambda k=k: judge_name_rejected(ctx, prof.commands[k]))
              for k in prof.matrix() if prof.commands[k].conversation_id]
    rt.collect([*strict, *name_rule_checks(ctx)])


@gate("TGT-CID-NEVER-SEARCHED", doc="D1 §8.2", access=MCP)
def cid_never_searched(ctx: GateContext) -> None:
    """A CID never becomes a name-search keyword (every run of the D1 families)."""
    prof = rt.profile(ctx)
    runs = rt.everything(ctx)
    # Judged: a run given a CID that reached the backend (a run that sent nothing searched nothing, vacuously).
    judged = [(s, inv) for s, inv in runs if inv.calls() and any(looks_like_cid(a) for a in s.args)]
    if not judged:
        raise NotApplicable("no run given a CID sent any request: nothing to judge (TGT-GROUP-CID judges "
                            "whether a CID is used)", wants="a CID run that sent a request")
    rt.collect((" ".join(s.args), lambda inv=inv: assert_cid_never_searched(
        inv, tool=prof.resolver.name, keyword=prof.resolver_keyword)) for s, inv in runs)


@gate("TGT-ZERO-HIT", doc="D1 §4 rule 4, §8.2, §9.3", access=MCP, subjects=matrix)
def zero_hit(ctx: GateContext, subject: str) -> None:
    """Zero matches => fail closed with a typed error."""
    judge_zero_hit(ctx, rt.require(ctx, subject))


@gate("TGT-FULL-PAGINATION", doc="D1 §4 rule 2, §11.1", access=MCP, subjects=matrix)
def full_pagination(ctx: GateContext, subject: str) -> None:
    """Name resolution reads every page; unprovable completeness => fail closed."""
    cmd, prof = rt.require(ctx, subject), rt.profile(ctx)

    def later_page() -> None:
        inv = inv_of(ctx, pagination_run(ctx, cmd, "exact-on-later-page"))
        assert_no_business_calls(inv, what="exact namesake on page 2")
        assert_error_classified(inv, reason="resolution_ambiguous", what="exact namesake on page 2")
        searches = [r for r in inv.calls() if prof.resolver.matches(r)]
        cursor = (searches[1].arguments or {}).get(prof.resolver_cursor) if len(searches) > 1 else None
        if cursor != "c2":
            raise AssertionError(f"the second search must continue at the cursor of page 1 ('c2'), got "
                                 f"{cursor!r}\n{inv.describe()}")

    def incomplete(case: str) -> None:
        inv = inv_of(ctx, pagination_run(ctx, cmd, case))
        assert_no_business_calls(inv, what=case)
        assert_error_classified(inv, reason="resolution_incomplete", execution_started=False, what=case)

    rt.collect([("exact-on-later-page", later_page)] +
               [(case, lambda case=case: incomplete(case)) for case in PAGINATION_CASES[1:]])


@gate("TGT-TYPED-RESOLUTION", doc="D1 §4 last para, §8.2", access=MCP)
def typed_resolution(ctx: GateContext) -> None:
    """Zero hits, several candidates and type mismatch are typed resolution errors naming only real flags."""
    prof = rt.profile(ctx)
    typed = {"type": "resolution"}
    checks: list[Check] = []
    for key in prof.matrix()[:1]:
        cmd = prof.commands[key]
        for label, s in (("zero hits", zero_hit_run(ctx, cmd)), ("several candidates", ambiguous_run(ctx, cmd))):
            checks.append((f"{key} {label}", lambda s=s, label=label: assert_error_classified(
                inv_of(ctx, s), stage="target_resolution", execution_started=False, details=typed, what=label)))
    for cmd, s in mismatch_runs(ctx):
        checks.append((" ".join(s.args), lambda cmd=cmd, s=s: _judge_mismatch(ctx, cmd, s)))
    rt.collect(checks)


_FLAG_TOKEN = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _judge_mismatch(ctx: GateContext, cmd: Command, s: Spec) -> None:
    """Accepted => reached with the CID; rejected => typed target_type_mismatch, zero calls, real flags only."""
    __tracebackhide__ = True
    inv = inv_of(ctx, s)
    what = " ".join(s.args)
    if inv.exit_code == 0 and rt.looks_like_cid_args(s.args):
        judge_effect(ctx, cmd, inv, [rt.cast(ctx).cid], what)
        return
    if inv.calls():
        return  # not rejected: a name that reached the backend is TGT-NAME-NEVER-IN-ID's verdict
    assert_error_classified(inv, exit_code=3, reason="target_type_mismatch", details={"type": "resolution"},
                            what=what)
    helped = inv_of(ctx, help_run(ctx, cmd))
    known = set(_FLAG_TOKEN.findall(helped.stdout)) | {"--help"}
    err = inv.error or {}
    texts = [err.get("message"), err.get("hint"), *(err.get("actions") or [])]
    named = {f for t in texts if isinstance(t, str) for f in _FLAG_TOKEN.findall(t)}
    foreign = sorted(named - known)
    if foreign:
        raise AssertionError(f"{what}: the type-mismatch error names {foreign}, flags that "
                             f"`{' '.join(cmd.path)} --help` does not list\n{inv.describe()}")


def judge_union(ctx: GateContext, cmd: Command, s: Spec, cids: list[str]) -> None:
    """A multi-target command (the profile says so: repeatable --chat-query, e.g. +search-msg) given a direct
    target and a query: no given target is silently dropped: exit 0 and the effect lands on the union of the given
    and resolved CIDs (carried by the business call or verified by a lookup; the result is theirs alone)."""
    __tracebackhide__ = True
    inv = inv_of(ctx, s)
    what = " ".join(s.args)
    assert_exit_code(inv, 0, f"{what} (a multi-target command judges the union of its targets)")
    judge_effect(ctx, cmd, inv, sorted(set(cids)), what)


@gate("TGT-CONFLICT-DIRECT-QUERY", doc="D1 §4 (ResolveChatTarget(rt, directValue, queryValue)), §7.3 b2 "
      "('禁止静默覆盖'); docs/wire.md §8", access=MCP, subjects=matrix)
def conflict_direct_query(ctx: GateContext, subject: str) -> None:
    """A direct target and a name query together: none is silently dropped. A single-target command refuses the
    pair before any call; a multi-target one (the release's choice, recorded in its profile: a repeatable
    --chat-query) lands on the union of the given and resolved CIDs."""
    cmd = rt.require(ctx, subject)
    runs = conflict_runs(ctx, cmd)
    if not runs:
        raise AssertionError(f"{subject}: the profile gives no direct and query target flags to combine")
    if not cmd.chat_query_repeatable:
        rt.collect((" ".join(s.args), lambda s=s: assert_conflict_rejected(inv_of(ctx, s), " ".join(s.args)))
                   for s in runs)
        return
    c = rt.cast(ctx)
    want = {runs[0]: [c.cid, c.second_cid], **({runs[1]: [c.cid]} if len(runs) > 1 else {})}
    # The named direct target is resolved like --group <name> everywhere: a failure there is TGT-GROUP-NAME's.
    causes = {runs[0]: f"TGT-GROUP-NAME[{cmd.key}]"} if cmd.group and cmd.group in runs[0].args else {}
    rt.collect((" ".join(s.args), lambda s=s: judge_union(ctx, cmd, s, want[s]), causes.get(s)) for s in runs)


@gate("TGT-OTHER-SHORTCUTS", doc="D1 §4, §8.2, §11.1", access=MCP, subjects=others)
def other_shortcuts(ctx: GateContext, subject: str) -> None:
    """The same target contract holds for @me, invite, send-to-group and rename: a CID is not searched, a name is
    resolved before its CID is used or anything is written, and the effect lands on the target alone."""
    cmd = rt.require(ctx, subject)
    rt.collect(_case_checks(ctx, cmd, attributed=False))


def _case_checks(ctx: GateContext, cmd: Command, *, attributed: bool) -> list[tuple[str, Any, str | None]]:
    """One case per target flag and value kind; ``attributed``: each names the gate judging it on its own."""
    prof = rt.profile(ctx)
    out = []
    for flag, kind in target_cases(cmd):
        judge = judge_stable if kind == "cid" else judge_named
        cause = attribution.target_cause(prof, cmd, flag, kind) if attributed else None
        out.append((f"{flag} <{kind}>", lambda flag=flag, judge=judge: judge(ctx, cmd, flag), cause))
    return out


@gate("TGT-SAME-SEMANTICS", doc="D1 §4 table, §8.2", access=MCP, subjects=group_commands)
def same_semantics(ctx: GateContext, subject: str) -> None:
    """--group takes a name or a CID, --conversation-id only an ID, --chat-query a name (a CID is normalised)."""
    cmd = rt.require(ctx, subject)
    checks = _case_checks(ctx, cmd, attributed=True)
    if cmd.conversation_id:
        cause = attribution.name_rejected_case(cmd) if cmd.key in rt.profile(ctx).matrix() else None
        checks.append((f"{cmd.conversation_id} <name>", lambda: judge_name_rejected(ctx, cmd), cause))
    rt.collect(checks)


@gate("TGT-CONVLIST-UNCHANGED", doc="D1 §2.1, §8.1", access=MCP)
def convlist_unchanged(ctx: GateContext) -> None:
    """+conversation-list request assembly is unchanged: {limit:100}, a cursor only after page 1."""
    cmd = rt.require(ctx, "+conversation-list")
    single, paged = convlist_runs(ctx)
    c = rt.cast(ctx)

    def one_page() -> None:
        inv = inv_of(ctx, single)
        assert_exit_code(inv, 0, "one page")
        assert_calls(inv, [(cmd.call, None)], "one page")
        assert_equal(cmd.first_call, inv.calls()[0].arguments, "one page: the request arguments")
        _complete(inv, "one page")

    def pages() -> None:
        inv = inv_of(ctx, paged)
        assert_exit_code(inv, 0, "several pages")
        calls = [r for r in inv.calls() if cmd.call and cmd.call.matches(r)]
        cap = c.conversation_page_cap
        want = [dict(cmd.first_call)] + [{**cmd.first_call, cmd.cursor or "cursor": str(cap * i)}
                                         for i in range(1, -(-c.conversations // cap))]
        got = [{k: (str(v) if k == (cmd.cursor or "cursor") else v) for k, v in (r.arguments or {}).items()}
               for r in calls]
        assert_equal(want, got, "several pages: the requests (each cursor = the previous page's numeric nextCursor)",
                     context=inv.describe())
        _complete(inv, "several pages")

    rt.collect([("one page", one_page), ("several pages", pages)])


def _complete(inv: Any, what: str) -> None:
    __tracebackhide__ = True
    out = inv.stdout_json if isinstance(inv.stdout_json, dict) else {}
    assert_equal({"complete": True, "failedCount": 0}, {"complete": out.get("complete"),
                 "failedCount": out.get("failedCount", ABSENT)}, f"{what}: the result flags")
