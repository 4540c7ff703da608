"""DS: the datasets of D1 §9.2 run against the implementation (variant matrix, safety holdout).

The runs themselves, their knobs (variant examples, seed, dataset folder) and where the seed is reported are
:mod:`pytest_dws.observe.runtime.datasets`; they are computed once per session and shared by the DS, MET, REL and FIT
gates. This module only judges them.
"""

from __future__ import annotations

from pytest_dws.core.errors import NotApplicable, NotRecorded
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs import datasets as ds
from pytest_dws.inputs.profile import active_profile
from pytest_dws.observe.runtime.datasets import CROSS_PROFILE, replay, results, variant
from pytest_dws.observe.runtime.profiles import profiles_setup
from pytest_dws.registry import Access, gate
from pytest_dws.verdict import attribution
from pytest_dws.verdict.cases import collect


def judge_cases(ctx: GateContext, run: list[ds.CaseResult], what: str) -> None:
    """Every case had its expected outcome; each failing case is a case of the gate, attributed to the rule gate
    it breaks where every problem of it is one (pytest_dws.verdict.attribution): one root cause, one verdict."""
    bad = [r for r in run if not r.passed and not r.not_applicable]
    collect(attribution.case_checks(active_profile(ctx), bad),
            header=f"{what}: {len(bad)} of {len(run)} cases did not have their expected outcome ({replay(ctx)})")


@gate("DS-VARIANT-MATRIX", doc="D1 §9.2, §9.3", access={Access.MCP})
def variant_matrix(ctx: GateContext) -> None:
    """Every group-target shortcut passes the D1 §9.3 matrix with random names, CIDs, keywords and flag order."""
    run = variant(ctx)
    if run.coverage["missing"]:
        gaps = "; ".join(f"{cmd}: {gaps}" for cmd, gaps in run.coverage["missing"].items())
        raise AssertionError(f"variant matrix not covered ({replay(ctx)}): {gaps}")
    judge_cases(ctx, run.results, f"variant matrix ({run.covering} covering + {run.examples} random examples)")


@gate("DS-SAFETY-HOLDOUT", doc="D1 §9.2, §9.4, §10", access={Access.MCP})
def safety_holdout(ctx: GateContext) -> None:
    """Safety holdout: same-name groups, zero hits, unknown write state, mid-pagination failures; no wrong or
    duplicate write, no partial passed off as complete."""
    run = [r for r in results(ctx, "holdout") if r.case.requires is None]
    judge_cases(ctx, run, "safety holdout")


@gate("DS-SAFETY-HOLDOUT", doc="D1 §9.2 (跨 profile ID)", access={Access.MCP}, part="cross-profile")
def safety_holdout_cross_profile(ctx: GateContext) -> None:
    """Cross-profile IDs never succeed silently (on the profiles the release's expectations configure, [profiles]).

    The case runs its file's second profile as the second one ``[profiles] selector`` names, installed as
    ERR-JSON-CONSISTENT[multi-profile] installs them; not applicable without ``[profiles]`` or ``--profile``."""
    run = [r for r in results(ctx, "holdout") if r.case.requires == "multi_profile"]
    if not run:
        raise NotApplicable("the holdout has no cross-profile case", wants="a cross-profile holdout case")
    profiles_setup(ctx, use=CROSS_PROFILE)  # not applicable, naming [profiles], where the release has none
    if all(not r.recorded for r in run):
        raise NotRecorded(run[0].not_applicable or "not recorded")
    if all(r.not_applicable for r in run):
        raise NotApplicable(run[0].not_applicable or "multi-profile not supported",
                            wants="an implementation with --profile")
    judge_cases(ctx, run, "safety holdout (cross-profile IDs)")
