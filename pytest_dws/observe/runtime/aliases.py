"""Compatibility aliases' runs and judges (D1 §5, §7.3): shared by ALI and ACC.

Each alias of the profile is run beside its canonical spelling; equivalence is judged on the invocation the
backend receives, never on text."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_dws.assertions import (
    assert_alias_equivalent,
    assert_exit_code,
)
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.profile import Alias
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.runtime import Spec

F = "ALI"


def alias_labels(ctx: GateContext) -> list[str]:
    return [a.label for a in rt.profile(ctx).aliases]


def _alias(ctx: GateContext, label: str) -> Alias:
    for a in rt.profile(ctx).aliases:
        if a.label == label:
            return a
    raise NotApplicable(f"the contract profile has no alias {label!r}", wants="an alias in the contract profile")


def gate_alias(ctx: GateContext, gate_id: str) -> Alias:
    alias = rt.profile(ctx).alias_for_gate(gate_id)
    if alias is None:
        raise NotApplicable(f"the contract profile names no alias for {gate_id}",
                            wants="an alias in the contract profile")
    return alias


def pair(ctx: GateContext, a: Alias, spelling: str) -> Spec:
    """The run of ``a`` with ``spelling`` (the alias or a canonical twin); writes run as a dry-run preview."""
    prof, c = rt.profile(ctx), rt.cast(ctx)
    cmd = prof.command(a.command)
    extra = [prof.cli["dry_run"]] if cmd.write else []
    if a.kind == "command":
        return rt.spec(cmd, rt.expand(c, a.args), prof=prof, path=(*cmd.path[:-1], spelling), extra=extra)
    drop = (a.canonical, a.alias, *a.also)
    return rt.spec(cmd, rt.expand(c, a.args, flag=spelling), prof=prof, drop=drop, extra=extra)


def rename_runs(ctx: GateContext, a: Alias) -> tuple[Spec, Spec]:
    """The command alias, confirmed, on a unique name and on an ambiguous name (ALI-CHAT-RENAME b, c)."""
    prof, c = rt.profile(ctx), rt.cast(ctx)
    cmd = prof.command(a.command)
    path = (*cmd.path[:-1], a.alias)
    flag = cmd.group or "--group"
    return (rt.spec(cmd, [flag, c.name], prof=prof, path=path),
            rt.spec(cmd, [flag, c.twin_name], prof=prof, path=path))


def conflict_run(ctx: GateContext, command: str, args: tuple[str, ...]) -> Spec:
    prof = rt.profile(ctx)
    return rt.spec(prof.command(command), rt.expand(rt.cast(ctx), args), prof=prof)


def help_runs(ctx: GateContext) -> list[tuple[str, Spec, list[str], list[tuple[str, ...]]]]:
    """(label, help run, names that must be absent, groups of canonical twins of which one must be listed) per
    help page. A twin group: the canonical spelling and its `also` twins (D1 §5 row 4: `--open-conversation-id`
    = `--conversation-id` = `--group`; at e81 `--conversation-id` is itself hidden and `--group` is listed)."""
    prof = rt.profile(ctx)
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
        s = rt.call_of(None, (*page, prof.cli["help"]), token=None, globals_=False)
        twins = sorted({tuple(t for t in grp if t not in hidden) for grp in shown} - {()})
        out.append((" ".join(page), s, sorted(set(hidden)), twins))
    return out


@rt.provider(F)
def _runs(ctx: GateContext) -> Iterable[Spec]:
    prof = rt.profile(ctx)
    for a in prof.aliases:
        yield pair(ctx, a, a.alias)
        yield from (pair(ctx, a, s) for s in (a.canonical, *a.also))
        if a.kind == "command":
            yield from rename_runs(ctx, a)
    for command, args in prof.conflicts:
        yield conflict_run(ctx, command, args)
    for _, s, _, _ in help_runs(ctx):
        yield s


def inv_of(ctx: GateContext, s: Spec) -> Any:
    return rt.run(ctx, F, s)


def judge_equivalent(ctx: GateContext, a: Alias) -> None:
    """The alias yields exactly the canonical invocation (and that of every `also` twin)."""
    __tracebackhide__ = True
    alias = inv_of(ctx, pair(ctx, a, a.alias))
    rt.collect((f"{a.alias} = {twin}", lambda twin=twin: assert_alias_equivalent(
        alias, inv_of(ctx, pair(ctx, a, twin)), f"{a.label} vs {twin}")) for twin in (a.canonical, *a.also))


def judge_accepted(ctx: GateContext, a: Alias) -> None:
    """The alias spelling runs (exit 0), never an unknown flag or command (ACC-DRIFT-11). "Runs" needs positive
    evidence, never an exit code alone (a target that exits 0 on anything ran nothing): a backend request, a JSON
    result, or the same preview its canonical spelling prints (a helper's human-text dry run, docs/wire.md §8)."""
    __tracebackhide__ = True
    inv = inv_of(ctx, pair(ctx, a, a.alias))
    assert_exit_code(inv, 0, f"{a.label}: the compatibility spelling must be accepted")
    if inv.calls() or inv.stdout_json is not None:
        return
    preview = rt.profile(ctx).command(a.command).write  # writes run as a dry-run preview (see pair)
    twin = inv_of(ctx, pair(ctx, a, a.canonical))
    if preview and inv.stdout.strip() and twin.exit_code == 0 and twin.stdout == inv.stdout:
        return
    raise AssertionError(f"{a.label}: exit 0, but nothing shows that the command ran: no backend request, no JSON "
                         f"result, no preview like {a.canonical}'s\n{inv.describe()}")
