"""DS: the datasets of D1 §9.2 run against the implementation (variant matrix, safety holdout).

The dataset runs are shared by the DS, MET, REL and FIT gates (computed once per session via ``ctx.memo``):
observed and holdout with their files' synthetic values, the same two re-run with random values, and the
variant matrix (a covering set plus hypothesis examples). Knobs, read from the option, else the environment,
else the expectations file's ``[datasets]`` table:

- ``--dws-variant-examples`` / ``DWS_VARIANT_EXAMPLES`` / ``variant_examples`` (default 50): hypothesis examples
  on top of the covering set;
- ``--dws-seed`` / ``DWS_VARIANT_SEED`` / ``seed`` (default: random, printed): replays exactly the same names,
  IDs and points;
- ``root`` / ``DWS_DATASETS_DIR``: another folder of dataset files.

The seed and the variant case count are run facts, not release counts: they go to the ``datasets`` section of
the JSON report (``ctx.section``), never to the "observed counts, ready to pin" list; the seed is also named in
every failure message (``replay``).
"""

from __future__ import annotations

import hashlib
import os
import random
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_dws import attribution
from pytest_dws import datasets as ds
from pytest_dws.cases import collect
from pytest_dws.errors import NotApplicable
from pytest_dws.gates._d1 import require_profile
from pytest_dws.profile import active_profile
from pytest_dws.registry import Access, gate

DEFAULT_EXAMPLES = 50


def knob(ctx: Any, env: str, key: str, default: int) -> int:
    """A non-negative integer knob: option, else env var, else ``[datasets]`` of the expectations file."""
    option = getattr(ctx.settings, key, None)
    if option is not None:
        return int(option)
    raw = os.environ.get(env)
    if raw is None:
        raw = ctx.expect.section("datasets").get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise NotApplicable(f"{env} / [datasets].{key} must be an integer, got {raw!r}") from None
    if value < 0:
        raise NotApplicable(f"{env} / [datasets].{key} must be >= 0, got {raw!r}")
    return value


def seed(ctx: Any) -> int:
    """The session's dataset seed (the report's ``datasets`` section, and every failure message)."""
    def build() -> int:
        value = knob(ctx, "DWS_VARIANT_SEED", "seed", -1)
        if value < 0:  # one random seed per run; xdist workers share it through the run's uid
            uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
            value = int(hashlib.sha256(uid.encode()).hexdigest()[:8], 16) if uid else secrets.randbelow(2**32)
        ctx.section("datasets", {"seed": value, "replay": f"--dws-seed {value}"})
        return value

    return ctx.memo(("ds", "seed"), build)


def replay(ctx: Any) -> str:
    return f"replay with --dws-seed {seed(ctx)}"


def root(ctx: Any) -> Path:
    """The dataset folder; not applicable (never a silent pass) when it is not there."""
    value = os.environ.get("DWS_DATASETS_DIR") or ctx.expect.section("datasets").get("root")
    path = Path(value) if value else ds.default_root()
    if not path.is_dir():
        raise NotApplicable(f"no dataset files at {path} (set DWS_DATASETS_DIR or [datasets].root)")
    return path


def results(ctx: Any, name: str) -> list[ds.CaseResult]:
    """observed / holdout run with the files' own synthetic values."""
    ctx.require(Access.MCP)
    require_profile(ctx)
    return ctx.memo(("ds", name), lambda: ds.run_cases(ctx, ds.load_dataset(name, root(ctx))))


def randomised(ctx: Any, name: str) -> list[ds.CaseResult]:
    """observed / holdout re-run with fresh random names, CIDs, keywords and trace IDs (FIT-NO-OVERFIT)."""
    ctx.require(Access.MCP)
    require_profile(ctx)

    def build() -> list[ds.CaseResult]:
        rng = random.Random(f"{seed(ctx)}:{name}")
        return ds.run_cases(ctx, [c.randomised(rng) for c in ds.load_dataset(name, root(ctx))])

    return ctx.memo(("ds", name, "randomised"), build)


@dataclass
class VariantRun:
    results: list[ds.CaseResult]
    coverage: dict[str, Any]
    seed: int
    examples: int
    covering: int


def variant(ctx: Any) -> VariantRun:
    """The covering set of the D1 §9.3 matrix plus ``variant_examples`` hypothesis examples."""
    ctx.require(Access.MCP)
    require_profile(ctx)

    def build() -> VariantRun:
        matrix = ds.Matrix.load(root(ctx))
        n, s = knob(ctx, "DWS_VARIANT_EXAMPLES", "variant_examples", DEFAULT_EXAMPLES), seed(ctx)
        rng = random.Random(s)
        keys = {k: "" for k in matrix.data["symbols"]}
        cover = [ds.build_case(matrix, p, ds.random_symbols(keys, rng)) for p in ds.covering_points(matrix)]
        cases = cover + (ds.generate_variants(matrix, n, s) if n else [])
        run = ds.run_cases(ctx, cases)
        ctx.section("datasets", {"variant_cases": len(run), "variant_covering": len(cover), "variant_examples": n})
        return VariantRun(run, ds.coverage(run, matrix), s, n, len(cover))

    return ctx.memo(("ds", "variant"), build)


def judge_cases(ctx: Any, run: list[ds.CaseResult], what: str) -> None:
    """Every case had its expected outcome; each failing case is a case of the gate, attributed to the rule gate
    it breaks where every problem of it is one (pytest_dws.attribution): one root cause, one verdict."""
    bad = [r for r in run if not r.passed and not r.not_applicable]
    collect(attribution.case_checks(active_profile(ctx), bad),
            header=f"{what}: {len(bad)} of {len(run)} cases did not have their expected outcome ({replay(ctx)})")


@gate("DS-VARIANT-MATRIX", doc="D1 §9.2, §9.3", access={Access.MCP})
def variant_matrix(ctx: Any) -> None:
    """Every group-target shortcut passes the D1 §9.3 matrix with random names, CIDs, keywords and flag order."""
    run = variant(ctx)
    if run.coverage["missing"]:
        gaps = "; ".join(f"{cmd}: {gaps}" for cmd, gaps in run.coverage["missing"].items())
        raise AssertionError(f"variant matrix not covered ({replay(ctx)}): {gaps}")
    judge_cases(ctx, run.results, f"variant matrix ({run.covering} covering + {run.examples} random examples)")


@gate("DS-SAFETY-HOLDOUT", doc="D1 §9.2, §9.4, §10", access={Access.MCP})
def safety_holdout(ctx: Any) -> None:
    """Safety holdout: same-name groups, zero hits, unknown write state, mid-pagination failures; no wrong or
    duplicate write, no partial passed off as complete."""
    run = [r for r in results(ctx, "holdout") if r.case.requires is None]
    judge_cases(ctx, run, "safety holdout")


@gate("DS-SAFETY-HOLDOUT", doc="D1 §9.2 (跨 profile ID)", access={Access.MCP}, part="cross-profile")
def safety_holdout_cross_profile(ctx: Any) -> None:
    """Cross-profile IDs never succeed silently (optional: needs a --profile capable implementation)."""
    run = [r for r in results(ctx, "holdout") if r.case.requires == "multi_profile"]
    if not run:
        raise NotApplicable("the holdout has no cross-profile case")
    if all(r.not_applicable for r in run):
        raise NotApplicable(run[0].not_applicable or "multi-profile not supported")
    judge_cases(ctx, run, "safety holdout (cross-profile IDs)")
