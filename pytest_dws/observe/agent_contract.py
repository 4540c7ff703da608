"""The agent contract of a build, as data: what an Agent relies on, ordered and normalised so it is stable
from run to run (D2 §8, §10: the public command surface changes only on purpose and under review).

Three parts, each present when the run has its input:

- ``tools`` (a catalog on disk, or the binary's ``dws schema --all``): per canonical path the CLI path,
  aliases, effect, risk, confirmation, idempotency, interface mode, availability, parameters (type,
  required, enum), positionals and constraints;
- ``errors`` (a binary and the fake backend): per fault class of ``fixtures/scenarios/d1/faults.toml``, the
  exit code and the typed error fields of the profile's read probe (code, category, reason, origin, stage,
  retryable, execution_started);
- ``help`` (a binary): the help-visible flags of the profile's commands;
- ``aliases`` (a binary): whether each hidden compatibility spelling of the profile (D1 §5) is accepted.

Nothing volatile is kept: no hashes, trace IDs, times or ports; descriptions and summaries are prose, reviewed
elsewhere (SCH-AGENT-FIELDS), and left out so a reworded sentence is not a contract change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe import calls
from pytest_dws.observe.binary import helptext, views, worlds
from pytest_dws.registry import Access

#: Per-tool facts kept as they are (scalars).
TOOL_FIELDS = ("cli_path", "effect", "risk", "confirmation", "idempotency", "interface_mode", "availability")
#: Typed error fields kept per fault class (D1 §3.1, §8.1).
ERROR_FIELDS = ("code", "category", "reason", "origin", "stage", "retryable", "execution_started")
#: The fault classes whose typed error is part of the contract (server failures the classifier maps).
FAULTS = ("backend-dep-meta", "backend-dep-meta-iserror", "backend-dep", "replay-d1-2-2", "param-code",
          "param-message", "code-primary", "permission", "not-found", "bare", "http-503", "http-429")


def tool_contract(leaf: Mapping[str, Any]) -> dict[str, Any]:
    """The agent-facing facts of one tool leaf (catalog or ``schema`` output), normalised."""
    out: dict[str, Any] = {f: leaf.get(f) for f in TOOL_FIELDS}
    out["cli_path"] = leaf.get("primary_cli_path") or leaf.get("cli_path")
    out["aliases"] = sorted(str(a) for a in leaf.get("aliases") or [])
    out["parameters"] = {name: _parameter(spec) for name, spec in sorted((leaf.get("parameters") or {}).items())}
    out["positionals"] = [_parameter(p) | {"name": p.get("name")} for p in leaf.get("positionals") or []]
    cons = leaf.get("constraints") or {}
    out["constraints"] = {kind: sorted(sorted(str(m) for m in grp) for grp in groups)
                          for kind, groups in sorted(cons.items()) if groups}
    return out


def _parameter(spec: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": spec.get("type"), "required": bool(spec.get("required"))}
    if spec.get("enum"):
        out["enum"] = sorted(str(v) for v in spec["enum"])
    return out


def tools_contract(tools: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    return {key: tool_contract(tools[key]) for key in sorted(tools)}


def of_context(ctx: GateContext) -> dict[str, Any]:
    """The contract of what ``ctx`` names: the binary's own schema when there is a binary (what the build
    serves), else the catalog on disk; plus the error and help facts when the binary can be driven."""

    doc: dict[str, Any] = {}
    if ctx.available(Access.BIN):
        doc["tools"] = tools_contract(views.bin_schema(ctx).tools)
        doc["errors"] = errors_contract(ctx)
        doc["help"] = help_contract(ctx)
        doc["aliases"] = aliases_contract(ctx)
    else:
        doc["tools"] = tools_contract(ctx.release().tools)
    return doc


def _has_profile(ctx: GateContext) -> bool:
    """The build has the contract profile's commands (cf8cf95 has no chat `+` shortcuts: its runtime parts
    are empty, not errors)."""
    from pytest_dws.observe import runtime as rt

    try:
        rt.require_profile(ctx)
    except NotApplicable:
        return False
    return True


def errors_contract(ctx: GateContext) -> dict[str, Any]:
    """{fault class: exit code + typed error fields} of the profile's read probe; {} when the build has no
    read probe (the profile's commands are not there, e.g. cf8cf95)."""
    from pytest_dws.observe import runtime as rt

    if not _has_profile(ctx):
        return {}
    try:
        specs = {reply: rt.read_probe(ctx, reply) for reply in FAULTS}
    except NotApplicable:
        return {}
    out: dict[str, Any] = {}
    for reply, inv in zip(specs, rt.results(ctx, specs.values()), strict=True):
        err = inv.error or {}
        out[reply] = {"exit_code": inv.exit_code, **{f: err.get(f) for f in ERROR_FIELDS}}
    return out


def help_contract(ctx: GateContext) -> dict[str, list[str]]:
    """{command: sorted help-visible flags} of the profile's commands that the build has."""
    from pytest_dws.observe import runtime as rt

    if not _has_profile(ctx):
        return {}
    paths = sorted({" ".join(c.path) for c in rt.profile(ctx).commands.values()})
    helptext.help_batch(ctx, paths)
    out = {}
    for path in paths:
        inv, parsed = helptext.help_of(ctx, path)
        if inv.exit_code == 0 and parsed.usage_is(path):
            out[path] = sorted(parsed.flags)
    return out


def aliases_contract(ctx: GateContext) -> dict[str, bool]:
    """{alias label: accepted} for the profile's hidden compatibility spellings: `<command> <alias>=1 --help`
    (a flag) or `<alias path> --help` (a command) prints that command's own help. Hidden, so help does not
    list them."""
    from pytest_dws.observe import runtime as rt

    if not _has_profile(ctx):
        return {}
    prof = rt.profile(ctx)
    probes: dict[str, tuple[tuple[str, ...], Any]] = {}
    for a in prof.aliases:
        path = list(prof.commands[a.command].path) if a.command in prof.commands else a.command.split()
        own = " ".join(path)
        if a.kind == "flag":
            probes[a.label] = ((own,), worlds.plain(*path, f"{a.alias}=1", "--help"))
        else:  # an unknown subcommand with --help prints the parent's help, exit 0: the usage line decides
            alias_path = [*path[:-1], a.alias]  # (a cobra alias prints its canonical command's usage)
            probes[a.label] = ((" ".join(alias_path), own), worlds.plain(*alias_path, "--help"))
    runs = calls.run_calls(ctx, [call for _, call in probes.values()])
    return {label: runs[call].exit_code == 0 and any(helptext.parse_help(runs[call].stdout).usage_is(p) for p in paths)
            for label, (paths, call) in sorted(probes.items())}
