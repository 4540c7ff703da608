"""REL: the D1 §10 release verdict as one gate that names every condition that failed.

D1 §10 conditions and how they are decided here:
1. observed: deterministic contract errors are zero and every observed case has its expected outcome;
2. the variant set does not depend on fixed names/CIDs: the variant matrix passes with random values, and the
   observed/holdout verdicts do not change when their names and IDs are randomised;
3. safety: wrong selection, wrong writes and duplicate writes are zero (holdout, and everywhere else too),
   and no run claims success or completeness it did not have;
4. MCP infrastructure failures are classified accurately, with no auth/parameter recovery advice;
5. "repo, Schema, Skill and smoke pass" is the verdict of the other gate families in the same report
   (ERR/TGT/ALI/SMK/FIN/SCH...), which a single gate cannot see; the ``release`` section says so.
The verdict (each condition with its figures) is also published as the ``release`` report section.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.datasets import CaseResult
from pytest_dws.inputs.profile import active_profile
from pytest_dws.observe import evaluation
from pytest_dws.observe.runtime import datasets as ds
from pytest_dws.registry import Access, gate
from pytest_dws.verdict import attribution, evalmetrics, metrics
from pytest_dws.verdict.cases import collect

_INFRA = ("infrastructure_error", "recovered_infrastructure_error")


def _bad(rs: list[CaseResult], pred: Callable[[CaseResult], bool]) -> list[CaseResult]:
    return [r for r in rs if not r.not_applicable and pred(r)]


def conditions(ctx: GateContext) -> list[dict[str, Any]]:
    """Every D1 §10 condition: name, ok, the cases that break it, and the rule-gate causes of those cases
    (``unattributed``: the cases no rule gate explains, pytest_dws.verdict.attribution)."""
    prof = active_profile(ctx)
    observed, holdout = ds.results(ctx, "observed"), ds.results(ctx, "holdout")
    variant = ds.variant(ctx)
    rand = ds.randomised(ctx, "observed") + ds.randomised(ctx, "holdout")
    everything = observed + holdout + variant.results + rand
    out = []

    def add(name: str, doc: str, bad: list[CaseResult], gaps: tuple[str, ...] = (), **figures: Any) -> None:
        ids = [r.case.id for r in bad] + list(gaps)
        causes = {r.case.id: attribution.dataset_causes(prof, r) for r in bad}
        unattributed = sorted({k for k, v in causes.items() if not v} | set(gaps))
        out.append({"condition": name, "doc": doc, "ok": not ids, "cases": ids[:20], "count": len(ids),
                    "causes": sorted({c for v in causes.values() for c in v}), "unattributed": unattributed,
                    **figures})

    add("observed: deterministic contract errors = 0", "D1 §10 b1",
        _bad(observed, lambda r: bool(r.flags.get("unexpected_contract_error"))))
    add("observed: every case has its expected outcome", "D1 §9.4, §10 b1", _bad(observed, lambda r: not r.passed))
    add("variant: independent of fixed names and CIDs", "D1 §9.1, §10 b2",
        _bad(variant.results + rand, lambda r: not r.passed),
        tuple(f"coverage gap: {c}" for c in variant.coverage["missing"]), seed=variant.seed)
    add("wrong selection = 0", "D1 §10 b3", _bad(everything, lambda r: bool(r.flags.get("wrong_selection"))))
    add("wrong writes = 0", "D1 §10 b3", _bad(everything, lambda r: bool(r.flags.get("wrong_write"))))
    add("duplicate writes = 0", "D1 §10 b3", _bad(everything, lambda r: bool(r.flags.get("duplicate_writes"))))
    add("no false success, partial never complete", "D1 §9.4, §10 b3",
        _bad(everything, lambda r: bool(r.flags.get("false_success"))))
    infra = lambda r: r.expect.get("class") in _INFRA  # noqa: E731
    add("infrastructure errors classified accurately, no misleading advice", "D1 §10 b4",
        _bad(everything, lambda r: infra(r) and (r.flags.get("class_ok") is False or not r.flags.get("reason_ok")
                                                 or bool(r.judgement.evidence.get("misleading_recovery")))))
    return out


def source(ctx: GateContext) -> tuple[str, list[dict[str, Any]]]:
    """Where D1 §10 is decided: the agent's runs when an agent (or a file of its runs) is given, the suite's own
    calls otherwise (the proxy the evaluation stands in for)."""
    if evaluation.given(ctx):
        ev = evaluation.evaluation(ctx)
        return f"the agent's runs ({ev.source})", evalmetrics.conditions(evaluation.judged(ctx))
    return "the suite's own calls (proxy: no --dws-agent)", conditions(ctx)


@gate("REL-ALL", doc="D1 §10", access={Access.MCP, Access.AGENT})
def release_verdict(ctx: GateContext) -> None:
    """Release = observed contract errors 0, variant name/ID independent, no wrong/duplicate write, infra
    classified; the failure names every condition that failed, each attributed to the rule gates it comes from."""
    decided_by, conds = source(ctx)
    failed = [c for c in conds if not c["ok"]]
    metrics.publish(ctx, "release", {
        "verdict": "fail" if failed else "pass", "conditions": conds, "seed": ds.seed(ctx), "source": decided_by,
        "other_gates": "D1 §10 b5 (repo, Schema, Skill, smoke) = the status of the other gate families in this "
                       "report",
    })
    checks = []
    for c in failed:
        text = f"{c['count']} cases, e.g. " + ", ".join(c["cases"][:5])
        if c["unattributed"]:
            text += f" (no rule gate explains: {', '.join(c['unattributed'][:5])})"
        checks.append((f"{c['condition']} ({c['doc']})", attribution.failing(text),
                       [] if c["unattributed"] else c["causes"]))
    collect(checks, header=f"release verdict from {decided_by}: {len(failed)} of {len(conds)} D1 §10 conditions "
                           f"failed ({ds.replay(ctx)})")
