"""ALI: compatibility flag aliases (D1 §5, §7.3, §8.3, §11.1), the binary gates.

An alias is judged by equivalence: the alias run and the canonical run (identical other arguments, time
arguments pinned by the profile) must send the same ordered (path, tool, arguments) backend calls, or, for a
write under --dry-run, print the same invocation preview. ALI-SCHEMA-FACTS, ALI-NO-SECOND-ENTRY and
ALI-SKILL-NOT-DEFAULT are schema/source gates and live elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_dws.assertions import (
    assert_alias_equivalent,
    assert_calls,
    assert_conflict_rejected,
    assert_exit_code,
    assert_fails_closed,
    assert_reaches_target,
)
from pytest_dws.errors import NotApplicable
from pytest_dws.gates import _d1 as d1
from pytest_dws.gates._d1 import Spec
from pytest_dws.profile import Alias
from pytest_dws.registry import Access, gate

F = "ALI"
MCP = {Access.MCP}


def alias_labels(ctx: Any) -> list[str]:
    return [a.label for a in d1.profile(ctx).aliases]


def _alias(ctx: Any, label: str) -> Alias:
    for a in d1.profile(ctx).aliases:
        if a.label == label:
            return a
    raise NotApplicable(f"the contract profile has no alias {label!r}")


def gate_alias(ctx: Any, gate_id: str) -> Alias:
    alias = d1.profile(ctx).alias_for_gate(gate_id)
    if alias is None:
        raise NotApplicable(f"the contract profile names no alias for {gate_id}")
    return alias


def pair(ctx: Any, a: Alias, spelling: str) -> Spec:
    """The run of ``a`` with ``spelling`` (the alias or a canonical twin); writes run as a dry-run preview."""
    prof, c = d1.profile(ctx), d1.cast(ctx)
    cmd = prof.command(a.command)
    extra = [prof.cli["dry_run"]] if cmd.write else []
    if a.kind == "command":
        return d1.spec(cmd, d1.expand(c, a.args), prof=prof, path=(*cmd.path[:-1], spelling), extra=extra)
    drop = (a.canonical, a.alias, *a.also)
    return d1.spec(cmd, d1.expand(c, a.args, flag=spelling), prof=prof, drop=drop, extra=extra)


def rename_runs(ctx: Any, a: Alias) -> tuple[Spec, Spec]:
    """The command alias, confirmed, on a unique name and on an ambiguous name (ALI-CHAT-RENAME b, c)."""
    prof, c = d1.profile(ctx), d1.cast(ctx)
    cmd = prof.command(a.command)
    path = (*cmd.path[:-1], a.alias)
    flag = cmd.group or "--group"
    return (d1.spec(cmd, [flag, c.name], prof=prof, path=path),
            d1.spec(cmd, [flag, c.twin_name], prof=prof, path=path))


def conflict_run(ctx: Any, command: str, args: tuple[str, ...]) -> Spec:
    prof = d1.profile(ctx)
    return d1.spec(prof.command(command), d1.expand(d1.cast(ctx), args), prof=prof)


def help_runs(ctx: Any) -> list[tuple[str, Spec, list[str], list[tuple[str, ...]]]]:
    """(label, help run, names that must be absent, groups of canonical twins of which one must be listed) per
    help page. A twin group: the canonical spelling and its `also` twins (D1 §5 row 4: `--open-conversation-id`
    = `--conversation-id` = `--group`; at e81 `--conversation-id` is itself hidden and `--group` is listed)."""
    prof = d1.profile(ctx)
    pages: dict[tuple[str, ...], tuple[list[str], list[tuple[str, ...]]]] = {}
    for a in prof.aliases:
        cmd = prof.command(a.command)
        page = cmd.path if a.kind == "flag" else cmd.path[:-1]
        hidden, shown = pages.setdefault(page, ([], []))
        hidden.append(a.alias)
        if a.gate:  # a canonical twin of each D1 §5 spelling must be listed (no vacuous pass)
            shown.append((a.canonical, *a.also))
    out = []
    for page, (hidden, shown) in pages.items():
        s = Spec(None, (*page, prof.cli["help"]), token=None, globals_=False)
        twins = sorted({tuple(t for t in grp if t not in hidden) for grp in shown} - {()})
        out.append((" ".join(page), s, sorted(set(hidden)), twins))
    return out


@d1.provider(F)
def _runs(ctx: Any) -> Iterable[Spec]:
    prof = d1.profile(ctx)
    for a in prof.aliases:
        yield pair(ctx, a, a.alias)
        yield from (pair(ctx, a, s) for s in (a.canonical, *a.also))
        if a.kind == "command":
            yield from rename_runs(ctx, a)
    for command, args in prof.conflicts:
        yield conflict_run(ctx, command, args)
    for _, s, _, _ in help_runs(ctx):
        yield s


def inv_of(ctx: Any, s: Spec) -> Any:
    return d1.run(ctx, F, s)


def judge_equivalent(ctx: Any, a: Alias) -> None:
    """The alias yields exactly the canonical invocation (and that of every `also` twin)."""
    __tracebackhide__ = True
    alias = inv_of(ctx, pair(ctx, a, a.alias))
    d1.collect((f"{a.alias} = {twin}", lambda twin=twin: assert_alias_equivalent(
        alias, inv_of(ctx, pair(ctx, a, twin)), f"{a.label} vs {twin}")) for twin in (a.canonical, *a.also))


def judge_accepted(ctx: Any, a: Alias) -> None:
    """The alias spelling runs (exit 0), never an unknown flag or command (ACC-DRIFT-11)."""
    __tracebackhide__ = True
    assert_exit_code(inv_of(ctx, pair(ctx, a, a.alias)), 0, f"{a.label}: the compatibility spelling must be accepted")


#: The six flag spellings of D1 §5 (rows 1-6): gate id -> (doc, summary). Each alias must yield exactly the
#: invocation of its canonical twin(s), so one check serves all six (the profile names the runs).
FLAG_ALIAS_GATES = {
    "ALI-SEARCH-TEXT": ("D1 §5 row 1", "`+search-msg --text` is a hidden alias of `--query`: same search request."),
    "ALI-SEARCH-TEXT-QUERY": ("D1 §5 row 2",
                              "`+search-msg --text-query` is a hidden alias of `--query`: same search request."),
    "ALI-MSG-PAGE-SIZE": ("D1 §5 row 3",
                          "`+chat-messages --page-size` is a hidden alias of `--limit`: same message-list request."),
    "ALI-MSG-OPEN-CONV-ID": ("D1 §5 row 4", "`+chat-messages --open-conversation-id <CID>` = `--conversation-id "
                                            "<CID>` = `--group <CID>`."),
    "ALI-MEMBERS-CHAT": ("D1 §5 row 5", "`+chat-members-list --chat <CID>` = `--conversation-id <CID>`."),
    "ALI-MEMBERS-OPEN-CONV-ID": ("D1 §5 row 6",
                                 "`+chat-members-list --open-conversation-id <CID>` = `--conversation-id <CID>`."),
}


def _register_flag_alias_gate(gate_id: str, doc: str, summary: str) -> None:
    def check(ctx: Any) -> None:
        judge_equivalent(ctx, gate_alias(ctx, gate_id))

    check.__doc__ = summary
    check.__name__ = check.__qualname__ = "flag_alias_" + gate_id[4:].lower().replace("-", "_")
    gate(gate_id, doc=doc, access=MCP)(check)


for _gate_id, (_doc, _summary) in FLAG_ALIAS_GATES.items():
    _register_flag_alias_gate(_gate_id, _doc, _summary)


@gate("ALI-CHAT-RENAME", doc="D1 §5 row 7, §11.3", access=MCP)
def chat_rename(ctx: Any) -> None:
    """`+chat-rename` = `+chat-update`: same dry-run preview; a name is resolved uniquely before the write."""
    a = gate_alias(ctx, "ALI-CHAT-RENAME")
    prof, c = d1.profile(ctx), d1.cast(ctx)
    cmd = prof.command(a.command)
    named, twins = rename_runs(ctx, a)

    def preview() -> None:
        judge_equivalent(ctx, a)
        d1.collect((s, lambda s=s: assert_calls(inv_of(ctx, pair(ctx, a, s)), [], f"{s} --dry-run"))
                   for s in (a.alias, a.canonical))

    def by_name() -> None:
        inv = inv_of(ctx, named)
        assert_calls(inv, [(prof.resolver, {prof.resolver_keyword: c.name}), (cmd.call, None)], f"{a.alias} <name>")
        assert_reaches_target(inv, cmd.call, cmd.id_key or "", [c.cid], args=cmd.call_args, what=a.alias)

    def ambiguous() -> None:
        assert_fails_closed(inv_of(ctx, twins), what=f"{a.alias} <same-name groups>")

    d1.collect([("dry-run preview", preview), ("unique name", by_name), ("ambiguous name", ambiguous)])


@gate("ALI-EQUIV-INVOCATION", doc="D1 §7.3 b1, §9.3", access=MCP, subjects=alias_labels)
def equiv_invocation(ctx: Any, subject: str) -> None:
    """Each alias yields exactly the canonical invocation (ordered backend calls, or the dry-run preview)."""
    judge_equivalent(ctx, _alias(ctx, subject))


@gate("ALI-CONFLICT-REJECTED", doc="D1 §7.3 b2, §11.1", access=MCP)
def conflict_rejected(ctx: Any) -> None:
    """Alias + canonical together are rejected (exit 3, validation), even with equal values; zero calls."""
    prof = d1.profile(ctx)
    if not prof.conflicts:
        raise NotApplicable("the contract profile lists no alias/canonical conflicts")
    d1.collect((f"{command} {' '.join(args)}", lambda command=command, args=args: assert_conflict_rejected(
        inv_of(ctx, conflict_run(ctx, command, args)))) for command, args in prof.conflicts)


def _listed(text: str, name: str) -> bool:
    """Is ``name`` (a --flag or a command) listed in a help page? Only the parsed listings count: the flag
    sections (`Flags:`, `Global Flags:`) and the command list. WIRE.md §8: many shortcuts print a constraints
    prose block above `Usage:` that names hidden aliases (`--limit、--size、--page-size 互斥`); that is not
    a listing."""
    from pytest_dws.binary.helptext import parse_help

    parsed = parse_help(text)
    if name.startswith("-"):
        return name.lstrip("-") in {**parsed.inherited, **parsed.flags}
    return name in parsed.commands


@gate("ALI-HELP-CANONICAL", doc="D1 §7.3 b3, §8.3", access={Access.BIN})
def help_canonical(ctx: Any) -> None:
    """Help shows the canonical flags and commands only: no compatibility alias is listed."""

    def page(label: str, s: Spec, hidden: list[str], shown: list[tuple[str, ...]]) -> None:
        inv = inv_of(ctx, s)
        if inv.exit_code != 0:
            raise AssertionError(f"`{label} --help` failed (exit {inv.exit_code})\n{inv.describe()}")
        leaked = [n for n in hidden if _listed(inv.stdout, n)]
        missing = [" or ".join(grp) for grp in shown if not any(_listed(inv.stdout, n) for n in grp)]
        if leaked or missing:
            raise AssertionError(f"`{label} --help`: " + "; ".join(
                ([f"lists the compatibility alias(es) {leaked}"] if leaked else []) +
                ([f"does not list the canonical {missing}"] if missing else [])))

    d1.collect((label, lambda label=label, s=s, h=h, w=w: page(label, s, h, w)) for label, s, h, w in help_runs(ctx))
