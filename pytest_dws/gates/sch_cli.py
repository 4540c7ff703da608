"""SCH-* and ALI-* gates judged on the binary: the schema it embeds against the command tree it executes
(D2 §3-§6, §9; D1 §5, §7.3). Views come from :mod:`pytest_dws.binary.views` (`schema --all` once,
help and probes memoised, batches on the bounded pool). Per-tool gates run over the sample.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from pytest_dws.assertions import assert_equal, assert_error_classified
from pytest_dws.binary.argv import PROBE_FLAG, example_argv, flag_args, is_file_flag, required_args, synth
from pytest_dws.binary.examples import EXAMPLES
from pytest_dws.binary.helptext import help_of, parse_help, schema_flags
from pytest_dws.binary.views import (
    bin_schema,
    check_offline_runs,
    every,
    in_sample,
    is_write,
    leaf_or_skip,
    observe_sample,
    offline_calls,
    sample,
    schema_profile,
    schema_subjects,
    subject_list,
    writes_of,
)
from pytest_dws.binary.views import prefetch_selected as prefetch
from pytest_dws.binary.worlds import SYN_CID, executed, plain
from pytest_dws.calls import Call, plans, run_calls, run_one
from pytest_dws.cases import collect, soft
from pytest_dws.errors import NotApplicable
from pytest_dws.registry import Access, gate

#: Doc-named defaults (cf, D2 §4 / GATES.md SCH-FALLBACK-*, SCH-RETIRED-REMOVED), overridden by `[schema]`.
DEFAULT_HIDDEN = ["conference", "chat file"]
DEFAULT_HELPER_BACKED = ["chat message send", "calendar book get"]
DEFAULT_RETIRED = [{"path": "chat file upload", "canonical": "chat.upload_conversation_file", "marker": "已下线",
                    "args": ["--group", SYN_CID, "--url", "http://127.0.0.1:1/y.pdf", "--file-name", "y.pdf"]}]
_HELP_TYPES = {"string": {"string"}, "integer": {"int", "int32", "int64", "uint", "uint32", "uint64"},
               "number": {"float32", "float64", "float"}, "boolean": {"bool"},
               "array": {"strings", "stringArray", "stringSlice", "ints", "int32Slice", "int64Slice"}}


def _primary(leaf: dict[str, Any]) -> str:
    return leaf.get("primary_cli_path") or leaf.get("cli_path") or ""


def _prefetch(ctx: Any) -> None:
    """Before a per-tool gate reads its memoised runs: the session-wide batch of every selected gate
    (:func:`prefetch`), else (selection unknown) one batch of every per-tool gate's runs for every sampled
    tool (under pytest-xdist the workers share the calls, :mod:`pytest_dws.xshare`)."""
    observe_sample(ctx)
    if not prefetch(ctx):
        ctx.memo(("sch-prefetch",), lambda: run_calls(ctx, _tool_calls(ctx, tuple(_KINDS))) and True)


def _tool_calls(ctx: Any, kinds: tuple[str, ...]) -> list[Call]:
    """The planned runs of the per-tool gates of `kinds`: the cheap kinds over every tool (of this shard), the
    costly ones (help) over the sample."""
    view = bin_schema(ctx)
    out: list[Call] = []
    for key in every(ctx, view.tools):
        sampled = in_sample(ctx, key)
        out += [c for kind in kinds for c in _KINDS[kind](view.tools[key], sampled)]
    return out


def _sampled(ctx: Any) -> list[str]:
    """Subjects of a gate whose judgement needs the costly calls (help): the sample."""
    return schema_subjects(ctx)


def _every(ctx: Any) -> list[str]:
    """Subjects of a gate that cheap calls judge (probes, dry runs): every tool (of this shard); the costly
    parts of their judgement run on the sampled ones only."""
    return schema_subjects(ctx, cheap=True)


def disk_tools(ctx: Any) -> dict[str, dict[str, Any]]:
    """Tools of the catalog on disk (--dws-source / --dws-catalog), {} when none is configured."""
    if ctx.settings.source is None and ctx.settings.catalog is None:
        return {}
    tools = getattr(ctx.release(), "tools", None)
    return tools if isinstance(tools, dict) else {}


# -- SCH-MAPS-TO-COBRA ---------------------------------------------------------------------------------------
def _maps_calls(leaf: dict[str, Any]) -> list[Call]:
    paths = [_primary(leaf), *(leaf.get("aliases") or [])]
    return [plain(*p.split(), PROBE_FLAG) for p in paths]


def _maps_followups(ctx: Any) -> list[Call]:
    """The costly second stage of SCH-MAPS-TO-COBRA, known once the probes ran: the Help of every path whose
    probe was refused untyped, and the Help parse of the parameters its probe did not list, for the sampled
    tools. Run as ONE batch (on the pool, or shared under xdist), not one by one from each tool's check."""
    view = bin_schema(ctx)
    keys = [k for k in every(ctx, view.tools) if in_sample(ctx, k)]
    probes = run_calls(ctx, [c for k in keys for c in _maps_calls(view.tools[k])])
    out: list[Call] = []
    for k in keys:
        leaf = view.tools[k]
        primary, params = _primary(leaf), leaf.get("parameters") or {}
        avail = None
        for path in [primary, *(leaf.get("aliases") or [])]:
            inv = probes[plain(*path.split(), PROBE_FLAG)]
            if (inv.error or {}).get("reason") != "unknown_flag":
                out.append(plain(*path.split(), "--help"))
            if path == primary:
                avail = (inv.error or {}).get("available_flags")
        listed = {str(f).lstrip("-") for f in avail} if isinstance(avail, list) else set()
        unproven = [p for p in sorted(params) if p not in listed]
        if unproven:
            out.append(plain(*primary.split(), *[a for p in unproven for a in flag_args(p, params[p])], "--help"))
    return out


def _cheap_proof_or_skip(ctx: Any, leaf: dict[str, Any], subject: str) -> None:
    """A tool outside the sample is judged by its parse probes alone: when one is refused untyped, or its
    `available_flags` do not list every parameter, only a costly `--help` could prove the rest, so the tool is
    not judged in this run (NotApplicable naming --dws-sample all) rather than passed unproven."""
    primary = _primary(leaf)
    for path in [primary, *(leaf.get("aliases") or [])]:
        inv = run_one(ctx, plain(*path.split(), PROBE_FLAG))
        error = inv.error or {}
        if error.get("reason") != "unknown_flag":
            raise NotApplicable(f"`dws {path} {PROBE_FLAG}` is refused untyped (exit {inv.exit_code}): only its "
                                "costly --help proves it, and the tool is not sampled (--dws-sample all)")
        listed = {str(f).lstrip("-") for f in error.get("available_flags") or []}
        missing = sorted(set(leaf.get("parameters") or {}) - listed)
        if path == primary and missing:
            raise NotApplicable(f"`dws {path}` lists no {', '.join('--' + m for m in missing)} in available_flags: "
                                "only its costly --help proves them, and the tool is not sampled (--dws-sample all)")


@gate("SCH-MAPS-TO-COBRA", doc="D2 §9 b11", access={Access.BIN}, subjects=_every, per_tool=True)
def maps_to_cobra(ctx: Any, subject: str | None = None) -> None:
    """Every tool's primary path and aliases are executable leaves; every parameter is a real flag."""
    leaf = leaf_or_skip(ctx, subject)
    _prefetch(ctx)
    ctx.memo(("sch-maps", "followups"), lambda: run_calls(ctx, _maps_followups(ctx)) and True)
    primary, params = _primary(leaf), sorted(leaf.get("parameters") or {})
    problems: list[str] = []
    flag_sets: dict[str, Any] = {}
    if subject is not None and not in_sample(ctx, subject):
        _cheap_proof_or_skip(ctx, leaf, subject)
    for path in [primary, *(leaf.get("aliases") or [])]:
        inv = run_one(ctx, plain(*path.split(), PROBE_FLAG))
        if (inv.error or {}).get("reason") != "unknown_flag":
            # Some helper leaves refuse an unknown flag untyped (81f67c8d: exit 5, category internal, no
            # reason): the path is then proven by its own help, whose usage line must name it.
            helped = run_one(ctx, plain(*path.split(), "--help"))
            if helped.exit_code != 0 or not parse_help(helped.stdout).usage_is(path):
                problems.append(f"`dws {path}` is not an executable leaf: the probe flag {PROBE_FLAG} is not an "
                                f"unknown flag (exit {inv.exit_code}) and its --help does not show it\n"
                                f"{helped.describe()}")
        avail = (inv.error or {}).get("available_flags")
        # e81 lists bare names (`ai-tag`), other implementations `--ai-tag`: compare without the dashes.
        flag_sets[path] = sorted(str(f).lstrip("-") for f in avail) if isinstance(avail, list) else None
    avail = flag_sets.get(primary)
    unproven = [p for p in params if avail is None or p not in avail]
    if unproven and not problems:
        args = [a for p in unproven for a in flag_args(p, leaf["parameters"][p])]
        inv = run_one(ctx, plain(*primary.split(), *args, "--help"))
        if inv.exit_code != 0:
            for p in unproven:  # pinpoint
                one = run_one(ctx, plain(*primary.split(), *flag_args(p, leaf["parameters"][p]), "--help"))
                if one.exit_code != 0:
                    reason = (one.error or {}).get("reason")
                    problems.append(f"schema parameter --{p} is not a flag of `dws {primary}` (exit "
                                    f"{one.exit_code}, reason {reason!r})")
    for alias in leaf.get("aliases") or []:
        if flag_sets.get(alias) is not None and avail is not None and flag_sets[alias] != avail:
            problems.append(f"alias `dws {alias}` accepts other flags than `dws {primary}`: "
                            f"{flag_sets[alias]} vs {avail}")
    if problems:
        raise AssertionError(f"{subject}: " + "; ".join(problems))


# -- SCH-HELP-EQ-SCHEMA ------------------------------------------------------------------------------------------
def _help_calls(leaf: dict[str, Any]) -> list[Call]:
    return [plain(*_primary(leaf).split(), "--help")]


def _help_checked(ctx: Any, leaf: dict[str, Any]) -> Any:
    inv, parsed = help_of(ctx, _primary(leaf))
    if inv.exit_code != 0 or not parsed.usage_is(_primary(leaf)):
        raise AssertionError(f"`dws {_primary(leaf)} --help` does not show that command (exit {inv.exit_code}, "
                             f"usage {parsed.usage!r})\n{inv.describe()}")
    return parsed


@gate("SCH-HELP-EQ-SCHEMA", doc="D2 §6; e81 TestFinalSchemaParametersMatchExecutableHelpFlags", access={Access.BIN},
      subjects=_sampled, per_tool=True)
def help_equals_schema(ctx: Any, subject: str | None = None) -> None:
    """The schema parameter set equals the Help-visible flag set (minus execution controls)."""
    leaf = leaf_or_skip(ctx, subject)
    _prefetch(ctx)
    parsed = _help_checked(ctx, leaf)
    assert_equal(sorted(schema_flags(parsed, leaf.get("parameters") or {})), sorted(leaf.get("parameters") or {}),
                 f"{subject}: Help-visible flags (expected) vs schema parameters (actual)")


# -- SCH-REQUIRED-FROM-CLI and SCH-IDENTITY-ONLY-BACKFILL ---------------------------------------------------------
def _required_calls(leaf: dict[str, Any]) -> dict[str | None, Call]:
    """None: the dry run with exactly the schema-required flags (and what its constraints demand). Per required
    flag: an EXECUTION without it (no --dry-run; --yes where the tool needs the user's confirmation), in the
    synthetic world. Why not a dry run: on 81f67c8d a dry run does not validate every flag (`aitable table
    delete` without --base-id prints a confirmation prompt and exits 0, the execution refuses it with exit 5
    before any request), and D2 §3 makes `required` the contract of executing the command."""
    path = _primary(leaf).split()
    yes = ["--yes"] if leaf.get("confirmation") == "user_required" else []
    out: dict[str | None, Call] = {None: executed(*path, *required_args(leaf), "--dry-run")}
    for name, spec in sorted((leaf.get("parameters") or {}).items()):
        if spec.get("required"):
            out[name] = executed(*path, *required_args(leaf, skip=[name]), *yes)
    return out


def _required_problems(ctx: Any, leaf: dict[str, Any]) -> list[str]:
    """What the CLI's refusals say against the schema's `required`. Outcomes that depend on the synthetic
    world, not on the flags, are not judged (section ``required_not_judged``): a dry run refused after it read
    the backend (its lookup of a synthetic value found nothing), an execution that sent requests and then
    failed."""
    calls = _required_calls(leaf)
    results = run_calls(ctx, calls.values())
    problems, unjudged = [], []
    base = results[calls[None]].check()
    reason = str((base.error or {}).get("reason") or "")
    if base.exit_code == 3 and not reason.startswith(("resolution_", "target_")) and not (
            base.calls() or _confirmation_asked(leaf, base)):
        problems.append(f"with only the schema-required flags the CLI fails validation before any request "
                        f"(reason {reason!r}): a parameter the schema calls optional is required\n{base.describe()}")
    elif base.exit_code == 3 and base.calls():
        unjudged.append("(schema-required flags only)")
    for name, call in calls.items():
        if name is None:
            continue
        inv = results[call].check()
        # Refused = a non-zero exit before any request (WIRE.md §8: the real binary refuses a missing required
        # flag with exit 5, category internal, no reason). Accepted = it ran to success without the flag.
        if inv.exit_code == 0:
            sent = sorted({r.tool for r in inv.calls()})
            problems.append(f"schema marks --{name} required but the CLI executes without it (exit 0, "
                            f"{len(inv.calls())} request(s){': ' + ', '.join(sent) if sent else ''})")
        elif inv.calls():
            unjudged.append(f"--{name}")
    if unjudged:
        ctx.section("required_not_judged", {_primary(leaf): unjudged})
    return problems


def _default_problems(ctx: Any, leaf: dict[str, Any]) -> list[str]:
    parsed = _help_checked(ctx, leaf)
    flags = {**parsed.inherited, **parsed.flags}
    problems = []
    for name, spec in sorted((leaf.get("parameters") or {}).items()):
        if name in flags and flags[name].default != spec.get("default"):
            problems.append(f"--{name}: Help default {flags[name].default!r} vs schema default {spec.get('default')!r}")
    return problems


@gate("SCH-REQUIRED-FROM-CLI", doc="D2 §3; cf TestMCPRequiredDoesNotPromoteOptionalCLIFlag", access={Access.BIN},
      subjects=_every, per_tool=True)
def required_from_cli(ctx: Any, subject: str | None = None) -> None:
    """Schema `required` is the CLI's: optional flags may be omitted, required ones may not; Help defaults agree
    (the defaults, a Help comparison, on the sampled tools)."""
    leaf = leaf_or_skip(ctx, subject)
    _prefetch(ctx)
    collect(_required_checks(ctx, leaf, helped=subject is not None and in_sample(ctx, subject)), header=f"{subject}:")


def _problems_check(problems: Any) -> Any:
    def check() -> None:
        found = problems()
        if found:
            raise AssertionError("\n".join(found))

    return check


def _required_checks(ctx: Any, leaf: dict[str, Any], *, helped: bool = True) -> list[tuple[str, Any]]:
    """SCH-REQUIRED-FROM-CLI's cases: `required` (schema vs what the CLI refuses) and, when the tool's Help is
    read in this run (``helped``), `defaults` (vs Help)."""
    checks = [("required", _problems_check(lambda: _required_problems(ctx, leaf)))]
    if helped:
        checks.append(("defaults", _problems_check(lambda: _default_problems(ctx, leaf))))
    return checks


@gate("SCH-IDENTITY-ONLY-BACKFILL", doc="D2 §4; cf TestEmbeddedCatalogBackfillsIdentityWithoutReplayingRealFlags",
      access={Access.BIN}, subjects=_sampled, per_tool=True)
def identity_only_backfill(ctx: Any, subject: str | None = None) -> None:
    """Parameter metadata of a real command comes from the command (names, types, defaults, required)."""
    leaf = leaf_or_skip(ctx, subject)
    _prefetch(ctx)
    parsed = _help_checked(ctx, leaf)
    params = leaf.get("parameters") or {}
    visible = schema_flags(parsed, params)

    def names() -> list[str]:
        if set(params) == visible:
            return []
        return [f"parameter set differs from Help: only in schema {sorted(set(params) - visible)}, "
                f"only in Help {sorted(visible - set(params))}"]

    def types() -> list[str]:
        flags = {**parsed.inherited, **parsed.flags}
        # A value name of several words is a backticked phrase of the usage (`--rooms room search`): cobra shows
        # it instead of the type, so Help says nothing of the type there.
        return [f"--{name}: schema type {spec.get('type')!r} vs Help type {flags[name].type!r}"
                for name, spec in sorted(params.items())
                if name in flags and " " not in (flags[name].type or "")
                and flags[name].type not in _HELP_TYPES.get(spec.get("type", ""), {flags[name].type})]

    # required/defaults are SCH-REQUIRED-FROM-CLI's judgement of the same leaf: their failures are its cases.
    checks = [("names", _problems_check(names), f"SCH-HELP-EQ-SCHEMA[{subject}]"), ("types", _problems_check(types))]
    checks += [(case, check, f"SCH-REQUIRED-FROM-CLI[{subject}/{case}]") for case, check in _required_checks(ctx, leaf)]
    collect(checks, header=f"{subject}: the schema carries parameter metadata the command does not have:")


# -- SCH-HIDDEN-SUBTREE, SCH-FALLBACK-NO-UNHIDE ---------------------------------------------------------------------
def _listing(ctx: Any, parent: str) -> list[str]:
    inv, parsed = help_of(ctx, parent)
    return parsed.commands if inv.exit_code == 0 else []


def _hidden_scope(ctx: Any) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Binary tools plus disk-only tools (a tool missing from the binary is still judged), and the sample."""
    disk = disk_tools(ctx)
    tools = {**{k: v for k, v in disk.items() if isinstance(v, dict)}, **bin_schema(ctx).tools}
    return tools, sample(ctx, sorted(tools))


@plans("SCH-HIDDEN-SUBTREE")
def _plan_hidden(ctx: Any) -> list[Call]:
    tools, keys = _hidden_scope(ctx)
    prefixes = {" ".join(_primary(tools[k]).split()[:i]) for k in keys for i in range(len(_primary(tools[k]).split()))}
    return [plain(*p.split(), "--help") for p in sorted(prefixes)]


@gate("SCH-HIDDEN-SUBTREE", doc="D2 §4, §9 b12; cf TestWalkLeafCommandsTraversesAnnotatedHiddenSubtree",
      access={Access.BIN}, per_tool=True)
def hidden_subtree(ctx: Any) -> None:
    """Hidden subtrees stay out of --help, but the fixed Schema still traverses them."""
    prefetch(ctx)
    tools, keys = _hidden_scope(ctx)
    run_calls(ctx, _plan_hidden(ctx))
    hidden = []
    for k in keys:
        toks = _primary(tools[k]).split()
        if any(toks[i] not in _listing(ctx, " ".join(toks[:i])) for i in range(len(toks))):
            hidden.append(k)
    named = [p for p in schema_profile(ctx).get("hidden_products", ["conference"])
             if any(k.split(".", 1)[0] == p for k in tools)]
    ctx.observe("hidden_tools", len(hidden))
    if not hidden and not named:
        raise NotApplicable("no hidden subtree: every catalog path is listed in its parent's --help")
    calls = {k: [plain("schema", k), plain("schema", "--cli-path", _primary(tools[k])),
                 plain(*_primary(tools[k]).split(), "--help")] for k in hidden}
    results = run_calls(ctx, [c for cs in calls.values() for c in cs] + [plain("schema", p) for p in named])
    problems = []
    for k, (by_key, by_path, helped) in calls.items():
        for what, c in (("schema <canonical>", by_key), ("schema --cli-path <primary>", by_path)):
            doc = results[c].check().stdout_json
            if results[c].exit_code != 0 or not isinstance(doc, dict) or doc.get("canonical_path") != k:
                problems.append(f"{k}: `dws {' '.join(c.args)}` does not return the hidden leaf ({what}, exit "
                                f"{results[c].exit_code})")
        inv = results[helped].check()
        _, parsed = help_of(ctx, _primary(tools[k]))
        if inv.exit_code != 0 or not parsed.usage_is(_primary(tools[k])):
            problems.append(f"{k}: `dws {_primary(tools[k])} --help` does not resolve (usage {parsed.usage!r})")
    for p in named:
        doc = results[plain("schema", p)].check().stdout_json
        if not isinstance(doc, dict) or doc.get("level") != "product" or not (doc.get("product") or {}).get("tools"):
            problems.append(f"hidden product {p}: `dws schema {p}` is not a product level with tools")
        if p in _listing(ctx, ""):
            problems.append(f"hidden product {p} is listed in `dws --help`")
    if problems:
        raise AssertionError("\n".join(problems))


@plans("SCH-FALLBACK-NO-UNHIDE")
def _plan_unhide(ctx: Any) -> list[Call]:
    return [plain(*p.split()[:-1], "--help") for p in schema_profile(ctx).get("hidden_groups", DEFAULT_HIDDEN)]


@gate("SCH-FALLBACK-NO-UNHIDE", doc="D2 §4; cf TestMergeCommandTree 'lower priority source cannot unhide'",
      access={Access.BIN})
def fallback_no_unhide(ctx: Any) -> None:
    """Hidden and retired commands stay out of their parent's --help (a fallback cannot un-hide them)."""
    prefetch(ctx)
    paths = schema_profile(ctx).get("hidden_groups", DEFAULT_HIDDEN)
    run_calls(ctx, _plan_unhide(ctx))
    shown = [p for p in paths if p.split()[-1] in _listing(ctx, " ".join(p.split()[:-1]))]
    if shown:
        raise AssertionError("hidden/retired commands are listed in their parent's --help: "
                             + ", ".join(f"`{p}`" for p in shown))


# -- SCH-FALLBACK-NO-OVERRIDE ------------------------------------------------------------------------------------
def _override_calls(ctx: Any) -> dict[str, Call]:
    view = bin_schema(ctx)
    named = schema_profile(ctx).get("helper_backed", DEFAULT_HELPER_BACKED)
    keys = sorted({k for k, t in view.tools.items() if t.get("dry_run")} | {view.primary[p] for p in named
                                                                           if p in view.primary})
    return {k: executed(*_primary(view.tools[k]).split(), *required_args(view.tools[k]), "--dry-run") for k in keys}


plans("SCH-FALLBACK-NO-OVERRIDE")(lambda ctx: list(_override_calls(ctx).values()))


@gate("SCH-FALLBACK-NO-OVERRIDE", doc="D2 §4; cf TestCatalogFallbackDryRunUsesFrozenInterfaceRef", access={Access.BIN})
def fallback_no_override(ctx: Any) -> None:
    """A real (helper-backed) command keeps its own dry-run; the -100 fallback only fills gaps."""
    prefetch(ctx)
    view = bin_schema(ctx)
    calls = _override_calls(ctx)
    if not calls:
        raise NotApplicable("no helper-backed command in the catalog (no `dry_run` capability, none named)")
    keys = sorted(calls)
    results = run_calls(ctx, calls.values())
    problems, unjudged = [], []
    for k, c in calls.items():
        inv = results[c].check()
        doc = inv.stdout_json if isinstance(inv.stdout_json, dict) else None
        # WIRE.md §8: a helper's own --dry-run may print key/value text (exit 0, no request) even with --format
        # json; only the fallback leaf prints {"kind":"compat_invocation"}. JSON previews must say not executed.
        if doc is not None and doc.get("kind") == "compat_invocation":
            problems.append(f"{k}: `dws {_primary(view.tools[k])}` is served by the fallback leaf "
                            f"(compat_invocation), not by the real command")
        elif writes_of(inv) or (doc is not None and (doc.get("executed") is True or doc.get("dry_run") is False)):
            problems.append(f"{k}: the dry-run preview is not a non-executed helper preview\n{inv.describe()}")
        elif inv.exit_code != 0:
            # No preview at all: the command refused the synthetic inputs itself (e.g. a companion flag only its
            # RunE demands). The fallback leaf would have printed compat_invocation whatever the inputs, so
            # this says nothing about an override; it is counted as not judged (SCH-EXAMPLES runs the
            # reviewed examples, SCH-ONEOF-BRANCH-DRYRUN the branches).
            unjudged.append(k)
    ctx.observe("helper_backed_checked", len(keys) - len(unjudged))
    ctx.observe("helper_backed_unjudged", len(unjudged))
    if len(unjudged) == len(keys):
        raise NotApplicable(f"no helper-backed command printed a dry-run preview with synthetic inputs ({keys})")
    if problems:
        raise AssertionError("\n".join(problems))


# -- SCH-RETIRED-REMOVED (binary part) -----------------------------------------------------------------------------
def _retired_calls(entry: dict[str, Any]) -> list[Call]:
    path, key = entry["path"], entry.get("canonical")
    runs = [executed(*path.split(), *entry.get("args", [])), plain("schema", "--cli-path", path)]
    return runs + ([plain("schema", key)] if key else [])


plans("SCH-RETIRED-REMOVED")(lambda ctx: [c for e in schema_profile(ctx).get("retired", DEFAULT_RETIRED)
                                          for c in _retired_calls(e)])


@gate("SCH-RETIRED-REMOVED", doc="D2 §4; cf TestChatFileUploadDownlinedButMessageFileSendStays", access={Access.BIN},
      part="bin")
def retired_removed_bin(ctx: Any) -> None:
    """A retired entry keeps its compatibility error but is gone from the Schema."""
    prefetch(ctx)
    view = bin_schema(ctx)
    problems = []
    for entry in schema_profile(ctx).get("retired", DEFAULT_RETIRED):
        path, key = entry["path"], entry.get("canonical")
        marker = entry.get("marker", "已下线")
        runs = _retired_calls(entry)
        res = run_calls(ctx, runs)
        inv = res[runs[0]].check()
        if inv.exit_code == 0 or marker not in inv.stdout + inv.stderr or inv.calls():
            problems.append(f"`dws {path}` must fail before any call with its retirement error ({marker}): exit "
                            f"{inv.exit_code}\n{inv.describe()}")
        for c in runs[1:]:
            soft(problems, assert_error_classified, res[c].check(), exit_code=3, category="validation",
                 what=f"`dws {' '.join(c.args)}` must be an unknown schema path")
        if key in view.tools or path in view.primary or path in view.aliases:
            problems.append(f"retired {path} ({key}) is still in `dws schema --all`")
    if problems:
        raise AssertionError("\n".join(problems))


# -- SCH-EXAMPLES (binary part) --------------------------------------------------------------------------------------
def _bin_subjects(ctx: Any) -> list[str]:
    found = schema_subjects(ctx, lambda t: bool(t.get("examples")), cheap=True)
    return subject_list(["bin:" + k for k in found], ["bin:" + k for k in found.universe])


def _example_calls(leaf: dict[str, Any], helped: bool = True) -> list[tuple[str, Call | None, Call]]:
    """(example, its `--help` parse check, its dry run) per example. The costly `--help` (seconds on the real
    binary) is asked only where the dry run cannot prove the example is this tool's: for a sampled tool
    (``helped``) whose example does not start with the tool's own primary path or one of its aliases. An
    example that does start with it needs no Help: SCH-MAPS-TO-COBRA proves that path is this tool's leaf, and
    the dry run, refused with `unknown_flag` or a validation error when a flag or value does not parse, proves
    the rest."""
    out: list[tuple[str, Call | None, Call]] = []
    for ex in leaf.get("examples") or []:
        argv = example_argv(ex, leaf)
        run = argv if "--dry-run" in argv else [*argv, "--dry-run"]
        check = plain(*argv, "--help") if helped and not _names_the_tool(argv, leaf) else None
        out.append((ex, check, executed(*run, scenario=EXAMPLES)))
    return out


def _names_the_tool(argv: list[str], leaf: dict[str, Any]) -> bool:
    """Do the example's command words (those before its first flag) begin with the tool's primary path or an
    alias? Positionals may follow the path."""
    words = list(itertools.takewhile(lambda w: not w.startswith("-"), argv))
    paths = [_primary(leaf), *(leaf.get("aliases") or [])]
    return any(p.split() == words[:len(p.split())] for p in paths if p)


@gate("SCH-EXAMPLES", doc="D2 §5, §9 b6; e81 TestManualAgentExamplesContract", access={Access.BIN, Access.MCP},
      subjects=_bin_subjects, part="bin", per_tool=True)
def examples_run(ctx: Any, subject: str | None = None) -> None:
    """Every example runs: its --dry-run passes the contract, and its path is the tool's (its own words, else,
    on sampled tools, the --help usage line)."""
    key = subject.removeprefix("bin:") if subject else None
    leaf = leaf_or_skip(ctx, key)
    _prefetch(ctx)

    def one(ex: str, helped: Call | None, dry: Call) -> None:
        if helped is not None:
            h = run_one(ctx, helped)
            parsed = parse_help(h.stdout)
            if h.exit_code != 0 or not parsed.usage_is(_primary(leaf)):
                raise AssertionError(f"path/flags do not parse (exit {h.exit_code}, usage {parsed.usage!r})")
        d = run_one(ctx, dry)
        if d.exit_code != 0 and not _confirmation_asked(leaf, d):
            raise AssertionError(f"--dry-run fails (exit {d.exit_code})\n{d.describe()}")
        if is_write(leaf) and (writes_of(d) or (d.stdout_json or {}).get("executed") is True):
            raise AssertionError(f"--dry-run of a write executed it\n{d.describe()}")

    helped = key is not None and in_sample(ctx, key)
    calls = _example_calls(leaf, helped)
    unjudged = [ex for ex, _, d in calls if _world_dependent(run_one(ctx, d))]
    if unjudged:
        ctx.section("examples_not_judged", {key: unjudged})
    judged = [(ex, h, d) for ex, h, d in calls if ex not in unjudged]
    if not judged:
        raise NotApplicable(f"every example of {key} parses and runs, then its dry run's own lookup fails against "
                            "the synthetic world (exit 1, or after reads only): it cannot be judged here")
    collect(((ex, lambda ex=ex, h=h, d=d: one(ex, h, d)) for ex, h, d in judged),
            header=f"{key}: examples that do not run" + (f" ({len(unjudged)} not judged)" if unjudged else ""))


def _confirmation_asked(leaf: dict[str, Any], inv: Any) -> bool:
    """A user-confirmed tool whose example (rightly without --yes: the Agent may not confirm for the user, D2
    §5) is refused with reason confirmation_required and no request: the safety rule working, not a failure."""
    reason = (inv.error or {}).get("reason")
    return leaf.get("confirmation") == "user_required" and reason == "confirmation_required" and not inv.calls()


def _world_dependent(inv: Any) -> bool:
    """A failed dry run that the CLI did accept: it read the synthetic backend (reads only, no write) before it
    failed, or it failed at run time (exit 1, not a parse or validation refusal: exit 3 / 5 with no request).
    The example's placeholders then name entities the synthetic world lacks (`<VIEW_ID>`, a Base named
    项目管理): its outcome says nothing about the example (D2 §10 item 4 leaves such checks to future work)."""
    if inv.exit_code == 0 or inv.problem is not None or writes_of(inv):
        return False
    return bool(inv.calls()) or inv.exit_code not in (3, 5)


# -- SCH-ONEOF-BRANCH-DRYRUN -------------------------------------------------------------------------------------------
def _oneof_subjects(ctx: Any) -> list[str]:
    return schema_subjects(ctx, lambda t: bool((t.get("constraints") or {}).get("require_one_of")), cheap=True)


def _companions(leaf: dict[str, Any], chosen: set[str], excluded: set[str]) -> list[str]:
    """The optional parameters the schema gives a value for (`example`, or a local input file), minus those that
    would break a constraint: a branch may need a companion that only the executing code demands (D2 §10 item
    4 names such RunE checks as future work), and the schema's own example values are the documented way."""
    params = leaf.get("parameters") or {}
    cons = leaf.get("constraints") or {}
    blocked = set(excluded) | chosen
    for grp in cons.get("mutually_exclusive") or []:
        if chosen & set(grp):
            blocked |= set(grp)
    out: list[str] = []
    for name, spec in sorted(params.items()):
        if name in blocked or spec.get("required"):
            continue
        if spec.get("example") not in (None, "") or is_file_flag(name, spec):
            out += flag_args(name, spec, params)
    return out


def _branch_calls(leaf: dict[str, Any]) -> list[tuple[int, str, Call, Call]]:
    """(group index, label, plain branch run, the same with the schema's companion values) per one-of member."""
    out = []
    params = leaf.get("parameters") or {}
    positionals = {p.get("name") for p in leaf.get("positionals") or []}
    groups = (leaf.get("constraints") or {}).get("require_one_of") or []
    for gi, grp in enumerate(groups):
        for member in grp:
            others = [m for m in grp if m != member]
            args = required_args(leaf, skip=others, one_of={gi: member})
            if member not in params and member in positionals:
                args.append(synth(member, None))
            chosen = {a[2:].split("=", 1)[0] for a in args if a.startswith("--")}
            extra = _companions(leaf, chosen, {m for g in groups for m in g})
            path = _primary(leaf).split()
            out.append((gi, f"group {gi} --{member}", executed(*path, *args, "--dry-run"),
                        executed(*path, *args, *extra, "--dry-run")))
    return out


@gate("SCH-ONEOF-BRANCH-DRYRUN", doc="D2 §9 last para, §10 item 3", access={Access.BIN, Access.MCP},
      subjects=_oneof_subjects, per_tool=True)
def oneof_every_branch(ctx: Any, subject: str | None = None) -> None:
    """--dry-run succeeds for EVERY member of every require_one_of group, not only the first.

    The rule is that no branch is worse than its siblings. A group where EVERY member is refused before any
    write (the synthetic companions, world or login do not satisfy a check only the executing code makes, which
    D2 §10 item 4 leaves to future work) cannot show that, so it is counted as not judged, not failed; a write
    during a dry run fails wherever it happens."""
    leaf = leaf_or_skip(ctx, subject)
    _prefetch(ctx)
    write = is_write(leaf)

    def outcome(call: Call, with_companions: Call) -> Any:
        inv = run_one(ctx, call)
        if inv.exit_code != 0 and with_companions != call:
            inv = run_one(ctx, with_companions)
        return inv

    def wrote(inv: Any) -> bool:
        return write and bool(writes_of(inv) or (inv.stdout_json or {}).get("executed") is True)

    def branch(inv: Any) -> None:
        if inv.exit_code != 0:
            raise AssertionError(f"exit {inv.exit_code}, reason {(inv.error or {}).get('reason')!r}\n{inv.describe()}")
        if wrote(inv):
            raise AssertionError(f"the write was not previewed\n{inv.describe()}")

    runs = [(gi, label, outcome(c, w)) for gi, label, c, w in _branch_calls(leaf)]
    judged = {gi for gi, _, inv in runs if inv.exit_code == 0 or wrote(inv)}
    unjudged = sorted({gi for gi, _, _ in runs} - judged)
    if unjudged:
        ctx.section("oneof_groups_not_judged", {subject: unjudged})
    if not judged:
        raise NotApplicable(f"no one-of branch of {subject} dry-runs with the synthetic inputs: every member of "
                            f"group(s) {unjudged} is refused before any write, so no branch can be compared")
    collect(((label, lambda inv=inv: branch(inv)) for gi, label, inv in runs if gi in judged),
            header=f"{subject}: one-of branches fail under --dry-run"
                   + (f" (groups {unjudged} not judged: every member refused)" if unjudged else ""))


# -- SCH-NO-LISTTOOLS (dynamic part) ---------------------------------------------------------------------------
plans("SCH-NO-LISTTOOLS")(offline_calls)


@gate("SCH-NO-LISTTOOLS", doc="D2 §7 last para, §9 b10", access={Access.MCP}, part="bin")
def no_listtools_bin(ctx: Any) -> None:
    """Help, schema and product help send nothing to the server (empty HOME, no token)."""
    check_offline_runs(ctx, succeed=False)


# -- ALI-SCHEMA-FACTS, ALI-NO-SECOND-ENTRY ---------------------------------------------------------------------
def _alias_fact_calls(ctx: Any) -> tuple[dict[str, list[Any]], dict[str, Call], dict[tuple[str, str], Call]]:
    """Schema tools of the profile's flag aliases, their `schema <tool>` runs and the alias acceptance runs."""
    from pytest_dws.profile import active_profile

    view = bin_schema(ctx)
    prof = active_profile(ctx)
    by_key: dict[str, list[Any]] = {}
    for a in prof.aliases:
        if a.kind == "flag" and a.command in prof.commands:
            key = view.primary.get(" ".join(prof.commands[a.command].path))
            if key is not None:
                by_key.setdefault(key, []).append(a)
    calls = {k: plain("schema", k) for k in by_key}
    accepts = {(k, a.alias): plain(*_primary(view.tools[k]).split(), "--help", *flag_args(
        a.alias.lstrip("-"), (view.tools[k].get("parameters") or {}).get(a.canonical.lstrip("-"))))
        for k, al in by_key.items() for a in al}
    return by_key, calls, accepts


plans("ALI-SCHEMA-FACTS")(lambda ctx: [*_alias_fact_calls(ctx)[1].values(), *_alias_fact_calls(ctx)[2].values()])


@gate("ALI-SCHEMA-FACTS", doc="D1 §5, §7.3 b3; e81 TestFinalSchemaParametersMatchExecutableHelpFlags",
      access={Access.BIN})
def alias_schema_facts(ctx: Any) -> None:
    """The schema projects canonical flags and constraints only; alias spellings are never parameters."""
    prefetch(ctx)
    by_key, calls, accepts = _alias_fact_calls(ctx)
    if not by_key:
        raise NotApplicable("no command of the profile's flag aliases is in the binary's schema")
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
        for kind, groups in sorted((leaf.get("constraints") or {}).items()):
            for grp in groups:
                if not set(grp) <= members:
                    problems.append(f"{k}: constraint {kind} {grp} names {sorted(set(grp) - members)}, not "
                                    "parameters")
    if problems:
        raise AssertionError("\n".join(problems))


@gate("ALI-NO-SECOND-ENTRY", doc="D1 §5 intro", access={Access.BIN})
def alias_no_second_entry(ctx: Any) -> None:
    """Compatibility aliases add no visible command: no catalog path uses a hidden command alias."""
    from pytest_dws.profile import active_profile

    view = bin_schema(ctx)
    names = {a.alias for a in active_profile(ctx).aliases if a.kind == "command"}
    bad = sorted(f"{k}: {p}" for k, t in view.tools.items()
                 for p in [t.get("cli_path") or "", _primary(t), *(t.get("aliases") or [])]
                 if names & set(p.split()))
    if bad:
        raise AssertionError("hidden command aliases appear as schema paths: " + "; ".join(bad))
    pinned = ctx.expect.get("tools")
    if pinned is not None:
        assert_equal(pinned, len(view.tools), "catalog tool count of `dws schema --all` (pinned -> actual)")
    ctx.observe("tools", len(view.tools))


# -- call planners (see pytest_dws.calls.prefetch) ------------------------------------------------------------------
#: kind -> (leaf, sampled) -> the calls; the costly ones (help) only when the tool is sampled.
_KINDS: dict[str, Callable[[dict[str, Any], bool], list[Call]]] = {
    "maps": lambda t, sampled: _maps_calls(t),
    "help": lambda t, sampled: _help_calls(t) if sampled else [],
    "required": lambda t, sampled: list(_required_calls(t).values()),
    "oneof": lambda t, sampled: [c for _, _, a, b in _branch_calls(t) for c in dict.fromkeys((a, b))],
    "examples": lambda t, sampled: [c for _, h, d in _example_calls(t, sampled) for c in (h, d) if c is not None],
}
_TOOL_GATES = {"SCH-MAPS-TO-COBRA": ("maps",), "SCH-HELP-EQ-SCHEMA": ("help",),
               "SCH-REQUIRED-FROM-CLI": ("required", "help"), "SCH-IDENTITY-ONLY-BACKFILL": ("required", "help"),
               "SCH-ONEOF-BRANCH-DRYRUN": ("oneof",), "SCH-EXAMPLES": ("examples",),
               "FIN-SKILL-VALIDATE": ("examples", "oneof")}
for _gate_id, _kinds in _TOOL_GATES.items():
    plans(_gate_id)(lambda ctx, kinds=_kinds: _tool_calls(ctx, kinds))
