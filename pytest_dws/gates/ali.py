"""ALI: compatibility flag aliases (D1 §5, §7.3, §8.3, §11.1), the binary gates.

An alias is judged by equivalence: the alias run and the canonical run (identical other arguments, time
arguments pinned by the profile) must send the same ordered (path, tool, arguments) backend calls, or, for a
write under --dry-run, print the same invocation preview. ALI-SCHEMA-FACTS, ALI-NO-SECOND-ENTRY and
ALI-SKILL-NOT-DEFAULT are schema/source gates and live elsewhere."""

from __future__ import annotations

from typing import Any

from pytest_dws.assertions import (
    assert_calls,
    assert_conflict_rejected,
    assert_fails_closed,
)
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.binary.argv import flag_args
from pytest_dws.observe.binary.helptext import parse_help
from pytest_dws.observe.binary.views import (
    bin_schema,
    prefetch_selected,
    primary_path,
)
from pytest_dws.observe.binary.worlds import plain
from pytest_dws.observe.calls import Call, plans, run_calls
from pytest_dws.observe.release_subjects import pin
from pytest_dws.observe.runtime import Spec
from pytest_dws.observe.runtime.aliases import (
    _alias,
    alias_labels,
    conflict_run,
    gate_alias,
    help_runs,
    inv_of,
    judge_equivalent,
    pair,
    rename_runs,
)
from pytest_dws.observe.runtime.targets import judge_effect, judge_resolution
from pytest_dws.observe.skills import cited_commands
from pytest_dws.registry import Access, gate

MCP = {Access.MCP}

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
    def check(ctx: GateContext) -> None:
        judge_equivalent(ctx, gate_alias(ctx, gate_id))

    check.__doc__ = summary
    check.__name__ = check.__qualname__ = "flag_alias_" + gate_id[4:].lower().replace("-", "_")
    gate(gate_id, doc=doc, access=MCP)(check)


for _gate_id, (_doc, _summary) in FLAG_ALIAS_GATES.items():
    _register_flag_alias_gate(_gate_id, _doc, _summary)


@gate("ALI-CHAT-RENAME", doc="D1 §5 row 7, §11.3", access=MCP)
def chat_rename(ctx: GateContext) -> None:
    """`+chat-rename` = `+chat-update`: same dry-run preview; a name is resolved uniquely before the write."""
    a = gate_alias(ctx, "ALI-CHAT-RENAME")
    prof, c = rt.profile(ctx), rt.cast(ctx)
    cmd = prof.command(a.command)
    named, twins = rename_runs(ctx, a)

    def preview() -> None:
        judge_equivalent(ctx, a)
        rt.collect((s, lambda s=s: assert_calls(inv_of(ctx, pair(ctx, a, s)), [], f"{s} --dry-run"))
                   for s in (a.alias, a.canonical))

    def by_name() -> None:
        inv = inv_of(ctx, named)
        judge_resolution(ctx, cmd, inv, [c.name], [c.cid], f"{a.alias} <name>")
        judge_effect(ctx, cmd, inv, [c.cid], f"{a.alias} <name>")

    def ambiguous() -> None:
        assert_fails_closed(inv_of(ctx, twins), what=f"{a.alias} <same-name groups>")

    rt.collect([("dry-run preview", preview), ("unique name", by_name), ("ambiguous name", ambiguous)])


@gate("ALI-EQUIV-INVOCATION", doc="D1 §7.3 b1, §9.3", access=MCP, subjects=alias_labels)
def equiv_invocation(ctx: GateContext, subject: str) -> None:
    """Each alias yields exactly the canonical invocation (ordered backend calls, or the dry-run preview)."""
    judge_equivalent(ctx, _alias(ctx, subject))


@gate("ALI-CONFLICT-REJECTED", doc="D1 §7.3 b2, §11.1", access=MCP)
def conflict_rejected(ctx: GateContext) -> None:
    """Alias + canonical together are rejected (exit 3, validation), even with equal values; zero calls."""
    prof = rt.profile(ctx)
    if not prof.conflicts:
        raise NotApplicable("the contract profile lists no alias/canonical conflicts",
                            wants="alias/canonical conflicts in the contract profile")
    rt.collect((f"{command} {' '.join(args)}", lambda command=command, args=args: assert_conflict_rejected(
        inv_of(ctx, conflict_run(ctx, command, args)))) for command, args in prof.conflicts)


def _listed(text: str, name: str) -> bool:
    """Is ``name`` (a --flag or a command) listed in a help page? Only the parsed listings count: the flag
    sections (`Flags:`, `Global Flags:`) and the command list. docs/wire.md §8: many shortcuts print a constraints
    prose block above `Usage:` that names hidden aliases (`--limit、--size、--page-size 互斥`); that is not
    a listing."""

    parsed = parse_help(text)
    if name.startswith("-"):
        return name.lstrip("-") in {**parsed.inherited, **parsed.flags}
    return name in parsed.commands


@gate("ALI-HELP-CANONICAL", doc="D1 §7.3 b3, §8.3", access={Access.BIN})
def help_canonical(ctx: GateContext) -> None:
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

    rt.collect((label, lambda label=label, s=s, h=h, w=w: page(label, s, h, w)) for label, s, h, w in help_runs(ctx))



# -- ALI-SCHEMA-FACTS, ALI-NO-SECOND-ENTRY ---------------------------------------------------------------------
def _alias_fact_calls(ctx: GateContext) -> tuple[dict[str, list[Any]], dict[str, Call], dict[tuple[str, str], Call]]:
    """Schema tools of the profile's flag aliases, their `schema <tool>` runs and the alias acceptance runs."""
    from pytest_dws.inputs.profile import active_profile

    view = bin_schema(ctx)
    prof = active_profile(ctx)
    by_key: dict[str, list[Any]] = {}
    for a in prof.aliases:
        if a.kind == "flag" and a.command in prof.commands:
            key = view.primary.get(" ".join(prof.commands[a.command].path))
            if key is not None:
                by_key.setdefault(key, []).append(a)
    calls = {k: plain("schema", k) for k in by_key}
    accepts = {(k, a.alias): plain(*primary_path(view.tools[k]).split(), "--help", *flag_args(
        a.alias.lstrip("-"), (view.tools[k].get("parameters") or {}).get(a.canonical.lstrip("-"))))
        for k, al in by_key.items() for a in al}
    return by_key, calls, accepts


plans("ALI-SCHEMA-FACTS")(lambda ctx: [*_alias_fact_calls(ctx)[1].values(), *_alias_fact_calls(ctx)[2].values()])


@gate("ALI-SCHEMA-FACTS", doc="D1 §5, §7.3 b3; e81 TestFinalSchemaParametersMatchExecutableHelpFlags",
      access={Access.BIN})
def alias_schema_facts(ctx: GateContext) -> None:
    """The schema projects canonical flags and constraints only; alias spellings are never parameters."""
    prefetch_selected(ctx)
    by_key, calls, accepts = _alias_fact_calls(ctx)
    if not by_key:
        raise NotApplicable("no command of the profile's flag aliases is in the binary's schema",
                            wants="a flag alias command in the schema")
    results = run_calls(ctx, [*calls.values(), *accepts.values()])
    problems = []
    for k, aliases in sorted(by_key.items()):
        leaf = results[calls[k]].check().stdout_json or {}
        params = set(leaf.get("parameters") or {})
        members = params | {p.get("name") for p in leaf.get("positionals") or []}
        for a in aliases:
            if a.alias.lstrip("-") in params:
                problems.append(f"{k}: alias {a.alias} is a schema parameter")
            twins = [t for t in (a.canonical, *a.also) if t.lstrip("-") not in {x.alias.lstrip("-") for x in aliases}]
            if not any(t.lstrip("-") in params for t in twins):  # D1 §5 row 4: `--group` is the public twin
                problems.append(f"{k}: no canonical twin of {a.alias} ({', '.join(twins)}) is a schema parameter")
            inv = results[accepts[(k, a.alias)]].check()
            if inv.exit_code != 0:
                problems.append(f"{k}: alias {a.alias} is no longer accepted (exit {inv.exit_code})")
        accepted = {a.alias.lstrip("-") for a in aliases  # a hidden alias the binary accepts: a valid member
                    if results[accepts[(k, a.alias)]].check().exit_code == 0}
        for kind, groups in sorted((leaf.get("constraints") or {}).items()):
            for grp in groups:
                if not set(grp) <= members | accepted:
                    problems.append(f"{k}: constraint {kind} {grp} names {sorted(set(grp) - members)}, not "
                                    "parameters")
    if problems:
        raise AssertionError("\n".join(problems))


@gate("ALI-NO-SECOND-ENTRY", doc="D1 §5 intro; D2 §4 ('经过审核的隐藏兼容命令可以进入固定 Schema')",
      access={Access.BIN})
def alias_no_second_entry(ctx: GateContext) -> None:
    """Compatibility aliases add no visible command: no tool's CLI or primary path is a hidden command alias and the
    pinned tool count holds; a reviewed alias may be listed among its canonical tool's aliases (strict
    `alias-absent`: nowhere in the schema)."""
    from pytest_dws.inputs.profile import active_profile

    view = bin_schema(ctx)
    names = {a.alias for a in active_profile(ctx).aliases if a.kind == "command"}
    bad = sorted(f"{k}: {p} (its own path)" for k, t in view.tools.items()
                 for p in {t.get("cli_path") or "", primary_path(t)} if names & set(p.split()))
    listed = sorted(f"{k}: {p} (listed as an alias)" for k, t in view.tools.items()
                    for p in t.get("aliases") or [] if names & set(str(p).split()))
    if "alias-absent" in ctx.settings.strict:  # docs/contract.md R9
        bad += listed
    if bad:
        raise AssertionError("hidden command aliases appear as schema paths: " + "; ".join(bad))
    pin(ctx, {"tools": len(view.tools)}, "catalog tool count of `dws schema --all` (pinned -> actual)")


@gate("ALI-SKILL-NOT-DEFAULT", doc="D1 §7.3 b4, §8.3; check-multi-im-skill-chain.sh", access={Access.SRC})
def skill_not_default(ctx: GateContext) -> None:
    """Skills never recommend a compatibility alias (hidden command or flag spelling) as the route (a command is a
    counter-example only when its own clause negates it), and recommend the reviewed route where the profile names
    one (D1 §5 row 7: `chat group rename --id --name`)."""
    from pytest_dws.inputs.profile import active_profile

    prof = active_profile(ctx)
    command_aliases = {a.alias for a in prof.aliases if a.kind == "command"}
    flag_aliases: dict[tuple[str, ...], set[str]] = {}
    for a in prof.aliases:
        if a.kind == "flag" and a.command in prof.commands:
            flag_aliases.setdefault(tuple(prof.commands[a.command].path), set()).add(a.alias)
    cited = cited_commands(ctx)
    bad = []
    for c in cited:
        if c.negated:
            continue
        words = c.text.split()
        if command_aliases & set(words):
            bad.append(f"{c.where}: `{c.text}` uses the hidden command alias {sorted(command_aliases & set(words))}")
        for path, aliases in flag_aliases.items():
            if tuple(c.path.split()) == path:
                used = sorted(al for al in aliases if any(w == al or w.startswith(al + "=") for w in words))
                if used:
                    bad.append(f"{c.where}: `{c.text}` recommends the compatibility spelling {used}")
    for a in prof.aliases:
        if not a.skill_route:
            continue
        route = " ".join(w for w in a.skill_route if not w.startswith("-"))
        flags = [w for w in a.skill_route if w.startswith("-")]
        if not any(c.path == route and not c.negated and all(
                any(w == f or w.startswith(f + "=") for w in c.text.split()) for f in flags) for c in cited):
            bad.append(f"no Skill recommends the reviewed route `dws {' '.join(a.skill_route)}` instead of "
                       f"{a.alias} (D1 §5)")
    if bad:
        raise AssertionError("Skills present compatibility aliases as the default route:\n" + "\n".join(bad))
