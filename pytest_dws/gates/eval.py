"""EVAL: an agent's runs judged (D1 §8.4, §9, §10), not the suite's own calls.

The runs (``--dws-agent CMD`` on every case of the three layers, ``--dws-repeats`` times, or the runs of a
``--dws-trajectories`` file), the fixture checks and the judge are :mod:`pytest_dws.observe.evaluation` and
:mod:`pytest_dws.verdict.evaluation`; the metrics :mod:`pytest_dws.verdict.evalmetrics`. This module only judges.
A layer gate judges each case (its subjects) over every repeat; EVAL-METRICS every metric against its threshold,
named by D1 §10 dimension; EVAL-FIXTURES keeps the fixture's failures apart from the agent's.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import Access, GateContext
from pytest_dws.observe import evaluation as ev
from pytest_dws.registry import gate


def _cases(layer: str) -> Callable[[GateContext], list[str]]:
    """The subjects of a layer gate: the ids of the layer's cases that were run."""

    def subjects(ctx: GateContext) -> list[str]:
        runs = ev.judged(ctx)[layer]
        if not runs:
            raise NotApplicable(f"no {layer} case was run (--dws-subject, or the trajectories file holds none)",
                                wants=f"a {layer} case")
        return sorted({r.case.id for r in runs})

    return subjects


def _judge_case(ctx: GateContext, layer: str, case_id: str) -> None:
    runs = [r for r in ev.judged(ctx)[layer] if r.case.id == case_id]
    bad = [r for r in runs if not r.passed]
    if bad:
        lines = [f"run {r.trajectory.repeat}: " + "; ".join(r.problems) for r in bad[:5]]
        raise AssertionError(f"{len(bad)} of {len(runs)} runs without the expected end state "
                             f"({ev.evaluation(ctx).source}):\n" + "\n".join(lines))


@gate("EVAL-OBSERVED", doc="D1 §9.2, §9.4 (observed 31×5 回放)", access={Access.AGENT}, subjects=_cases("observed"))
def observed(ctx: GateContext, subject: str) -> None:
    """Every run of a replayed case of D1's 31 reaches its expected end state: the answer claims the expected status,
    each expected write exists exactly once, no other target is touched, the decisive call has its class."""
    _judge_case(ctx, "observed", subject)


@gate("EVAL-VARIANT", doc="D1 §9.2, §9.3 (variant)", access={Access.AGENT}, subjects=_cases("variant"))
def variant(ctx: GateContext, subject: str) -> None:
    """Every run of a generated variant case (random names, CIDs, keywords) reaches its expected end state."""
    _judge_case(ctx, "variant", subject)


@gate("EVAL-HOLDOUT", doc="D1 §9.2, §9.4, §10 (safety holdout)", access={Access.AGENT}, subjects=_cases("holdout"))
def holdout(ctx: GateContext, subject: str) -> None:
    """Every run of a safety-holdout case (namesakes, zero hits, a foreign ID, unknown write state, a failing later
    page) stops or fails as expected: no guessed target, no second write, partial never claimed complete."""
    _judge_case(ctx, "holdout", subject)


@gate("EVAL-METRICS", doc="D1 §9.5, §10 (clean、业务正确性、安全停机和基础设施可靠性)", access={Access.AGENT})
def metrics(ctx: GateContext) -> None:
    """Every D1 §9.5 metric of the agent's runs, per layer, meets its threshold; a failure names the D1 §10 dimension
    and the metric it breaks."""
    sec = ev.report(ctx)
    ctx.section("evaluation", sec)
    broken = [b for name, layer in sec["layers"].items() if name != "all" for b in layer["broken"]]
    if broken:
        lines = [f"{b['dimension']}: {b['metric']} = {b['value']} in {b['layer']} "
                 f"({'max' if 'max' in b else 'min'} {b.get('max', b.get('min'))}; {b.get('doc', '')})"
                 for b in broken]
        raise AssertionError(f"{len(broken)} metric(s) of the agent's runs break their threshold "
                             f"({sec['source']}):\n" + "\n".join(lines))


@gate("EVAL-FIXTURES", doc="D1 §6, §8.4 (夹具唯一, 审计记录不注入 Prompt)", access={Access.AGENT})
def fixtures(ctx: GateContext) -> None:
    """Every case got an accepted run: a fixture whose names were not unique was isolated and rerun (counted apart,
    never on the agent), and no isolated stable ID reached the prompt."""
    sec = ev.report(ctx)
    fx = sec["fixture"]
    problems = []
    if fx["not_accepted"]:
        problems.append(f"{len(fx['not_accepted'])} runs never got an accepted fixture after "
                        f"{ev.FIXTURE_ATTEMPTS} attempts: {', '.join(fx['not_accepted'][:8])}")
    leaked = [f"{a['case']}#{a['repeat']}" for a in fx["audit"] if a.get("in_prompt")]
    if leaked:
        problems.append(f"the fixture audit's stable IDs reached the prompt of {', '.join(leaked[:8])}")
    if problems:
        raise AssertionError("\n".join(problems))
