"""SCH gates about the command tree the binary executes against the schema it embeds (D2 §4, §7, §9 b10-b12):
every schema path is a real cobra leaf, hidden subtrees stay hidden, lower-priority sources neither unhide nor
override, retired commands are gone, nothing calls tools/list. Views: :mod:`pytest_dws.observe.binary.views`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pytest_dws.assertions import assert_error_classified
from pytest_dws.core.errors import NotApplicable, NotRecorded
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.argv import PROBE_FLAG, flag_args, required_args
from pytest_dws.observe.binary.helptext import help_of, parse_help
from pytest_dws.observe.binary.plans import (
    disk_tools,
    every_subject,
    plan_tool_gate,
    prefetch_tools,
    tool_kind,
)
from pytest_dws.observe.binary.views import (
    bin_schema,
    check_no_discovery_anywhere,
    check_offline_runs,
    every,
    in_sample,
    leaf_or_skip,
    offline_calls,
    prefetch_selected,
    primary_path,
    probe,
    sample,
    schema_profile,
    writes_of,
)
from pytest_dws.observe.binary.worlds import SYN_CID, executed, plain
from pytest_dws.observe.calls import Call, plans, run_calls, run_one
from pytest_dws.registry import Access, gate
from pytest_dws.verdict.cases import collect, soft


# -- SCH-MAPS-TO-COBRA ---------------------------------------------------------------------------------------
def _maps_calls(leaf: dict[str, Any]) -> list[Call]:
    paths = [primary_path(leaf), *(leaf.get("aliases") or [])]
    return [probe(p) for p in paths]


def _maps_followups(ctx: GateContext) -> list[Call]:
    """The costly second stage of SCH-MAPS-TO-COBRA, known once the probes ran: the Help of every path whose
    probe was refused untyped, and the Help parse of the parameters its probe did not list, for the sampled
    tools. Run as ONE batch (on the pool, or shared under xdist), not one by one from each tool's check."""
    view = bin_schema(ctx)
    keys = [k for k in every(ctx, view.tools) if in_sample(ctx, k)]
    probes = run_calls(ctx, [c for k in keys for c in _maps_calls(view.tools[k])])
    out: list[Call] = []
    for k in keys:
        leaf = view.tools[k]
        primary, params = primary_path(leaf), leaf.get("parameters") or {}
        avail = None
        for path in [primary, *(leaf.get("aliases") or [])]:
            inv = probes[probe(path)]
            if (inv.error or {}).get("reason") != "unknown_flag":
                out.append(plain(*path.split(), "--help"))
            if path == primary:
                avail = (inv.error or {}).get("available_flags")
        listed = {str(f).lstrip("-") for f in avail} if isinstance(avail, list) else set()
        unproven = [p for p in sorted(params) if p not in listed]
        if unproven:
            out.append(plain(*primary.split(), *[a for p in unproven for a in flag_args(p, params[p])], "--help"))
    return out


def _cheap_proof_or_skip(ctx: GateContext, leaf: dict[str, Any], subject: str) -> None:
    """A tool outside the sample is judged by its parse probes alone: when one is refused untyped, or its
    `available_flags` do not list every parameter, only a costly `--help` could prove the rest, so the tool is
    not judged in this run (NotApplicable naming --dws-sample all) rather than passed unproven."""
    primary = primary_path(leaf)
    for path in [primary, *(leaf.get("aliases") or [])]:
        inv = run_one(ctx, probe(path))
        error = inv.error or {}
        if error.get("reason") != "unknown_flag":
            raise NotApplicable(f"`dws {path} {PROBE_FLAG}` is refused untyped (exit {inv.exit_code}): only its "
                                "costly --help proves it, and the tool is not sampled (--dws-sample all)",
                                wants="a sampled --help (--dws-sample all)")
        listed = {str(f).lstrip("-") for f in error.get("available_flags") or []}
        missing = sorted(set(leaf.get("parameters") or {}) - listed)
        if path == primary and missing:
            raise NotApplicable(f"`dws {path}` lists no {', '.join('--' + m for m in missing)} in available_flags: "
                                "only its costly --help proves them, and the tool is not sampled (--dws-sample all)",
                                wants="a sampled --help (--dws-sample all)")


@gate("SCH-MAPS-TO-COBRA", doc="D2 §9 b11", access={Access.BIN}, subjects=every_subject, per_tool=True)
def maps_to_cobra(ctx: GateContext, subject: str | None = None) -> None:
    """Every tool's primary path and aliases are executable leaves; every parameter is a real flag."""
    leaf = leaf_or_skip(ctx, subject)
    prefetch_tools(ctx)
    ctx.memo(("sch-maps", "followups"), lambda: run_calls(ctx, _maps_followups(ctx)) and True)
    primary, params = primary_path(leaf), sorted(leaf.get("parameters") or {})
    problems: list[str] = []
    flag_sets: dict[str, Any] = {}
    if subject is not None and not in_sample(ctx, subject):
        _cheap_proof_or_skip(ctx, leaf, subject)
    for path in [primary, *(leaf.get("aliases") or [])]:
        inv = run_one(ctx, probe(path))
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


# -- SCH-HIDDEN-SUBTREE, SCH-FALLBACK-NO-UNHIDE ---------------------------------------------------------------------
def _listing(ctx: GateContext, parent: str) -> list[str]:
    inv, parsed = help_of(ctx, parent)
    return parsed.commands if inv.exit_code == 0 else []


def _hidden_scope(ctx: GateContext) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Binary tools plus disk-only tools (a tool missing from the binary is still judged), and the sample."""
    disk = disk_tools(ctx)
    tools = {**{k: v for k, v in disk.items() if isinstance(v, dict)}, **bin_schema(ctx).tools}
    return tools, sample(ctx, sorted(tools))


@plans("SCH-HIDDEN-SUBTREE")
def _plan_hidden(ctx: GateContext) -> list[Call]:
    tools, keys = _hidden_scope(ctx)
    paths = [primary_path(tools[k]).split() for k in keys]
    prefixes = {" ".join(words[:i]) for words in paths for i in range(len(words))}
    return [plain(*p.split(), "--help") for p in sorted(prefixes)]


@gate("SCH-HIDDEN-SUBTREE", doc="D2 §4, §9 b12; cf TestWalkLeafCommandsTraversesAnnotatedHiddenSubtree",
      access={Access.BIN}, per_tool=True)
def hidden_subtree(ctx: GateContext) -> None:
    """Hidden subtrees stay out of --help, but the fixed Schema still traverses them."""
    prefetch_selected(ctx)
    tools, keys = _hidden_scope(ctx)
    run_calls(ctx, _plan_hidden(ctx))
    hidden = []
    for k in keys:
        toks = primary_path(tools[k]).split()
        if any(toks[i] not in _listing(ctx, " ".join(toks[:i])) for i in range(len(toks))):
            hidden.append(k)
    # the products the release names hidden, and every product whose commands the root --help does not list (a
    # hidden subtree the release facts do not name is judged too, issue 43)
    root = _listing(ctx, "")
    unlisted = {k.split(".", 1)[0] for k in tools if root and primary_path(tools[k]).split()[:1] and
                primary_path(tools[k]).split()[0] not in root and primary_path(tools[k]).split()[0] == k.split(".")[0]}
    named = sorted({p for p in schema_profile(ctx).get("hidden_products", ["conference"])
                    if any(k.split(".", 1)[0] == p for k in tools)} | unlisted)
    ctx.observe("hidden_tools", len(hidden))
    if not hidden and not named:
        raise NotApplicable("no hidden subtree: every catalog path is listed in its parent's --help",
                            wants="a hidden subtree")
    calls = {k: [plain("schema", k), plain("schema", "--cli-path", primary_path(tools[k])),
                 plain(*primary_path(tools[k]).split(), "--help")] for k in hidden}
    results = run_calls(ctx, [c for cs in calls.values() for c in cs] + [plain("schema", p) for p in named])
    problems = []
    for k, (by_key, by_path, helped) in calls.items():
        for what, c in (("schema <canonical>", by_key), ("schema --cli-path <primary>", by_path)):
            doc = results[c].check().stdout_json
            if results[c].exit_code != 0 or not isinstance(doc, dict) or doc.get("canonical_path") != k:
                problems.append(f"{k}: `dws {' '.join(c.args)}` does not return the hidden leaf ({what}, exit "
                                f"{results[c].exit_code})")
        inv = results[helped].check()
        _, parsed = help_of(ctx, primary_path(tools[k]))
        if inv.exit_code != 0 or not parsed.usage_is(primary_path(tools[k])):
            problems.append(f"{k}: `dws {primary_path(tools[k])} --help` does not resolve (usage {parsed.usage!r})")
    for p in named:
        doc = results[plain("schema", p)].check().stdout_json
        if not isinstance(doc, dict) or doc.get("level") != "product" or not (doc.get("product") or {}).get("tools"):
            problems.append(f"hidden product {p}: `dws schema {p}` is not a product level with tools")
        if p in _listing(ctx, ""):
            problems.append(f"hidden product {p} is listed in `dws --help`")
    if problems:
        raise AssertionError("\n".join(problems))


@plans("SCH-FALLBACK-NO-UNHIDE")
def _plan_unhide(ctx: GateContext) -> list[Call]:
    return [plain(*p.split()[:-1], "--help") for p in schema_profile(ctx)["hidden_groups"]]


@gate("SCH-FALLBACK-NO-UNHIDE", doc="D2 §4; cf TestMergeCommandTree 'lower priority source cannot unhide'",
      access={Access.BIN})
def fallback_no_unhide(ctx: GateContext) -> None:
    """Hidden and retired commands stay out of their parent's --help (a fallback cannot un-hide them)."""
    prefetch_selected(ctx)
    paths = schema_profile(ctx)["hidden_groups"]
    run_calls(ctx, _plan_unhide(ctx))
    parents = sorted({" ".join(p.split()[:-1]) for p in paths})
    unread = [f"`dws {p} --help`".replace("dws  ", "dws ") for p in parents if not _listing(ctx, p)]
    if unread:  # a view the suite cannot read is no violation (issue 35 (7)), and nothing judged is never a pass
        raise NotApplicable(f"{', '.join(unread)} lists no commands the suite can read (it failed, or prints a "
                            "listing in no format of observe.binary.helptext): whether a hidden command is listed "
                            "cannot be judged", wants="a readable command listing")
    shown = [p for p in paths if p.split()[-1] in _listing(ctx, " ".join(p.split()[:-1]))]
    if shown:
        raise AssertionError("hidden/retired commands are listed in their parent's --help: "
                             + ", ".join(f"`{p}`" for p in shown))


# -- SCH-FALLBACK-NO-OVERRIDE ------------------------------------------------------------------------------------
def _override_calls(ctx: GateContext) -> dict[str, Call]:
    view = bin_schema(ctx)
    named = schema_profile(ctx)["helper_backed"]
    keys = sorted({k for k, t in view.tools.items() if t.get("dry_run")} | {view.primary[p] for p in named
                                                                           if p in view.primary})
    return {k: executed(*primary_path(view.tools[k]).split(), *required_args(view.tools[k]), "--dry-run",
                       tool=view.tools[k]) for k in keys}


plans("SCH-FALLBACK-NO-OVERRIDE")(lambda ctx: list(_override_calls(ctx).values()))


@gate("SCH-FALLBACK-NO-OVERRIDE", doc="D2 §4; cf TestCatalogFallbackDryRunUsesFrozenInterfaceRef", access={Access.BIN})
def fallback_no_override(ctx: GateContext) -> None:
    """A real (helper-backed) command keeps its own dry-run; the -100 fallback only fills gaps."""
    prefetch_selected(ctx)
    view = bin_schema(ctx)
    calls = _override_calls(ctx)
    if not calls:
        raise NotApplicable("no helper-backed command in the catalog (no `dry_run` capability, none named)",
                            wants="a helper-backed command")
    keys = sorted(calls)
    results = run_calls(ctx, calls.values())
    problems, unjudged, unrecorded = [], [], []
    for k, c in calls.items():
        try:
            inv = results[c].check()
        except NotRecorded:  # a replayed recording lacks this tool's run (a newer suite types other values)
            unrecorded.append(k)
            continue
        doc = inv.stdout_json if isinstance(inv.stdout_json, dict) else None
        # docs/wire.md §8: a helper's own --dry-run may print key/value text (exit 0, no request) even with --format
        # json; only the fallback leaf prints {"kind":"compat_invocation"}. JSON previews must say not executed.
        if doc is not None and doc.get("kind") == "compat_invocation":
            problems.append(f"{k}: `dws {primary_path(view.tools[k])}` is served by the fallback leaf "
                            f"(compat_invocation), not by the real command")
        elif writes_of(inv) or (doc is not None and (doc.get("executed") is True or doc.get("dry_run") is False)):
            problems.append(f"{k}: the dry-run preview is not a non-executed helper preview\n{inv.describe()}")
        elif inv.exit_code != 0:
            # No preview at all: the command refused the synthetic inputs itself (e.g. a companion flag only its
            # RunE demands). The fallback leaf would have printed compat_invocation whatever the inputs, so
            # this says nothing about an override; it is counted as not judged (SCH-EXAMPLES runs the
            # reviewed examples, SCH-ONEOF-BRANCH-DRYRUN the branches).
            unjudged.append(k)
    ctx.observe("helper_backed_checked", len(keys) - len(unjudged) - len(unrecorded))
    ctx.observe("helper_backed_unjudged", len(unjudged))
    if len(unrecorded) == len(keys):
        raise NotRecorded(f"not recorded: the replayed recording holds none of the helper-backed dry runs ({keys})")
    if len(unjudged) + len(unrecorded) == len(keys):
        raise NotApplicable(f"no helper-backed command printed a dry-run preview with synthetic inputs ({keys}"
                            + (f"; {len(unrecorded)} not recorded" if unrecorded else "") + ")",
                            wants="a helper-backed dry-run preview")
    if problems:
        raise AssertionError("\n".join(problems))


# -- SCH-RETIRED-REMOVED (binary part) -----------------------------------------------------------------------------
def _retired_calls(entry: dict[str, Any]) -> list[Call]:
    path, key = entry["path"], entry.get("canonical")
    args = [a.replace("{cid}", SYN_CID) for a in entry.get("args", [])]
    runs = [executed(*path.split(), *args), plain("schema", "--cli-path", path)]
    return runs + ([plain("schema", key)] if key else [])


plans("SCH-RETIRED-REMOVED")(lambda ctx: [c for e in schema_profile(ctx)["retired"]
                                          for c in _retired_calls(e)])


@gate("SCH-RETIRED-REMOVED", doc="D2 §4; cf TestChatFileUploadDownlinedButMessageFileSendStays", access={Access.BIN},
      part="bin")
def retired_removed_bin(ctx: GateContext) -> None:
    """A retired entry keeps its compatibility error but is gone from the Schema."""
    prefetch_selected(ctx)
    view = bin_schema(ctx)
    problems = []
    for entry in schema_profile(ctx)["retired"]:
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


# -- SCH-NO-LISTTOOLS (dynamic part) ---------------------------------------------------------------------------
plans("SCH-NO-LISTTOOLS")(offline_calls)


@gate("SCH-NO-LISTTOOLS", doc="D2 §2, §7 last para, §9 b10", access={Access.MCP}, part="bin", sweep=True)
def no_listtools_bin(ctx: GateContext) -> None:
    """Help, schema and product help send nothing to the server (empty HOME, no token); no invocation of the
    whole run (executions too) asks the service to list its tools."""
    from pytest_dws.observe import runtime as rt

    def executing() -> None:
        with contextlib.suppress(NotApplicable):  # an implementation without the profile's read probe
            rt.results(ctx, [rt.read_probe(ctx, None)])  # at least one execution, whatever else the run selected
        check_no_discovery_anywhere(ctx)

    collect([("help and schema", lambda: check_offline_runs(ctx, succeed=False)),
             ("every invocation", executing)])


tool_kind("maps")(lambda leaf, sampled: _maps_calls(leaf))
plan_tool_gate("SCH-MAPS-TO-COBRA", ("maps",))
