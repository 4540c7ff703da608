"""The D1 §9.5 metrics (pytest_dws.verdict.metrics) against a recount over generated case results (hypothesis).

Why: MET-REPORT publishes the values; they are the suite's own arithmetic over typed per-case facts, so what
proves them is an independent recount over every shape of result, not a gate. The recount here is written from
the definitions (weights, what is left out, what a rate's pool is), and the properties D1 states are checked on
their own: a not-applicable case changes nothing; ``clean`` is over every judged case ("不能通过过滤真实失败直接
提升"), and a failing case added never raises it; every rate is its numerator over its denominator.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_dws.core.outcome import Judgement
from pytest_dws.inputs.datasets import CaseResult
from pytest_dws.inputs.datasets.cases import Case
from pytest_dws.verdict import metrics

CLASSES = ["clean", "request_contract_error", "agent_error", "infrastructure_error",
           "recovered_infrastructure_error", "safety_stop", "business_error"]
FLAG = st.one_of(st.none(), st.booleans())


@st.composite
def results(draw: Any) -> CaseResult:
    weight = draw(st.integers(min_value=1, max_value=40))
    backend_error = draw(st.sampled_from(["none", "PARAM_ERROR", "UNAVAILABLE"]))
    case = Case(id=f"c{draw(st.integers(0, 10**6))}", dataset="observed", pattern="p", group="g", doc="D1 §9",
                weight=weight, argv=(), world={}, overrides=(), expect={},
                dims={"backend_error": backend_error, "stage": draw(st.sampled_from(["before_call", "backend"]))},
                symbols={})
    flags = {k: draw(FLAG) for k in ("accepted_first_try", "target_ok", "class_ok", "reason_ok", "result_truthful",
                                     "trace_linked")}
    flags.update({k: draw(st.booleans()) for k in ("unexpected_contract_error", "false_success", "wrong_selection",
                                                   "wrong_write")})
    flags["duplicate_writes"] = draw(st.integers(0, 3))
    judgement = Judgement(draw(st.sampled_from(CLASSES)), {"business_calls": draw(st.integers(0, 5))})
    return CaseResult(case=case, argv=[], expect={"class": draw(st.sampled_from(CLASSES))}, judgement=judgement,
                      problems=draw(st.lists(st.just("differs"), max_size=1)), flags=flags,
                      not_applicable=draw(st.sampled_from([None, None, None, "needs plugins"])))


def _weight(rs: list[CaseResult]) -> int:
    return sum(r.case.weight for r in rs)


def _rate(pool: list[CaseResult], ok: list[CaseResult]) -> tuple[int, int]:
    return _weight(ok), _weight(pool)


def recount(rs_all: list[CaseResult]) -> dict[str, Any]:
    """Each metric of metrics.DEFINITIONS as its definition reads, over the judged (applicable) cases."""
    rs = [r for r in rs_all if r.not_applicable is None]
    k = {r.case.id: r.judgement.klass for r in rs}
    counts = {"request_contract_errors": "unexpected_contract_error", "false_success": "false_success",
              "wrong_selection": "wrong_selection", "wrong_writes": "wrong_write"}
    out: dict[str, Any] = {m: _weight([r for r in rs if r.flags[f]]) for m, f in counts.items()}
    out["duplicate_writes"] = sum(r.case.weight * r.flags["duplicate_writes"] for r in rs)
    out["unrecovered_infrastructure_errors"] = _weight([r for r in rs if k[r.case.id] == "infrastructure_error"])
    accepted_pool = [r for r in rs if r.expect["class"] not in ("request_contract_error", "agent_error")]
    out["canonical_hit_rate"] = _rate(accepted_pool, [r for r in accepted_pool if r.flags["accepted_first_try"]])
    for metric, flag in (("target_to_stable_id_success_rate", "target_ok"), ("result_truthfulness",
                                                                           "result_truthful"),
                         ("trace_id_linkability", "trace_linked")):
        pool = [r for r in rs if r.flags[flag] is not None]
        out[metric] = _rate(pool, [r for r in pool if r.flags[flag]])
    err = [r for r in rs if r.case.dims["backend_error"] != "none" and r.case.dims["stage"] != "before_call"
           and r.flags["class_ok"] is not None]
    out["classification_accuracy"] = _rate(err, [r for r in err if r.flags["class_ok"] and r.flags["reason_ok"]])
    out["infrastructure_failure_rate"] = _rate(rs, [r for r in rs if k[r.case.id] == "infrastructure_error"])
    infra = [r for r in rs if k[r.case.id] in ("infrastructure_error", "recovered_infrastructure_error")]
    out["recovered_rate"] = _rate(infra, [r for r in infra if k[r.case.id] == "recovered_infrastructure_error"])
    out["clean_rate"] = _rate(rs, [r for r in rs if k[r.case.id] == "clean"])
    return out


def _published(m: dict[str, Any], name: str) -> Any:
    v = m[name]
    return (v["numerator"], v["denominator"]) if "denominator" in v else v["value"]


@settings(max_examples=150, deadline=None)
@given(st.lists(results(), max_size=12, unique_by=lambda r: r.case.id))
def test_every_metric_is_its_definition_recounted(rs: list[CaseResult]) -> None:
    m = metrics.dataset_metrics(rs)
    assert {name: _published(m, name) for name in recount(rs)} == recount(rs)
    for name in recount(rs):
        v = m[name]
        if "denominator" in v:  # a rate: its value is what it says it was computed from, never 0 or 1 for nothing
            assert 0 <= v["numerator"] <= v["denominator"]
            assert v["value"] == (round(v["numerator"] / v["denominator"], 6) if v["denominator"] else None)


@settings(max_examples=100, deadline=None)
@given(st.lists(results(), max_size=10, unique_by=lambda r: r.case.id), results())
def test_clean_is_over_every_judged_case_and_a_failure_never_raises_it(rs: list[CaseResult],
                                                                       extra: CaseResult) -> None:
    """D1 §9.5: clean is secondary and "不能通过过滤真实失败直接提升"; a not-applicable case changes no metric."""
    judged = [r for r in rs if r.not_applicable is None]
    m = metrics.dataset_metrics(rs)
    assert m["clean_rate"]["denominator"] == _weight(judged)
    assert m["_cases"]["total"] == len(judged)
    with_extra = metrics.dataset_metrics([*rs, extra])
    if extra.not_applicable is not None:
        assert {k: v for k, v in with_extra.items() if k != "_cases"} == {k: v for k, v in m.items() if k != "_cases"}
    elif extra.judgement.klass != "clean" and m["clean_rate"]["value"] is not None:
        assert with_extra["clean_rate"]["value"] <= m["clean_rate"]["value"]


@settings(max_examples=60, deadline=None)
@given(st.lists(results(), max_size=8, unique_by=lambda r: r.case.id),
       st.lists(results(), max_size=8, unique_by=lambda r: r.case.id))
def test_the_all_table_is_the_datasets_together_and_clean_stays_apart(a: list[CaseResult],
                                                                      b: list[CaseResult]) -> None:
    section = metrics.compute({"observed": a, "holdout": b, "all": [*a, *b]})
    together = metrics.dataset_metrics([*a, *b])
    assert section["datasets"]["all"] == {k: together[k] for k in metrics.PRIMARY + metrics.RELIABILITY}
    assert "clean_rate" not in section["datasets"]["all"] and section["clean"]["all"]["clean_rate"] == \
        together["clean_rate"]
