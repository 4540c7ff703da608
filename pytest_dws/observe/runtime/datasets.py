"""The dataset runs of a session (D1 §9.2): observed, holdout and the variant matrix, run once and shared.

The dataset runs are shared by the DS, MET, REL and FIT gates (computed once per session via ``ctx.memo``):
observed and holdout with their files' synthetic values, the same two re-run with random values, and the
variant matrix (a covering set plus hypothesis examples). Knobs, read from the option, else the environment,
else the expectations file's ``[datasets]`` table:

- ``--dws-variant-examples`` / ``DWS_VARIANT_EXAMPLES`` / ``variant_examples`` (default 50): hypothesis examples
  on top of the covering set;
- ``--dws-seed`` / ``DWS_VARIANT_SEED`` / ``seed`` (default: from the build's digest, printed): replays exactly the
  same names, IDs and points; two runs on the same build draw the same values;
- ``root`` / ``DWS_DATASETS_DIR``: another folder of dataset files.

The seed and the variant case count are run facts, not release counts: they go to the ``datasets`` section of
the JSON report (``ctx.section``), never to the "observed counts, ready to pin" list; the seed is also named in
every failure message (``replay``).
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import NotApplicable, NotRecorded
from pytest_dws.core.outcome import Judgement, Outcome, judge
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs import datasets as ds
from pytest_dws.observe.runtime.profiles import configured_profiles, profiles_home, profiles_setup
from pytest_dws.observe.runtime.runs import require_profile
from pytest_dws.registry import Access

DEFAULT_EXAMPLES = 50


def knob(ctx: GateContext, env: str, key: str, default: int, table: str = "datasets") -> int:
    """A non-negative integer knob: option, else env var, else ``[<table>]`` of the expectations file."""
    option = getattr(ctx.settings, key, None) if table == "datasets" else None
    if option is not None:
        return int(option)
    raw = os.environ.get(env)
    if raw is None:
        raw = ctx.expect.section(table).get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise NotApplicable(f"{env} / [{table}].{key} must be an integer, got {raw!r}",
                            wants=f"an integer {env}") from None
    if value < 0:
        raise NotApplicable(f"{env} / [{table}].{key} must be >= 0, got {raw!r}", wants=f"a non-negative {env}")
    return value


def seed(ctx: GateContext) -> int:
    """The session's dataset seed (the report's ``datasets`` section, and every failure message)."""
    def build() -> int:
        value = knob(ctx, "DWS_VARIANT_SEED", "seed", -1)
        if value < 0:  # deterministic by default: the build's own digest (same build, same values and report)
            from pytest_dws.core.identity import digest_seed

            value = digest_seed(ctx.settings.cli or [])
        ctx.section("datasets", {"seed": value, "replay": f"--dws-seed {value}"})
        return value

    return ctx.memo(("ds", "seed"), build)


def replay(ctx: GateContext) -> str:
    return f"replay with --dws-seed {seed(ctx)}"


def root(ctx: GateContext) -> Path:
    """The dataset folder; not applicable (never a silent pass) when it is not there."""
    value = os.environ.get("DWS_DATASETS_DIR") or ctx.expect.section("datasets").get("root")
    path = Path(value) if value else ds.default_root()
    if not path.is_dir():
        raise NotApplicable(f"no dataset files at {path} (set DWS_DATASETS_DIR or [datasets].root)",
                            wants="the dataset files (DWS_DATASETS_DIR)")
    return path


def results(ctx: GateContext, name: str) -> list[ds.CaseResult]:
    """observed / holdout run with the files' own synthetic values."""
    ctx.require(Access.MCP)
    require_profile(ctx)
    return ctx.memo(("ds", name), lambda: run_cases(ctx, ds.load_dataset(name, root(ctx))))


def randomised(ctx: GateContext, name: str) -> list[ds.CaseResult]:
    """observed / holdout re-run with fresh random names, CIDs, keywords and trace IDs (FIT-NO-OVERFIT)."""
    ctx.require(Access.MCP)
    require_profile(ctx)

    def build() -> list[ds.CaseResult]:
        rng = random.Random(f"{seed(ctx)}:{name}")
        return run_cases(ctx, [c.randomised(rng) for c in ds.load_dataset(name, root(ctx))])

    return ctx.memo(("ds", name, "randomised"), build)


@dataclass
class VariantRun:
    results: list[ds.CaseResult]
    coverage: dict[str, Any]
    seed: int
    examples: int
    covering: int


def variant(ctx: GateContext) -> VariantRun:
    """The covering set of the D1 §9.3 matrix plus ``variant_examples`` hypothesis examples."""
    ctx.require(Access.MCP)
    require_profile(ctx)

    def build() -> VariantRun:
        matrix = ds.Matrix.load(root(ctx))
        n, s = knob(ctx, "DWS_VARIANT_EXAMPLES", "variant_examples", DEFAULT_EXAMPLES), seed(ctx)
        rng = random.Random(s)
        keys = {k: "" for k in matrix.data["symbols"]}
        cover = [ds.build_case(matrix, p, ds.random_symbols(keys, rng)) for p in ds.covering_points(matrix)]
        recorded = ctx.settings.record is not None or ctx.settings.replay is not None
        tape = ctx.cli().tape if recorded else None  # a recording fixes hypothesis' draws: a replay runs the same
        draw = lambda: _generated(ctx, matrix, n, s)  # noqa: E731
        drawn = tape.fixed(f"variant-examples/{s}/{n}", draw) if tape is not None else draw()
        cases = cover + [ds.Case.from_json(c) for c in drawn]
        run = run_cases(ctx, cases)
        ctx.section("datasets", {"variant_cases": len(run), "variant_covering": len(cover), "variant_examples": n})
        return VariantRun(run, ds.coverage(run, matrix), s, n, len(cover))

    return ctx.memo(("ds", "variant"), build)


def _generated(ctx: GateContext, matrix: ds.Matrix, n: int, seed_value: int) -> list[dict[str, Any]]:
    """``n`` hypothesis-drawn variant cases, as JSON. Hypothesis keeps caches (unicode tables, constants) in a
    ``.hypothesis`` folder of the working directory: during the draw it is pointed into the run's temporary
    tree, so a contract run leaves nothing in the user's folder."""
    if not n:
        return []
    with hypothesis_home(ctx):
        return [c.as_json() for c in ds.generate_variants(matrix, n, seed_value)]


@contextlib.contextmanager
def hypothesis_home(ctx: GateContext) -> Iterator[None]:
    """Hypothesis' caches (unicode tables, constants) in the run's temporary tree while it draws, not in a
    ``.hypothesis`` folder of the user's working directory (shared with the agent evaluation's variants)."""
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(Path(ctx.tmp_root) / "hypothesis")
    try:
        yield
    finally:
        set_hypothesis_home_dir(None)


def run_cases(ctx: GateContext, cases: Iterable[ds.Case]) -> list[ds.CaseResult]:
    """Run cases against the implementation under test, each on a fresh fake backend (in parallel on the
    runner's pool of servers), and judge them; results in the order given."""
    from pytest_dws.launch import Job  # not at import: a DATA run never loads the runner

    rendered = []
    for c in cases:
        argv, scenario, expect = c.instantiate()
        argv, options, missing = with_profiles(ctx, c, argv)
        rendered.append((c, argv, scenario, expect, options, missing))
    invs = ctx.cli().run_jobs([Job(tuple(argv), scenario, options)
                               for _, argv, scenario, _, options, _ in rendered])
    out = []
    for (case, argv, _, expect, _, missing), inv in zip(rendered, invs, strict=True):
        try:
            outcome = Outcome.from_invocation(inv)
        except NotRecorded as exc:  # a replay of a recording made before this case ran so: this case waits for
            out.append(ds.CaseResult(case, argv, expect, Judgement("not recorded"), not_applicable=str(exc),
                                     recorded=False))  # the next recording, the others are judged
            continue
        calls = [dict(r) for r in outcome.transcript if r.get("rpc_method") == "tools/call"]
        result = ds.evaluate(case, argv, expect, judge(outcome, inv.envelope), calls)
        reason = missing or ds.unsupported(case, result)
        if reason:
            result.not_applicable, result.problems = reason, []
        out.append(result)
    return out


#: What the cross-profile holdout exercises, as the reason of a release whose expectations lack ``[profiles]``.
CROSS_PROFILE = "the cross-profile holdout (D1 §9.2 跨 profile ID)"


def with_profiles(ctx: GateContext, case: ds.Case, argv: list[str]) -> tuple[list[str], dict[str, Any], str | None]:
    """(argv, run options, why not applicable) of a case that selects one of its file's profiles (``--profile``):
    the profiles installed the way the release's ``[profiles]`` says (the same files, folder and variable as
    ERR-JSON-CONSISTENT[multi-profile]), and the file's i-th profile run as the release's i-th configured one.
    Without ``[profiles]`` the case runs as written (an implementation cannot know its profile) and is not
    applicable, with the reason naming what is missing; a case that selects no profile runs unchanged."""
    selected = ds.profile_selected(argv)
    if selected is None or selected not in case.profiles:
        return argv, {}, None
    try:
        spec = profiles_setup(ctx, use=CROSS_PROFILE)
    except NotApplicable as exc:
        return argv, {}, str(exc)
    names, at = configured_profiles(spec), case.profiles.index(selected)
    if at >= len(names):
        return argv, {}, (f"the release configures {len(names)} profile(s) ([profiles] selector "
                          f"{spec['selector']!r}); the case runs its profile number {at + 1} ({selected})")
    env, files = profiles_home(spec)
    mapped = [names[at] if a == selected and i and argv[i - 1] == "--profile" else
              f"--profile={names[at]}" if a == f"--profile={selected}" else a for i, a in enumerate(argv)]
    options: dict[str, Any] = {"env": dict(env), "files": dict(files)}
    if not spec.get("token"):  # the profile's own token (from its files), not the run's global one
        options["token"] = None
    return mapped, options, None
