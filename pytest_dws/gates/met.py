"""MET: the D1 §9.5 metrics of the three datasets, published as the ``metrics`` section of the JSON report.

The gate fails when the metrics cannot be trusted: an outcome the judge could not read from typed fields
(no JSON error envelope, no exit), or a primary metric that no case measures.
"""

from __future__ import annotations

from typing import Any

from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.runtime import datasets as ds
from pytest_dws.registry import Access, gate
from pytest_dws.verdict import metrics


def section(ctx: GateContext) -> dict[str, Any]:
    """The metrics section over observed, variant and holdout (and all of them together)."""
    def build() -> dict[str, Any]:
        runs = {"observed": ds.results(ctx, "observed"), "variant": ds.variant(ctx).results,
                "holdout": ds.results(ctx, "holdout")}
        runs["all"] = [r for rs in runs.values() for r in rs]
        v = ds.variant(ctx)
        return metrics.compute(runs, seed=v.seed, variant_examples=v.examples, variant_covering=v.covering,
                               replay=ds.replay(ctx))

    return ctx.memo(("met", "section"), build)


@gate("MET-REPORT", doc="D1 §9.5, §10", access={Access.MCP})
def metrics_report(ctx: GateContext) -> None:
    """The report gives every D1 §9.5 metric with its definition, reliability apart, `clean` shown separately."""
    sec = section(ctx)
    metrics.publish(ctx, "metrics", sec)
    runs = [r for name in ("observed", "holdout") for r in ds.results(ctx, name)] + ds.variant(ctx).results
    bad = metrics.unclassifiable(runs)
    problems = [f"{len(bad)} outcomes could not be classified from typed fields ({ds.replay(ctx)}): "
                + "; ".join(f"{r.case.id} [{r.judgement.evidence.get('rule')}, exit "
                            f"{r.judgement.evidence.get('exit_code')}]" for r in bad[:8])] if bad else []
    unmeasured = [k for k in metrics.PRIMARY + metrics.RELIABILITY
                  if sec["datasets"]["all"][k].get("value") is None]
    if unmeasured:
        problems.append(f"metrics no case measures: {', '.join(unmeasured)}")
    if problems:
        raise AssertionError("\n".join(problems))
