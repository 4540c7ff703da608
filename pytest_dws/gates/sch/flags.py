"""SCH gates about flags (D2 §3, §4, §6): Help lists exactly the schema's parameters, ``required`` is the CLI's
execution contract, identity backfill replays no real flag. Help runs on the sample; executions on every tool.
"""

from __future__ import annotations

from typing import Any

from pytest_dws.assertions import assert_equal
from pytest_dws.assertions.core import facts_of
from pytest_dws.core.errors import Finding, NotRecorded
from pytest_dws.core.outcome import reading
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.argv import required_args
from pytest_dws.observe.binary.examples import world_for
from pytest_dws.observe.binary.helptext import Help, help_of, schema_flags
from pytest_dws.observe.binary.home import device_unjudged
from pytest_dws.observe.binary.plans import (
    confirmation_asked,
    every_subject,
    plan_tool_gate,
    prefetch_tools,
    sampled_subjects,
    tool_kind,
)
from pytest_dws.observe.binary.views import (
    in_sample,
    leaf_or_skip,
    primary_path,
    write_names,
    writes_of,
)
from pytest_dws.observe.binary.worlds import executed, plain
from pytest_dws.observe.calls import Call, run_calls
from pytest_dws.registry import Access, gate
from pytest_dws.verdict.cases import collect, not_judged

#: Schema type -> the value names pflag prints in Help for it. A pflag value typed on the command line as one text
#: (a Go duration `30s`, an IP, hex/base64 bytes) is a JSON string: the exhaustive run on 81f67c8d met
#: `event consume --duration` (Help `duration`, schema `string`, described "Go duration 如 30s/5m").
_HELP_TYPES = {"string": {"string", "duration", "ip", "ipMask", "ipNet", "bytesHex", "bytesBase64"},
               "integer": {"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
                           "count"},
               "number": {"float32", "float64", "float"}, "boolean": {"bool"},
               "array": {"strings", "stringArray", "stringSlice", "ints", "int32Slice", "int64Slice", "uintSlice",
                         "float32Slice", "float64Slice", "boolSlice", "durationSlice"}}


# -- SCH-HELP-EQ-SCHEMA ------------------------------------------------------------------------------------------
def _help_calls(leaf: dict[str, Any]) -> list[Call]:
    return [plain(*primary_path(leaf).split(), "--help")]


def _help_checked(ctx: GateContext, leaf: dict[str, Any]) -> Any:
    inv, parsed = help_of(ctx, primary_path(leaf))
    if inv.exit_code != 0 or not parsed.usage_is(primary_path(leaf)):
        raise AssertionError(f"`dws {primary_path(leaf)} --help` does not show that command (exit {inv.exit_code}, "
                             f"usage {parsed.usage!r})\n{inv.describe()}")
    return parsed


@gate("SCH-HELP-EQ-SCHEMA", doc="D2 §6; e81 TestFinalSchemaParametersMatchExecutableHelpFlags", access={Access.BIN},
      subjects=sampled_subjects, per_tool=True)
def help_equals_schema(ctx: GateContext, subject: str | None = None) -> None:
    """The schema parameter set equals the Help-visible flag set (minus execution controls)."""
    leaf = leaf_or_skip(ctx, subject)
    prefetch_tools(ctx)
    parsed = _help_checked(ctx, leaf)
    assert_equal(sorted(schema_flags(parsed, leaf.get("parameters") or {})), sorted(leaf.get("parameters") or {}),
                 f"{subject}: Help-visible flags (expected) vs schema parameters (actual)")


# -- SCH-REQUIRED-FROM-CLI and SCH-IDENTITY-ONLY-BACKFILL ---------------------------------------------------------
def _required_calls(leaf: dict[str, Any]) -> dict[str | None, Call]:
    """None: the dry run with exactly the schema-required flags (and what its constraints demand). Per required
    flag: an EXECUTION without it. Each in the world its values name (:func:`world_for`: the examples world where a
    value is an example's name, `--task=周报`; else the synthetic world). Why not a dry run: on 81f67c8d a dry run
    does not
    validate every flag (`aitable table delete` without --base-id prints a confirmation prompt and exits 0, the
    execution refuses it with exit 5 before any request), and D2 §3 makes `required` the contract of executing
    the command. Both carry --yes where the tool needs the user's confirmation: the user's consent is no parameter
    of the schema (cf8cf95 `sheet cond-format delete --dry-run` refuses to preview without it), and the values are
    typed from what the release says (:func:`pytest_dws.observe.binary.argv.synth`)."""
    path = primary_path(leaf).split()
    yes = ["--yes"] if leaf.get("confirmation") == "user_required" else []
    args = required_args(leaf)
    out: dict[str | None, Call] = {None: executed(*path, *args, *yes, "--dry-run", scenario=world_for(leaf, args),
                                                  tool=leaf)}
    for name, spec in sorted((leaf.get("parameters") or {}).items()):
        if spec.get("required"):
            args = required_args(leaf, skip=[name])
            out[name] = executed(*path, *args, *yes, scenario=world_for(leaf, args), tool=leaf)
    return out


#: The case of SCH-REQUIRED-FROM-CLI judging the schema-required flags together (per flag: ``without --NAME``).
ONLY_REQUIRED = "schema-required only"


def _required_checks(ctx: GateContext, leaf: dict[str, Any], *, helped: bool = True) -> list[tuple[str, Any]]:
    """SCH-REQUIRED-FROM-CLI's cases, one per flag where the gate judges a flag (issue 24: a per-tool case would
    accept any future problem of the tool). ``schema-required only``: the dry run with exactly the
    schema-required flags is not refused; ``without --NAME``: each schema-required flag is refused when omitted;
    and, when the tool's Help is read in this run (``helped``), ``help`` and ``default --NAME`` (Help's default is
    the schema's). An outcome that depends on the synthetic world, not on the flags, is not judged and not a
    case (section ``required_not_judged``): a run that sent requests and then failed, or tried to leave; so is a
    case whose invocation a replayed recording does not hold (not recorded: the next recording's)."""
    calls = _required_calls(leaf)
    checks: list[tuple[str, Any]] = []
    unjudged: dict[str, str] = {}
    device = device_unjudged(ctx, leaf)
    if device is not None:  # the session cannot give it what it needs before anything else
        unjudged = {"(every run)": device}
        not_judged([ONLY_REQUIRED if name is None else f"without --{name}" for name in calls])
        calls = {}
    results = run_calls(ctx, calls.values())
    for name, call in calls.items():
        label = ONLY_REQUIRED if name is None else f"without --{name}"
        inv = results[call]
        try:  # a crashed or hung run is its case's failure (Invocation.check in the case), never a pass
            how = reading(inv, prompted=name is None and confirmation_asked(leaf, inv))
        except NotRecorded:
            not_judged([label], unrecorded=True)
            continue
        if how == "tried_to_leave" or (how == "failed_after_requests" and (
                name is None or _business(leaf, inv, name) is None)):
            unjudged["(schema-required flags only)" if name is None else f"--{name}"] = _why_unjudged(inv, how)
            not_judged([label])
        elif name is None:
            checks.append((label, lambda inv=inv, how=how: _only_required(inv.check(), how)))
        else:
            checks.append((label, lambda inv=inv, name=name: _refused_without(leaf, inv.check(), name)))
    if unjudged:
        ctx.section("required_not_judged", {primary_path(leaf): unjudged})
    if helped:
        checks += _default_checks(ctx, leaf)
    else:  # Help is read on the sampled tools only: these cases exist, this run does not look at them
        not_judged(["help", *(f"default --{name}" for name in leaf.get("parameters") or {})])
    return checks


def _business(leaf: dict[str, Any], inv: Any, name: str) -> bool | None:
    """Run without --``name``, did it send its business call (RULINGS §2: "no write, no call on the target the flag
    names")? A write, or its own interface call when --``name`` is bound to an argument of it (the parameter's
    ``property``): yes. A flag bound to no property (a local post-filter over the response) makes that call a lookup:
    no, refused after reads. None: it called its own interface and the release publishes no bindings, so the lookup
    cannot be told from the business call (not judged, with that reason)."""
    params = leaf.get("parameters") or {}
    rpc = (leaf.get("interface_ref") or {}).get("rpc_name")
    if writes_of(inv):
        return True
    if not any(rpc and r.tool == rpc for r in inv.calls()):
        return False
    if not any(isinstance(p, dict) and "property" in p for p in params.values()):
        return None
    return bool((params.get(name) or {}).get("property"))


def _why_unjudged(inv: Any, how: str) -> str:
    """The reason of one ``required_not_judged`` member, from typed facts only."""
    if how == "tried_to_leave":
        return "tried to leave the machine: its outcome is not the CLI's answer to its flags"
    tools = ",".join(sorted({f"{r.product}/{r.tool}" for r in inv.calls()}))
    return f"read the synthetic backend ({tools}), then failed (exit {inv.exit_code}): world-dependent"


def _only_required(base: Any, how: str) -> None:
    """The tool's dry run with its schema-required flags, valued as the schema says, previews: neither refused
    before any request, whatever the exit code (the real binary's cobra refuses a missing required flag with
    exit 5, category internal, no reason: docs/wire.md §8), unless about the target the synthetic world could not
    resolve, nor a sent write. A refusal is not read for its cause (a missing flag and a rejected value share their
    exit codes): either way the schema does not carry what executing the command takes (D2 §3), or the tool
    cannot dry-run (D2 §9); the baseline entry names which, from the release's source."""
    reason = str((base.error or {}).get("reason") or "")
    if writes_of(base):
        raise Finding(f"the dry run with only the schema-required flags sent a write ({write_names(base)})\n"
                      f"{base.describe()}", **facts_of(base, step="dry-run", wrote=True))
    if how == "refused" and not reason.startswith(("resolution_", "target_")):
        raise Finding(f"with only the schema-required flags, typed as the schema says, the dry run is refused "
                      f"before any request (exit {base.exit_code}, reason {reason or 'none'!r}): the CLI requires "
                      f"what its schema does not carry\n{base.describe()}", **facts_of(base))


def _refused_without(leaf: dict[str, Any], inv: Any, name: str) -> None:
    """Refused = a non-zero exit before its business call (docs/wire.md §8; RULINGS §2: read-only lookups first are
    a refusal after N reads); accepted = it ran to success without it, or sent its business call, then failed."""
    if reading(inv) == "failed_after_requests" and _business(leaf, inv, name):
        raise Finding(f"schema marks --{name} required but the CLI sends its business call without it "
                      f"({', '.join(sorted({r.tool for r in inv.calls()}))}), then exits {inv.exit_code}",
                      **facts_of(inv))
    if reading(inv) == "ran":
        sent = sorted({r.tool for r in inv.calls()})
        raise Finding(f"schema marks --{name} required but the CLI executes without it (exit 0, "
                      f"{len(inv.calls())} request(s){': ' + ', '.join(sent) if sent else ''})",
                      **facts_of(inv))


def _default_checks(ctx: GateContext, leaf: dict[str, Any]) -> list[tuple[str, Any]]:
    """``help`` (Help shows the command) and ``default --NAME`` per schema parameter Help lists."""
    try:
        parsed = _help_checked(ctx, leaf)
    except AssertionError:
        return [("help", lambda: _help_checked(ctx, leaf))]  # fails again, from the memoised Help
    flags = {**parsed.inherited, **parsed.flags}
    params = leaf.get("parameters") or {}

    def same(name: str) -> None:
        if flags[name].default != params[name].get("default"):
            raise Finding(f"--{name}: Help default {flags[name].default!r} vs schema default "
                          f"{params[name].get('default')!r}", help_default=str(flags[name].default),
                          schema_default=str(params[name].get("default")))

    return [("help", lambda: None)] + [(f"default --{name}", lambda name=name: same(name))
                                      for name in sorted(params) if name in flags]


@gate("SCH-REQUIRED-FROM-CLI", doc="D2 §3; cf TestMCPRequiredDoesNotPromoteOptionalCLIFlag", access={Access.BIN},
      subjects=every_subject, per_tool=True)
def required_from_cli(ctx: GateContext, subject: str | None = None) -> None:
    """Schema `required` is the CLI's: optional flags may be omitted, required ones may not; Help defaults agree
    (the defaults, a Help comparison, on the sampled tools)."""
    leaf = leaf_or_skip(ctx, subject)
    prefetch_tools(ctx)
    collect(_required_checks(ctx, leaf, helped=subject is not None and in_sample(ctx, subject)), header=f"{subject}:")


def _problems_check(problems: Any) -> Any:
    def check() -> None:
        found = problems()
        if found:
            raise AssertionError("\n".join(found))

    return check


def help_type_problems(parsed: Help, params: dict[str, Any]) -> list[str]:
    """Each schema parameter whose type is not the type Help prints for its flag (:data:`_HELP_TYPES`). A value
    name of several words is a backticked phrase of the usage (`--rooms room search`): cobra shows it instead of
    the type, so Help says nothing of the type there."""
    flags = {**parsed.inherited, **parsed.flags}
    return [f"--{name}: schema type {spec.get('type')!r} vs Help type {flags[name].type!r}"
            for name, spec in sorted(params.items())
            if name in flags and " " not in (flags[name].type or "")
            and flags[name].type not in _HELP_TYPES.get(spec.get("type", ""), {flags[name].type})]


@gate("SCH-IDENTITY-ONLY-BACKFILL", doc="D2 §4; cf TestEmbeddedCatalogBackfillsIdentityWithoutReplayingRealFlags",
      access={Access.BIN}, subjects=sampled_subjects, per_tool=True)
def identity_only_backfill(ctx: GateContext, subject: str | None = None) -> None:
    """Parameter metadata of a real command comes from the command (names, types, defaults, required)."""
    leaf = leaf_or_skip(ctx, subject)
    prefetch_tools(ctx)
    parsed = _help_checked(ctx, leaf)
    params = leaf.get("parameters") or {}
    visible = schema_flags(parsed, params)

    def names() -> list[str]:
        if set(params) == visible:
            return []
        return [f"parameter set differs from Help: only in schema {sorted(set(params) - visible)}, "
                f"only in Help {sorted(visible - set(params))}"]

    def types() -> list[str]:
        return help_type_problems(parsed, params)

    # required/defaults are SCH-REQUIRED-FROM-CLI's judgement of the same leaf: their failures are its cases.
    checks = [("names", _problems_check(names), f"SCH-HELP-EQ-SCHEMA[{subject}]"), ("types", _problems_check(types))]
    checks += [(case, check, f"SCH-REQUIRED-FROM-CLI[{subject}/{case}]") for case, check in _required_checks(ctx, leaf)]
    collect(checks, header=f"{subject}: the schema carries parameter metadata the command does not have:")


tool_kind("help")(lambda leaf, sampled: _help_calls(leaf) if sampled else [])
tool_kind("required")(lambda leaf, sampled: list(_required_calls(leaf).values()))
plan_tool_gate("SCH-HELP-EQ-SCHEMA", ("help",))
plan_tool_gate("SCH-REQUIRED-FROM-CLI", ("required", "help"))
plan_tool_gate("SCH-IDENTITY-ONLY-BACKFILL", ("required", "help"))
