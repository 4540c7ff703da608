"""The chat target contract's runs and judges (D1 §4, §6, §7.2, §8.2): shared by TGT, ACC and ERR.

Per D1 §7.2 each run exists for every command of the profile's test matrix (e81: +chat-members-list,
+chat-messages, +search-msg); the judges are small functions that TGT-*, ACC-* and ERR-EXEC-STARTED reuse."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_dws.assertions import (
    assert_equal,
    assert_error_classified,
    assert_exit_code,
    assert_fails_closed,
    assert_name_never_in_id_args,
    assert_no_business_calls,
    assert_not_called,
    assert_resolved_then_called,
    assert_target_effect,
)
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.profile import Command
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.runtime import WORLD, Sc, Spec

F = "TGT"


def matrix(ctx: GateContext) -> list[str]:
    return rt.profile(ctx).matrix()


def others(ctx: GateContext) -> list[str]:
    return rt.profile(ctx).others()


def group_commands(ctx: GateContext) -> list[str]:
    """Commands with a name-or-CID --group and a known business call (TGT-SAME-SEMANTICS)."""
    return [k for k, c in rt.profile(ctx).commands.items() if c.group and c.call and c.id_key]


def ambiguity_commands(ctx: GateContext) -> list[str]:
    """The matrix plus the write commands: several candidates must stop before any business call."""
    return rt.profile(ctx).ambiguity_commands()


# -- the runs --------------------------------------------------------------------------------------------
def name_flag(cmd: Command) -> str:
    """The flag that hands over a natural name for the resolution probes (zero hits, namesakes, pagination):
    the explicit name query when the command has one (e81's +search-msg --group takes IDs only, a deviation
    judged by TGT-GROUP-NAME alone), else the name-or-CID --group."""
    return cmd.chat_query or cmd.group or ""


def target_run(ctx: GateContext, cmd: Command, flag: str, value: str, sc: Sc = WORLD) -> Spec:
    return rt.spec(cmd, [flag, value], sc=sc, prof=rt.profile(ctx))


def ambiguous_run(ctx: GateContext, cmd: Command) -> Spec:
    return target_run(ctx, cmd, name_flag(cmd), rt.cast(ctx).twin_name)


def zero_hit_run(ctx: GateContext, cmd: Command) -> Spec:
    return target_run(ctx, cmd, name_flag(cmd), rt.cast(ctx).missing_name)


PAGINATION_CASES = ("exact-on-later-page", "full-page-no-metadata", "stalled-cursor", "more-without-cursor")


def pagination_run(ctx: GateContext, cmd: Command, case: str) -> Spec:
    c = rt.cast(ctx)
    name = c.twin_name if case == "exact-on-later-page" else c.name
    return target_run(ctx, cmd, name_flag(cmd), name, Sc(resolver=case))


def conflict_runs(ctx: GateContext, cmd: Command) -> list[Spec]:
    c, prof = rt.cast(ctx), rt.profile(ctx)
    out = []
    if cmd.group and cmd.chat_query:
        out.append(rt.spec(cmd, [cmd.group, c.name, cmd.chat_query, c.second_name], prof=prof))
    if cmd.conversation_id and cmd.chat_query:
        out.append(rt.spec(cmd, [cmd.conversation_id, c.cid, cmd.chat_query, c.name], prof=prof))
    return out


def two_queries_run(ctx: GateContext, cmd: Command) -> Spec:
    c = rt.cast(ctx)
    assert cmd.chat_query is not None
    return rt.spec(cmd, [cmd.chat_query, c.name, cmd.chat_query, c.second_name], prof=rt.profile(ctx))


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


def case_run(ctx: GateContext, cmd: Command, flag: str, kind: str) -> Spec:
    c = rt.cast(ctx)
    return target_run(ctx, cmd, flag, c.cid if kind == "cid" else c.name)


def mismatch_runs(ctx: GateContext) -> list[tuple[Command, Spec]]:
    prof, c = rt.profile(ctx), rt.cast(ctx)
    out = []
    for probe in prof.probes.get("type_mismatch", []):
        cmd = prof.commands[probe["command"]]
        out.append((cmd, rt.spec(cmd, rt.expand(c, probe["args"]), prof=prof)))
    return out


def help_run(ctx: GateContext, cmd: Command) -> Spec:
    return rt.call_of(None, (*cmd.path, rt.profile(ctx).cli["help"]), token=None, globals_=False)


def convlist_runs(ctx: GateContext) -> tuple[Spec, Spec]:
    """+conversation-list on one page, and over several pages (page cap of the cast)."""
    cmd = rt.require(ctx, "+conversation-list")
    assert cmd.call is not None
    paged = Sc(page_caps=((cmd.call.name, rt.cast(ctx).conversation_page_cap),))
    return rt.spec(cmd), rt.spec(cmd, sc=paged)


@rt.provider(F)
def _runs(ctx: GateContext) -> Iterable[Spec]:
    prof = rt.profile(ctx)
    for key in matrix(ctx):
        cmd = prof.commands[key]
        yield from (case_run(ctx, cmd, f, k) for f, k in target_cases(cmd))
        if cmd.chat_query_repeatable:
            yield two_queries_run(ctx, cmd)
        if cmd.conversation_id:
            yield target_run(ctx, cmd, cmd.conversation_id, rt.cast(ctx).name)
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


def inv_of(ctx: GateContext, s: Spec) -> Any:
    return rt.run(ctx, F, s)


# -- judges (shared with ACC-* and DS-SAFETY-HOLDOUT) ----------------------------------------------------------
def strict(ctx: GateContext, reading: str) -> bool:
    """Whether the run judges the strict reading ``reading`` (``--dws-strict``, docs/contract.md R9)."""
    return reading in getattr(ctx.settings, "strict", frozenset())


def world_cids(ctx: GateContext) -> frozenset[str]:
    """Every group ID of the D1 world: a result naming one that is not the target is out of scope."""
    return frozenset(str(g["cid"]) for g in rt.cast(ctx).world["world"].get("groups") or [])


def judge_effect(ctx: GateContext, cmd: Command, inv: Any, cids: list[str], what: str) -> None:
    """Where the effect lands (D1 §7.2 b1/b2, effect reading; strict: the business call's ID argument): the
    business call was sent, the targets reached the backend and nothing else did, the result is theirs alone."""
    __tracebackhide__ = True
    assert_target_effect(inv, cmd.call, cmd.id_key or "", cids, stable_keys=rt.profile(ctx).stable_keys,
                         world_cids=world_cids(ctx), args=cmd.call_args,
                         strict=strict(ctx, "scope-argument"), what=what)


def judge_resolution(ctx: GateContext, cmd: Command, inv: Any, names: list[str], cids: list[str], what: str) -> None:
    """D1 §4 rule 2's order: every name searched (nothing else), nothing used its CID or wrote before the
    resolution ended, then the business call (extra read-only calls anywhere: no sentence forbids them)."""
    __tracebackhide__ = True
    prof = rt.profile(ctx)
    assert_resolved_then_called(inv, prof.resolver, prof.resolver_keyword, names, cmd.call, what, cids=cids,
                                stable_keys=prof.stable_keys)


def judge_stable(ctx: GateContext, cmd: Command, flag: str, value: str | None = None) -> None:
    """A CID given to ``flag``: exit 0, no name search, and the effect lands on that CID alone (D1 §7.2 b1)."""
    __tracebackhide__ = True
    c, prof = rt.cast(ctx), rt.profile(ctx)
    inv = inv_of(ctx, target_run(ctx, cmd, flag, value or c.cid))
    what = f"{cmd.key} {flag} <CID>"
    assert_exit_code(inv, 0, what)
    assert_not_called(inv, prof.resolver, what)
    judge_effect(ctx, cmd, inv, [c.cid], what)


def judge_named(ctx: GateContext, cmd: Command, flag: str) -> None:
    """A unique natural name given to ``flag``: it is resolved by search (D1 §4 rule 2: however many pages) before
    anything uses its CID, and the effect lands on that CID alone (never on the name: D1 §7.2 b2, b7)."""
    __tracebackhide__ = True
    c = rt.cast(ctx)
    inv = inv_of(ctx, target_run(ctx, cmd, flag, c.name))
    what = f"{cmd.key} {flag} <name>"
    assert_exit_code(inv, 0, what)
    judge_resolution(ctx, cmd, inv, [c.name], [c.cid], what)
    judge_effect(ctx, cmd, inv, [c.cid], what)


def judge_two_queries(ctx: GateContext, cmd: Command) -> None:
    """Two names to a repeatable --chat-query: both searched, then the effect lands on both CIDs (the union)."""
    __tracebackhide__ = True
    c = rt.cast(ctx)
    inv = inv_of(ctx, two_queries_run(ctx, cmd))
    what = f"{cmd.key} {cmd.chat_query} <name> {cmd.chat_query} <second name>"
    assert_exit_code(inv, 0, what)
    judge_resolution(ctx, cmd, inv, [c.name, c.second_name], [c.cid, c.second_cid], what)
    judge_effect(ctx, cmd, inv, [c.cid, c.second_cid], what)


def judge_ambiguous(ctx: GateContext, cmd: Command) -> None:
    """Two groups share the exact name: typed resolution_ambiguous listing both, zero business calls."""
    __tracebackhide__ = True
    c = rt.cast(ctx)
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


def judge_zero_hit(ctx: GateContext, cmd: Command) -> None:
    """No group matches: exit 3, resolution_not_found, zero business calls."""
    __tracebackhide__ = True
    inv = inv_of(ctx, zero_hit_run(ctx, cmd))
    what = f"{cmd.key} {name_flag(cmd)} <unmatched name>"
    assert_no_business_calls(inv, what=what)
    assert_error_classified(inv, exit_code=3, reason="resolution_not_found", what=what)


def judge_name_rejected(ctx: GateContext, cmd: Command) -> None:
    """Strict: a natural name given to the stable-ID flag fails before any request."""
    __tracebackhide__ = True
    assert cmd.conversation_id is not None
    inv = inv_of(ctx, target_run(ctx, cmd, cmd.conversation_id, rt.cast(ctx).name))
    assert_fails_closed(inv, resolution_allowed=False, what=f"{cmd.key} {cmd.conversation_id} <name>")


def name_rule_label(s: Spec) -> str:
    """The case label of one run under the global name rule (TGT-NAME-NEVER-IN-ID)."""
    return "run: " + " ".join(s.args)


def name_rule_checks(ctx: GateContext) -> list[tuple[str, Any]]:
    """Over every run of the D1 families, one case each: no natural name under any stable-ID argument key."""
    c, prof = rt.cast(ctx), rt.profile(ctx)
    names, keys = set(c.names), set(prof.stable_keys)
    return [(name_rule_label(s), lambda inv=inv: assert_name_never_in_id_args(inv, names, keys))
            for s, inv in rt.everything(ctx)]
