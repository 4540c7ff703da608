"""TGT: the unified chat target contract (D1 §4, §6, §7.2, §8.2, §11.1), judged on the wire.

Per D1 §7.2 each gate runs for every command of the profile's test matrix (e81: +chat-members-list,
+chat-messages, +search-msg); TGT-OTHER-SHORTCUTS covers @me, invite, send-to-group and rename. Runs are
declared once (``_runs``) and judged by small functions that ACC-* and DS-SAFETY-HOLDOUT reuse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pytest_dws import attribution
from pytest_dws.assertions import (
    ABSENT,
    assert_calls,
    assert_cid_never_searched,
    assert_conflict_rejected,
    assert_equal,
    assert_error_classified,
    assert_exit_code,
    assert_fails_closed,
    assert_name_never_in_id_args,
    assert_no_business_calls,
    assert_not_called,
    assert_reaches_target,
)
from pytest_dws.gates import _d1 as d1
from pytest_dws.gates._d1 import WORLD, Sc, Spec
from pytest_dws.profile import Command
from pytest_dws.registry import Access, gate

F = "TGT"
MCP = {Access.MCP}


def matrix(ctx: Any) -> list[str]:
    return d1.profile(ctx).matrix()


def others(ctx: Any) -> list[str]:
    return d1.profile(ctx).others()


def group_commands(ctx: Any) -> list[str]:
    """Commands with a name-or-CID --group and a known business call (TGT-SAME-SEMANTICS)."""
    return [k for k, c in d1.profile(ctx).commands.items() if c.group and c.call and c.id_key]


def ambiguity_commands(ctx: Any) -> list[str]:
    """The matrix plus the write commands: several candidates must stop before any business call."""
    return d1.profile(ctx).ambiguity_commands()


# -- the runs --------------------------------------------------------------------------------------------
def name_flag(cmd: Command) -> str:
    """The flag that hands over a natural name for the resolution probes (zero hits, namesakes, pagination):
    the explicit name query when the command has one (e81's +search-msg --group takes IDs only, a deviation
    judged by TGT-GROUP-NAME alone), else the name-or-CID --group."""
    return cmd.chat_query or cmd.group or ""


def target_run(ctx: Any, cmd: Command, flag: str, value: str, sc: Sc = WORLD) -> Spec:
    return d1.spec(cmd, [flag, value], sc=sc, prof=d1.profile(ctx))


def ambiguous_run(ctx: Any, cmd: Command) -> Spec:
    return target_run(ctx, cmd, name_flag(cmd), d1.cast(ctx).twin_name)


def zero_hit_run(ctx: Any, cmd: Command) -> Spec:
    return target_run(ctx, cmd, name_flag(cmd), d1.cast(ctx).missing_name)


PAGINATION_CASES = ("exact-on-later-page", "full-page-no-metadata", "stalled-cursor", "more-without-cursor")


def pagination_run(ctx: Any, cmd: Command, case: str) -> Spec:
    c = d1.cast(ctx)
    name = c.twin_name if case == "exact-on-later-page" else c.name
    return target_run(ctx, cmd, name_flag(cmd), name, Sc(resolver=case))


def conflict_runs(ctx: Any, cmd: Command) -> list[Spec]:
    c, prof = d1.cast(ctx), d1.profile(ctx)
    out = []
    if cmd.group and cmd.chat_query:
        out.append(d1.spec(cmd, [cmd.group, c.name, cmd.chat_query, c.second_name], prof=prof))
    if cmd.conversation_id and cmd.chat_query:
        out.append(d1.spec(cmd, [cmd.conversation_id, c.cid, cmd.chat_query, c.name], prof=prof))
    return out


def two_queries_run(ctx: Any, cmd: Command) -> Spec:
    c = d1.cast(ctx)
    assert cmd.chat_query is not None
    return d1.spec(cmd, [cmd.chat_query, c.name, cmd.chat_query, c.second_name], prof=d1.profile(ctx))


def target_cases(cmd: Command) -> list[tuple[str, str]]:
    """(flag, "cid"|"name") pairs this command's target flags support under the unified contract."""
    out = []
    if cmd.group:
        out += [(cmd.group, "cid"), (cmd.group, "name")]
    if cmd.conversation_id:
        out.append((cmd.conversation_id, "cid"))
    if cmd.chat_query:
        out += [(cmd.chat_query, "cid"), (cmd.chat_query, "name")]
    return out


def case_run(ctx: Any, cmd: Command, flag: str, kind: str) -> Spec:
    c = d1.cast(ctx)
    return target_run(ctx, cmd, flag, c.cid if kind == "cid" else c.name)


def mismatch_runs(ctx: Any) -> list[tuple[Command, Spec]]:
    prof, c = d1.profile(ctx), d1.cast(ctx)
    out = []
    for probe in prof.probes.get("type_mismatch", []):
        cmd = prof.commands[probe["command"]]
        out.append((cmd, d1.spec(cmd, d1.expand(c, probe["args"]), prof=prof)))
    return out


def help_run(ctx: Any, cmd: Command) -> Spec:
    return Spec(None, (*cmd.path, d1.profile(ctx).cli["help"]), token=None, globals_=False)


def convlist_runs(ctx: Any) -> tuple[Spec, Spec]:
    """+conversation-list on one page, and over several pages (page cap of the cast)."""
    cmd = d1.require(ctx, "+conversation-list")
    assert cmd.call is not None
    paged = Sc(page_caps=((cmd.call.name, d1.cast(ctx).conversation_page_cap),))
    return d1.spec(cmd), d1.spec(cmd, sc=paged)


@d1.provider(F)
def _runs(ctx: Any) -> Iterable[Spec]:
    prof = d1.profile(ctx)
    for key in matrix(ctx):
        cmd = prof.commands[key]
        yield from (case_run(ctx, cmd, f, k) for f, k in target_cases(cmd))
        if cmd.chat_query_repeatable:
            yield two_queries_run(ctx, cmd)
        if cmd.conversation_id:
            yield target_run(ctx, cmd, cmd.conversation_id, d1.cast(ctx).name)
        yield zero_hit_run(ctx, cmd)
        yield from (pagination_run(ctx, cmd, case) for case in PAGINATION_CASES)
        yield from conflict_runs(ctx, cmd)
    for key in ambiguity_commands(ctx):
        yield ambiguous_run(ctx, prof.commands[key])
    for key in others(ctx) + group_commands(ctx):
        cmd = prof.commands[key]
        yield from (case_run(ctx, cmd, f, k) for f, k in target_cases(cmd))
    for cmd, s in mismatch_runs(ctx):
        yield s
        yield help_run(ctx, cmd)
    if "+conversation-list" in prof.commands:
        yield from convlist_runs(ctx)


def inv_of(ctx: Any, s: Spec) -> Any:
    return d1.run(ctx, F, s)


# -- judges (shared with ACC-* and DS-SAFETY-HOLDOUT) ----------------------------------------------------------
def judge_stable(ctx: Any, cmd: Command, flag: str, value: str | None = None) -> None:
    """A CID given to ``flag``: exit 0, no name search, the business call carries the same CID."""
    __tracebackhide__ = True
    c, prof = d1.cast(ctx), d1.profile(ctx)
    inv = inv_of(ctx, target_run(ctx, cmd, flag, value or c.cid))
    what = f"{cmd.key} {flag} <CID>"
    assert_exit_code(inv, 0, what)
    assert_not_called(inv, prof.resolver, what)
    assert_reaches_target(inv, cmd.call, cmd.id_key or "", [c.cid], args=cmd.call_args, what=what)


def judge_named(ctx: Any, cmd: Command, flag: str) -> None:
    """A unique natural name given to ``flag``: exactly [name search (first page), business call with the CID]."""
    __tracebackhide__ = True
    c, prof = d1.cast(ctx), d1.profile(ctx)
    inv = inv_of(ctx, target_run(ctx, cmd, flag, c.name))
    what = f"{cmd.key} {flag} <name>"
    assert_exit_code(inv, 0, what)
    first = {prof.resolver_keyword: c.name, **prof.resolver_first_page}
    assert_calls(inv, [(prof.resolver, first), (cmd.call, None)], what)
    assert_reaches_target(inv, cmd.call, cmd.id_key or "", [c.cid], args=cmd.call_args, what=what)


def judge_two_queries(ctx: Any, cmd: Command) -> None:
    """Two names to a repeatable --chat-query: two searches, then one business call with both CIDs."""
    __tracebackhide__ = True
    c, prof = d1.cast(ctx), d1.profile(ctx)
    inv = inv_of(ctx, two_queries_run(ctx, cmd))
    what = f"{cmd.key} {cmd.chat_query} <name> {cmd.chat_query} <second name>"
    assert_exit_code(inv, 0, what)
    searched = sorted((r.arguments or {}).get(prof.resolver_keyword) for r in inv.calls() if prof.resolver.matches(r))
    assert_equal(sorted([c.name, c.second_name]), searched, f"{what}: the name searches (one per name)",
                 context=inv.describe())
    assert_reaches_target(inv, cmd.call, cmd.id_key or "", [c.cid, c.second_cid], what=what)


def judge_ambiguous(ctx: Any, cmd: Command) -> None:
    """Two groups share the exact name: typed resolution_ambiguous listing both, zero business calls."""
    __tracebackhide__ = True
    c = d1.cast(ctx)
    inv = inv_of(ctx, ambiguous_run(ctx, cmd))
    what = f"{cmd.key} {name_flag(cmd)} <same-name groups>"
    assert_no_business_calls(inv, what=what)
    assert_error_classified(inv, exit_code=3, reason="resolution_ambiguous", execution_started=False,
                            retryable=False, details={"type": "resolution", "subtype": "ambiguous"}, what=what)
    candidates = (inv.error.get("details") or {}).get("candidates")
    rows = candidates if isinstance(candidates, list) else []
    listed = sorted(((str(r.get("openConversationId")), r.get("name")) if isinstance(r, dict)
                     else ("<not an object>", r) for r in rows), key=repr)
    assert_equal(sorted(((cid, c.twin_name) for cid in c.twin_cids), key=repr), listed,
                 f"{what}: .error.details.candidates as (openConversationId, name)")


def judge_zero_hit(ctx: Any, cmd: Command) -> None:
    """No group matches: exit 3, resolution_not_found, zero business calls."""
    __tracebackhide__ = True
    inv = inv_of(ctx, zero_hit_run(ctx, cmd))
    what = f"{cmd.key} {name_flag(cmd)} <unmatched name>"
    assert_no_business_calls(inv, what=what)
    assert_error_classified(inv, exit_code=3, reason="resolution_not_found", what=what)


def judge_name_rejected(ctx: Any, cmd: Command) -> None:
    """Strict: a natural name given to the stable-ID flag fails before any request."""
    __tracebackhide__ = True
    assert cmd.conversation_id is not None
    inv = inv_of(ctx, target_run(ctx, cmd, cmd.conversation_id, d1.cast(ctx).name))
    assert_fails_closed(inv, resolution_allowed=False, what=f"{cmd.key} {cmd.conversation_id} <name>")


def name_rule_label(s: Spec) -> str:
    """The case label of one run under the global name rule (TGT-NAME-NEVER-IN-ID)."""
    return "run: " + " ".join(s.args)


def name_rule_checks(ctx: Any) -> list[tuple[str, Any]]:
    """Over every run of the D1 families, one case each: no natural name under any stable-ID argument key."""
    c, prof = d1.cast(ctx), d1.profile(ctx)
    names, keys = set(c.names), set(prof.stable_keys)
    return [(name_rule_label(s), lambda inv=inv: assert_name_never_in_id_args(inv, names, keys))
            for s, inv in d1.everything(ctx)]


# -- gates ---------------------------------------------------------------------------------------------------
@gate("TGT-GROUP-CID", doc="D1 §4 rule 1, §7.2 b1", access=MCP, subjects=matrix)
def group_cid(ctx: Any, subject: str) -> None:
    """`--group <cid>` does no search, and the lower layer receives the same CID."""
    cmd = d1.require(ctx, subject)
    judge_stable(ctx, cmd, cmd.group or "--group")


@gate("TGT-GROUP-NAME", doc="D1 §4 rule 2, §7.2 b2", access=MCP, subjects=matrix)
def group_name(ctx: Any, subject: str) -> None:
    """`--group <name>` is resolved uniquely, and the lower layer then receives only the CID."""
    cmd = d1.require(ctx, subject)
    judge_named(ctx, cmd, cmd.group or "--group")


def _flag(subject: str, flag: str | None, what: str) -> str:
    """The command's flag the gate is about; a matrix command without it is a profile fault of that item."""
    if not flag:
        raise AssertionError(f"{subject}: the profile names no {what}")
    return flag


@gate("TGT-CONVID-CID", doc="D1 §7.2 b3", access=MCP, subjects=matrix)
def convid_cid(ctx: Any, subject: str) -> None:
    """`--conversation-id <cid>` does no search."""
    cmd = d1.require(ctx, subject)
    judge_stable(ctx, cmd, _flag(subject, cmd.conversation_id, "stable-ID flag (conversation_id)"))


@gate("TGT-CHATQUERY-NAME", doc="D1 §7.2 b4", access=MCP, subjects=matrix)
def chatquery_name(ctx: Any, subject: str) -> None:
    """`--chat-query <name>` resolves uniquely (two names on a repeatable flag: two searches, both CIDs)."""
    cmd = d1.require(ctx, subject)
    query = _flag(subject, cmd.chat_query, "name-query flag (chat_query)")
    checks = [("one name", lambda: judge_named(ctx, cmd, query))]
    if cmd.chat_query_repeatable:
        checks.append(("two names", lambda: judge_two_queries(ctx, cmd)))
    d1.collect(checks)


@gate("TGT-CHATQUERY-CID", doc="D1 §4 rule 3, §7.2 b5", access=MCP, subjects=matrix)
def chatquery_cid(ctx: Any, subject: str) -> None:
    """`--chat-query <cid>` is normalised to a stable ID and never treated as a name."""
    cmd = d1.require(ctx, subject)
    judge_stable(ctx, cmd, _flag(subject, cmd.chat_query, "name-query flag (chat_query)"))


@gate("TGT-MULTI-ZERO-CALLS", doc="D1 §4 rule 4, §6, §7.2 b6, §9.4, §10", access=MCP, subjects=ambiguity_commands)
def multi_zero_calls(ctx: Any, subject: str) -> None:
    """Several candidates => fail closed, 0 business calls, no default to the first candidate."""
    judge_ambiguous(ctx, d1.require(ctx, subject))


@gate("TGT-NAME-NEVER-IN-ID", doc="D1 §4 rule 5, §7.2 b7, §8.2", access=MCP)
def name_never_in_id(ctx: Any) -> None:
    """A natural name never reaches a stable-ID argument (every run; strict: a name to the ID flag fails)."""
    prof = d1.profile(ctx)
    strict = [(attribution.name_rejected_label(prof.commands[k]),
               lambda k=k: judge_name_rejected(ctx, prof.commands[k]))
              for k in prof.matrix() if prof.commands[k].conversation_id]
    d1.collect([*strict, *name_rule_checks(ctx)])


@gate("TGT-CID-NEVER-SEARCHED", doc="D1 §8.2", access=MCP)
def cid_never_searched(ctx: Any) -> None:
    """A CID never becomes a name-search keyword (every run of the D1 families)."""
    prof = d1.profile(ctx)
    d1.collect((" ".join(s.args), lambda inv=inv: assert_cid_never_searched(
        inv, tool=prof.resolver.name, keyword=prof.resolver_keyword)) for s, inv in d1.everything(ctx))


@gate("TGT-ZERO-HIT", doc="D1 §4 rule 4, §8.2, §9.3", access=MCP, subjects=matrix)
def zero_hit(ctx: Any, subject: str) -> None:
    """Zero matches => fail closed with a typed error."""
    judge_zero_hit(ctx, d1.require(ctx, subject))


@gate("TGT-FULL-PAGINATION", doc="D1 §4 rule 2, §11.1", access=MCP, subjects=matrix)
def full_pagination(ctx: Any, subject: str) -> None:
    """Name resolution reads every page; unprovable completeness => fail closed."""
    cmd, prof = d1.require(ctx, subject), d1.profile(ctx)

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

    d1.collect([("exact-on-later-page", later_page)] +
               [(case, lambda case=case: incomplete(case)) for case in PAGINATION_CASES[1:]])


@gate("TGT-TYPED-RESOLUTION", doc="D1 §4 last para, §8.2", access=MCP)
def typed_resolution(ctx: Any) -> None:
    """Zero hits, several candidates and type mismatch are typed resolution errors naming only real flags."""
    prof = d1.profile(ctx)
    typed = {"type": "resolution"}
    checks = []
    for key in prof.matrix()[:1]:
        cmd = prof.commands[key]
        for label, s in (("zero hits", zero_hit_run(ctx, cmd)), ("several candidates", ambiguous_run(ctx, cmd))):
            checks.append((f"{key} {label}", lambda s=s, label=label: assert_error_classified(
                inv_of(ctx, s), stage="target_resolution", execution_started=False, details=typed, what=label)))
    for cmd, s in mismatch_runs(ctx):
        checks.append((" ".join(s.args), lambda cmd=cmd, s=s: _judge_mismatch(ctx, cmd, s)))
    d1.collect(checks)


_FLAG_TOKEN = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _judge_mismatch(ctx: Any, cmd: Command, s: Spec) -> None:
    """Accepted => reached with the CID; rejected => typed target_type_mismatch, zero calls, real flags only."""
    __tracebackhide__ = True
    inv = inv_of(ctx, s)
    what = " ".join(s.args)
    if inv.exit_code == 0 and d1.looks_like_cid_args(s.args):
        assert_reaches_target(inv, cmd.call, cmd.id_key or "", [d1.cast(ctx).cid], what=what)
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


def judge_union(ctx: Any, cmd: Command, s: Spec, cids: list[str]) -> None:
    """A multi-target command (repeatable --chat-query, e.g. +search-msg) given a direct target and a query:
    both are targets (WIRE.md §8), each resolved: exit 0 and the business call carries exactly their CIDs."""
    __tracebackhide__ = True
    inv = inv_of(ctx, s)
    what = " ".join(s.args)
    assert_exit_code(inv, 0, f"{what} (a multi-target command searches both targets)")
    hits = [r for r in inv.calls() if cmd.call is not None and cmd.call.matches(r)]
    got = sorted({str(v) for r in hits for v in d1.ids_in(r, cmd.id_key or "")})
    assert_equal(sorted(set(cids)), got, f"{what}: the stable IDs of the business call", context=inv.describe())


@gate("TGT-CONFLICT-DIRECT-QUERY", doc="D1 §4 (contract); WIRE.md §8", access=MCP, subjects=matrix)
def conflict_direct_query(ctx: Any, subject: str) -> None:
    """A stable target and a name query given together are rejected before any call (a multi-target command,
    whose --chat-query repeats, searches the union instead; every target resolved)."""
    cmd = d1.require(ctx, subject)
    runs = conflict_runs(ctx, cmd)
    if not runs:
        raise AssertionError(f"{subject}: the profile gives no direct and query target flags to combine")
    if not cmd.chat_query_repeatable:
        d1.collect((" ".join(s.args), lambda s=s: assert_conflict_rejected(inv_of(ctx, s), " ".join(s.args)))
                   for s in runs)
        return
    c = d1.cast(ctx)
    want = {runs[0]: [c.cid, c.second_cid], **({runs[1]: [c.cid]} if len(runs) > 1 else {})}
    # The named direct target is resolved like --group <name> everywhere: a failure there is TGT-GROUP-NAME's.
    causes = {runs[0]: f"TGT-GROUP-NAME[{cmd.key}]"} if cmd.group and cmd.group in runs[0].args else {}
    d1.collect((" ".join(s.args), lambda s=s: judge_union(ctx, cmd, s, want[s]), causes.get(s)) for s in runs)


@gate("TGT-OTHER-SHORTCUTS", doc="D1 §4, §8.2, §11.1", access=MCP, subjects=others)
def other_shortcuts(ctx: Any, subject: str) -> None:
    """The same target contract holds for @me, invite, send-to-group and rename."""
    cmd = d1.require(ctx, subject)
    d1.collect(_case_checks(ctx, cmd, attributed=False))


def _case_checks(ctx: Any, cmd: Command, *, attributed: bool) -> list[tuple[str, Any, str | None]]:
    """One case per target flag and value kind; ``attributed``: each names the gate judging it on its own."""
    prof = d1.profile(ctx)
    out = []
    for flag, kind in target_cases(cmd):
        judge = judge_stable if kind == "cid" else judge_named
        cause = attribution.target_cause(prof, cmd, flag, kind) if attributed else None
        out.append((f"{flag} <{kind}>", lambda flag=flag, judge=judge: judge(ctx, cmd, flag), cause))
    return out


@gate("TGT-SAME-SEMANTICS", doc="D1 §4 table, §8.2", access=MCP, subjects=group_commands)
def same_semantics(ctx: Any, subject: str) -> None:
    """--group takes a name or a CID, --conversation-id only an ID, --chat-query a name (a CID is normalised)."""
    cmd = d1.require(ctx, subject)
    checks = _case_checks(ctx, cmd, attributed=True)
    if cmd.conversation_id:
        cause = attribution.name_rejected_case(cmd) if cmd.key in d1.profile(ctx).matrix() else None
        checks.append((f"{cmd.conversation_id} <name>", lambda: judge_name_rejected(ctx, cmd), cause))
    d1.collect(checks)


@gate("TGT-CONVLIST-UNCHANGED", doc="D1 §2.1, §8.1", access=MCP)
def convlist_unchanged(ctx: Any) -> None:
    """+conversation-list request assembly is unchanged: {limit:100}, a cursor only after page 1."""
    cmd = d1.require(ctx, "+conversation-list")
    single, paged = convlist_runs(ctx)
    c = d1.cast(ctx)

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

    d1.collect([("one page", one_page), ("several pages", pages)])


def _complete(inv: Any, what: str) -> None:
    __tracebackhide__ = True
    out = inv.stdout_json if isinstance(inv.stdout_json, dict) else {}
    assert_equal({"complete": True, "failedCount": 0}, {"complete": out.get("complete"),
                 "failedCount": out.get("failedCount", ABSENT)}, f"{what}: the result flags")
