"""What the binary says about itself (`dws schema --all`), read once per session, and the tools each gate judges.

docs/wire.md §7: on the real e81 binary `dws schema --all` costs 6 s once, a leaf `--help` or `schema <tool>` ~5 s
each, and a flag-parse error ~0.04 s. So: `schema --all` is read ONCE per session and every per-tool view is
derived from it; "this path exists" / "this parameter is a real flag" is proven with cheap parse errors
(a probe flag gives `unknown_flag` with `available_flags`); `--help` and `schema <tool>` run only in the gates
that are about help or schema output, over a coverage sample (:mod:`pytest_dws.launch.plan`) plus every tool the
documents name. Cheap checks judge every tool (this shard's part of them).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.release_facts import schema_facts
from pytest_dws.observe.binary.argv import PROBE_FLAG
from pytest_dws.observe.binary.helptext import HELP_ONLY_FLAGS
from pytest_dws.observe.binary.worlds import EMPTY, plain
from pytest_dws.observe.calls import Call, prefetch, run_calls, run_one, selected_gates


def prefetch_selected(ctx: GateContext) -> bool:
    """Make, as ONE batch on the bounded pool, the planned calls of every SELECTED gate with a planner, the first
    time one of them runs (:func:`pytest_dws.observe.calls.prefetch`). Under pytest-xdist every worker knows the same
    plan and the calls are shared (:mod:`pytest_dws.launch.xshare`): each is made by the worker that claims it first.
    False when the selection is unknown (then each gate runs its own batch)."""
    chosen = selected_gates(ctx)
    if chosen is None:
        return False
    prefetch(ctx, chosen)
    return True


# -- schema --all -------------------------------------------------------------------------------------------
@dataclass
class BinSchema:
    """The binary's own catalog (`dws schema --all`), cf or e81 shape, with per-tool full leaves."""

    doc: dict[str, Any]
    shape: str  # "e81": products carry full leaves; "cf": products carry summaries (leaves fetched per tool)
    tools: dict[str, dict[str, Any]]
    products: list[dict[str, Any]]
    primary: dict[str, str] = field(default_factory=dict)  # primary CLI path -> canonical
    aliases: dict[str, str] = field(default_factory=dict)  # alias CLI path -> canonical

    def product_of(self, key: str) -> str:
        return self.tools[key].get("product_id") or key.split(".", 1)[0]


def primary_path(leaf: dict[str, Any]) -> str:
    """The tool's primary CLI path."""
    return leaf.get("primary_cli_path") or leaf.get("cli_path") or ""


def probe(path: str) -> Call:
    """The cheap parse probe of a CLI path: the path with an unknown flag. A leaf refuses it with reason
    `unknown_flag` and lists its `available_flags` (docs/wire.md §7: 0.04 s against a Help's 5 s). One Call for
    every user, so the gates and the sample share one memoised run."""
    return plain(*path.split(), PROBE_FLAG)


def bin_schema(ctx: GateContext) -> BinSchema:
    """`dws schema --all`, run once per session (empty HOME, no token, an empty fake world)."""

    def build() -> BinSchema:
        inv = run_one(ctx, plain("schema", "--all"))
        doc = inv.stdout_json
        if inv.exit_code != 0 or not isinstance(doc, dict) or not isinstance(doc.get("products"), list):
            raise AssertionError("`dws schema --all` did not print the catalog JSON (exit "
                                 f"{inv.exit_code})\n{inv.describe()}")
        products = [p for p in doc["products"] if isinstance(p, dict)]
        tools: dict[str, dict[str, Any]] = {}
        for p in products:
            for t in p.get("tools") or []:
                if isinstance(t, dict) and isinstance(t.get("canonical_path"), str):
                    tools[t["canonical_path"]] = t
        full = all("parameters" in t for t in tools.values())
        if not full:  # cf: --all carries summaries; the full leaves come from `schema <canonical>`
            calls = {k: plain("schema", k) for k in sorted(tools)}
            results = run_calls(ctx, calls.values())
            for k, c in calls.items():
                leaf = results[c].check().stdout_json
                if results[c].exit_code != 0 or not isinstance(leaf, dict):
                    raise AssertionError(f"`dws schema {k}` failed (exit {results[c].exit_code})\n"
                                         f"{results[c].describe()}")
                tools[k] = leaf
        view = BinSchema(doc, "e81" if full else "cf", tools, products)
        for k, t in tools.items():
            view.primary[primary_path(t)] = k
            for a in t.get("aliases") or []:
                view.aliases[a] = k
        ctx.observe("bin_schema_tools", len(tools))
        ctx.observe("bin_schema_products", len(products))
        return view

    return ctx.memo(("sch-bin", "all"), build)


def bin_release(ctx: GateContext) -> Any:
    """The binary's catalog as a :class:`pytest_dws.inputs.catalog.Release` (the "bin" view for the DATA gates)."""
    from pytest_dws.inputs.catalog import Release

    return ctx.memo(("release", "bin"), lambda: Release.from_document(bin_schema(ctx).doc, "dws schema --all"))


class Subjects(list):  # type: ignore[type-arg]
    """The subjects a per-tool gate judges in this run, and ``universe``: every subject it has in the release
    (the baseline check knows them all; a sampled or sharded run judges only some)."""

    universe: list[str]


def subject_list(judged: list[str], universe: list[str]) -> Subjects:
    out = Subjects(judged)
    out.universe = universe
    return out


def schema_subjects(ctx: GateContext, predicate: Any = None, *, cheap: bool = False) -> Subjects:
    """Per-tool subjects for BIN gates, optionally filtered; [] when unavailable. ``cheap``: the gate's calls
    are parse probes and dry runs, so it judges every tool (this shard's part of them); otherwise it makes
    costly calls and judges the sample (:func:`sample`)."""
    try:
        view = bin_schema(ctx)
    except (AssertionError, NotApplicable):
        return subject_list([], [])
    universe = [k for k in sorted(view.tools) if predicate is None or predicate(view.tools[k])]
    judged = every(ctx, universe) if cheap else [k for k in sample(ctx, sorted(view.tools)) if k in set(universe)]
    return subject_list(judged, universe)


def selected(ctx: GateContext, keys: Iterable[str]) -> list[str]:
    """The keys ``--dws-subject`` selects (a key or ``bin:<key>`` matching a glob); every key without it. The
    planners make calls for these only, so a quick local look at a few tools costs those tools' calls."""
    patterns = ctx.settings.subjects
    keys = sorted(keys)
    if not patterns:
        return keys
    return [k for k in keys if any(fnmatch.fnmatchcase(k, p) or fnmatch.fnmatchcase("bin:" + k, p) for p in patterns)]


def every(ctx: GateContext, keys: Iterable[str]) -> list[str]:
    """All keys of a cheap check: this shard's part of them (``--dws-shard K/N``), of those ``--dws-subject``
    selects."""
    from pytest_dws.launch.plan import shard

    return shard(selected(ctx, keys), ctx.settings.shard)


def sample(ctx: GateContext, keys: Iterable[str]) -> list[str]:
    """The keys whose costly calls (help, `schema <tool>`) run, in this shard (:mod:`pytest_dws.launch.plan`):
    ``--dws-sample all`` every key, ``--dws-sample N`` N evenly spaced ones, by default the coverage sample of
    tool keys (constraint kinds, parameter features, aliases ...) or every key of another list (products:
    each is its own feature), plus the tools whose cheap probe contradicts their schema (:func:`suspects`). The
    tools the documents and the profile name are always in; with ``--dws-subject``, exactly the keys it selects."""
    from pytest_dws.launch import plan

    keys = sorted(keys)
    flagged = suspects(ctx) & set(keys)
    return sorted(set(plan.shard(unsharded_sample(ctx, keys), ctx.settings.shard)) | flagged)


#: Names a probe's `available_flags` and a schema's parameters may differ by without a contradiction: the root
#: execution controls (Help lists them, the schema does not) and the generic `--json`/`--params` payload flags
#: (upstream leaves them out of `available_flags`; a schema may list a command's own `--json` input).
_PROBE_NEUTRAL = HELP_ONLY_FLAGS | {"json", "params"}


def suspects(ctx: GateContext) -> frozenset[str]:
    """This shard's tools whose cheap parse probe contradicts their schema: the flags its unknown-flag refusal
    lists in `available_flags` (upstream: "a subset of what --help shows") are not the schema's parameters.
    Only the costly Help can judge such a tool, so the coverage sample adds it: the exhaustive run on cf8cf95
    found `aisearch enterprise` showing its product's persistent `--dimension`/`--keyword`, which its schema
    lacks, on tools the coverage sample had left out. A probe proves nothing by itself (an implementation may
    list flags its way); it only chooses which Help to read. The probes are SCH-MAPS-TO-COBRA's, made once.
    Empty under ``--dws-sample N`` (a bound the user set) and ``all`` (every Help is read anyway)."""
    if ctx.settings.sample is not None:
        return frozenset()

    def build() -> frozenset[str]:
        tools = bin_schema(ctx).tools
        probes = {k: probe(primary_path(tools[k])) for k in every(ctx, tools)}
        results = run_calls(ctx, probes.values())
        out = set()
        for k, call in probes.items():
            listed = (results[call].error or {}).get("available_flags")
            if not isinstance(listed, list):
                continue  # refused untyped: SCH-MAPS-TO-COBRA reads that tool's Help itself
            shown = {str(f).lstrip("-") for f in listed} - _PROBE_NEUTRAL
            if shown != set(tools[k].get("parameters") or {}) - _PROBE_NEUTRAL:
                out.add(k)
        return frozenset(out)

    return frozenset(ctx.memo(("sch-bin", "probe-suspects"), build))


def unsharded_sample(ctx: GateContext, keys: Iterable[str]) -> list[str]:
    """:func:`sample` before ``--dws-shard`` keeps its part."""
    from pytest_dws.launch import plan

    keys = sorted(keys)

    def build() -> list[str]:
        n = ctx.settings.sample
        named = set(schema_profile(ctx).get("named_tools", []))
        named |= {k for k in keys for p in ctx.settings.subjects
                  if fnmatch.fnmatchcase(k, p) or fnmatch.fnmatchcase("bin:" + k, p)}
        tools = bin_schema(ctx).tools
        if n == plan.ALL:
            picked = keys
        elif n:
            picked = plan.evenly(keys, int(n), named)
        elif all(k in tools for k in keys):
            picked = plan.coverage_sample({k: tools[k] for k in keys}, named)
        else:
            picked = keys
        return picked if not ctx.settings.subjects else selected(ctx, picked)

    return list(ctx.memo(("sch-bin", "sample", tuple(keys)), build))


def in_sample(ctx: GateContext, key: str) -> bool:
    """Whether a tool's costly calls run (it is in the sample of all the binary's tools; a shard makes them for
    the tools that are its own)."""
    chosen = ctx.memo(("sch-bin", "sampled-set"), lambda: frozenset(unsharded_sample(ctx, bin_schema(ctx).tools)))
    return key in chosen or key in suspects(ctx)


def observe_sample(ctx: GateContext) -> None:
    """Report how many tools the costly per-tool calls judge (at run time: collection-time counts are lost)."""
    view = bin_schema(ctx)
    judged = len(sample(ctx, sorted(view.tools)))
    hows: dict[Any, str] = {None: "coverage sample", "all": "every tool"}
    how = hows.get(ctx.settings.sample, f"{ctx.settings.sample} evenly")
    ctx.observe("schema_sample", {"judged": judged, "of": len(view.tools), "how": how,
                                  "probe_suspects": sorted(suspects(ctx)),
                                  "shard": "/".join(map(str, ctx.settings.shard)) if ctx.settings.shard else None})


def schema_profile(ctx: GateContext) -> dict[str, Any]:
    """The `[schema]` release facts (names of hidden/retired commands, tree CLI ...): the packaged ones
    (``inputs/data/release_facts.toml``), each key replaced by the expectations file's."""
    return schema_facts(ctx.expect)


def leaf_or_skip(ctx: GateContext, subject: str | None) -> dict[str, Any]:
    """The full leaf of a subject; with no subject the view's own failure (or NotApplicable) propagates."""
    view = bin_schema(ctx)
    if subject is None:
        raise NotApplicable("the binary's catalog has no tool for this gate", wants="a tool of the binary's catalog")
    return view.tools[subject]


# -- offline runs (SCH-NO-LISTTOOLS bin part, SCHCLI-NO-DISCOVERY) ---------------------------------------------
def offline_calls(ctx: GateContext) -> list[Call]:
    """ONE set of runs for both gates: `dws --help`, `dws schema` (root, --all, a product, a tool) and
    `dws <product> --help` over the sampled products, with an empty HOME, no token and every endpoint on the
    fake server (scenario ``empty``)."""
    view = bin_schema(ctx)
    sampled = unsharded_sample(ctx, view.tools)
    keys = sampled[:1]
    # Startup discovery is one behaviour of the binary, not of a product: the products of the sampled tools.
    products = sorted({view.product_of(k) for k in sampled})
    args = [("--help",), ("schema",), ("schema", "--all")]
    args += [("schema", view.product_of(k)) for k in keys] + [("schema", k) for k in keys]
    return [Call(a, scenario=EMPTY) for a in args + [(p, "--help") for p in products]]


def check_offline_runs(ctx: GateContext, *, succeed: bool) -> None:
    """Every run of :func:`offline_calls` sent nothing to the server (and, with ``succeed``, exited 0)."""
    from pytest_dws.assertions import assert_exit_code, assert_no_requests

    prefetch_selected(ctx)
    calls = offline_calls(ctx)
    results = run_calls(ctx, calls)
    for c in calls:
        inv = results[c].check()
        what = f"`dws {' '.join(c.args)}` (empty HOME, no token)"
        if succeed:
            assert_exit_code(inv, 0, what)
        assert_no_requests(inv, what)


def check_no_discovery_anywhere(ctx: GateContext) -> None:
    """No invocation of the run so far asked the service to list its tools (or reached its gateway for
    discovery): D2 §2 "运行时不执行 MCP tools/list", every invocation, not only help and schema. Judged over every
    invocation this process made (its runner files them, :meth:`pytest_dws.launch.Runner._note_discovery`); the
    sweep gate that calls this runs after the others."""
    from pytest_dws.core.errors import Finding

    runner = ctx.cli()
    seen, found = runner.observed_invocations, list(runner.discovery)
    ctx.section("discovery", {"judged_invocations": seen, "asked": len(found)})
    if not seen:
        raise NotApplicable("no invocation of the implementation was made in this run",
                            wants="an invocation of the implementation")
    if found:
        lines = [f"`{' '.join(argv)[:120]}`: {', '.join(asked)}" for argv, asked in found[:10]]
        more = f"\n  ... and {len(found) - 10} more" if len(found) > 10 else ""
        raise Finding(f"{len(found)} of {seen} invocations asked the service for discovery at run time:\n  "
                      + "\n  ".join(lines) + more, requests=",".join(sorted({a.split(' on ')[0] for _, asked in found
                                                                              for a in asked})))


def is_write(leaf: dict[str, Any]) -> bool:
    return leaf.get("effect") in ("write", "destructive")


def writes_of(inv: Any) -> list[Any]:
    """Write calls recorded during a run (fake_mcp's conservative rule: unknown non-read verbs count, a call asking
    for a plan only, `dryRun: true`, does not)."""
    from fake_mcp import is_write_call

    return [r for r in inv.calls() if is_write_call(r.tool, r.arguments)]


def write_names(inv: Any) -> str:
    """The write tools a run sent, ``product/tool`` comma-joined (``none``): said in a failure's message; its
    fingerprint binds the breached fact (``wrote``), not the exact list (issue 38)."""
    return ",".join(sorted({f"{r.product}/{r.tool}" for r in writes_of(inv)})) or "none"
