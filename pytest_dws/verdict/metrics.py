"""The metrics of D1 §9.5, computed from judged dataset runs, each published with its definition.

D1 insists that a release is not judged on one mixed score: contract errors, target resolution, safety
(false success, wrong / duplicate writes), classification accuracy and result truthfulness are primary;
infrastructure reliability is its own layer; ``clean`` is secondary and shown apart, never folded into the
others. Every value is weighted by the case weight (the observed dataset carries D1's counts: 37, 17, ...),
and comes with the numerator and denominator it was computed from.

Example::

    from pytest_dws.verdict.metrics import compute
    section = compute({"observed": observed_results, "holdout": holdout_results})
    section["datasets"]["observed"]["wrong_writes"]["value"]   # 0
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.datasets import CaseResult

#: name -> (layer, definition). Layers: primary, reliability, secondary (D1 §9.5).
DEFINITIONS: dict[str, tuple[str, str]] = {
    "request_contract_errors": ("primary", "Weighted count of cases judged request_contract_error although the "
                                "expected outcome is another class: deterministic request-contract errors "
                                "(D1 §9.5 请求合同错误数; D1 §10: zero on observed)."),
    "canonical_hit_rate": ("primary", "Share of cases whose command path and flags were accepted on the first "
                           "try (no unknown_command / unknown_flag / flag or parameter conflict), over cases "
                           "expected to be accepted, i.e. not expected to be a request-contract or agent error "
                           "(D1 §9.5 首次 canonical 命令/flag 命中率)."),
    "target_to_stable_id_success_rate": ("primary", "Share of cases with a resolvable target (unique or fuzzy "
                                         "name, or a CID) whose first invocation reached the business call "
                                         "with exactly that stable ID and no name in an ID parameter "
                                         "(D1 §9.5 自然目标到稳定 ID 的一次成功率)."),
    "false_success": ("primary", "Weighted count of cases that exited 0 or claimed complete although the "
                      "expected outcome is a failure, a safety stop or a partial result (D1 §9.4, §9.5)."),
    "wrong_selection": ("primary", "Weighted count of cases whose business calls targeted a stable ID other "
                        "than the expected one (any target when a stop was expected) (D1 §10 误选)."),
    "wrong_writes": ("primary", "Weighted count of cases with a write to an unexpected target, or any write "
                     "when none was expected (D1 §10 误写)."),
    "duplicate_writes": ("primary", "Weighted number of repeated identical write calls (automatic retries of "
                         "writes included) (D1 §3.2, §10 重复写)."),
    "classification_accuracy": ("primary", "Over the ERR matrix (cases with an injected backend error that "
                                "reaches the backend): share judged with the expected class and, where "
                                "pinned, the expected reason (D1 §9.5 错误分类准确率)."),
    "result_truthfulness": ("primary", "Over cases whose expectation pins the result as complete or partial: "
                            "share whose output completeness (complete / partial / failedCount) tells the "
                            "truth (D1 §9.5 complete/partial 真实性)."),
    "infrastructure_failure_rate": ("reliability", "Share of cases judged infrastructure_error (not "
                                    "recovered) (D1 §9.5 MCP/网关基础设施失败率)."),
    "unrecovered_infrastructure_errors": ("reliability", "Weighted count of cases judged infrastructure_error "
                                          "(D1 §9.5 未恢复 infrastructure error 数)."),
    "recovered_rate": ("reliability", "recovered_infrastructure_error / (recovered + unrecovered "
                       "infrastructure errors) (D1 §9.5 安全自动重试恢复率)."),
    "trace_id_linkability": ("reliability", "Over cases whose injected failure carried a trace ID: share whose "
                             "error JSON carries the same trace_id (D1 §9.5 trace ID 可关联率)."),
    "clean_rate": ("secondary", "Share of cases judged clean. Shown apart; never a substitute for the primary "
                   "metrics (D1 §9.5 clean run 比例)."),
    "business_calls_per_case": ("secondary", "Mean number of business tool calls per case (D1 §9.5 每 case "
                                "业务 CLI 次数)."),
}
PRIMARY = [k for k, (layer, _) in DEFINITIONS.items() if layer == "primary"]
RELIABILITY = [k for k, (layer, _) in DEFINITIONS.items() if layer == "reliability"]
#: Judge rules meaning "this outcome could not be read from typed fields" (MET-REPORT fails on them).
UNCLASSIFIABLE_RULES = frozenset({"no-error-envelope", "unknown-error-shape", "no-exit"})
FAILURES_SHOWN = 50


def _count(results: list[CaseResult], pred: Callable[[CaseResult], bool]) -> dict[str, Any]:
    hits = [r for r in results if pred(r)]
    return {"value": sum(r.case.weight for r in hits), "cases": len(hits)}


def ratio(num: int, den: int) -> dict[str, Any]:
    """A rate with what it was computed from; ``None`` when nothing was measured (never 0 or 1). The one shape of
    a rate in the report (the dataset metrics here, the agent evaluation's in :mod:`.evalmetrics`)."""
    return {"value": round(num / den, 6) if den else None, "numerator": num, "denominator": den}


def _rate(results: list[CaseResult], among: Callable[[CaseResult], bool], ok: Callable[[CaseResult], bool]
          ) -> dict[str, Any]:
    pool = [r for r in results if among(r)]
    return {**ratio(sum(r.case.weight for r in pool if ok(r)), sum(r.case.weight for r in pool)), "cases": len(pool)}


def _err_matrix(r: CaseResult) -> bool:
    d = r.case.dims
    return d.get("backend_error") not in (None, "none") and d.get("stage") != "before_call"


def dataset_metrics(results: Iterable[CaseResult]) -> dict[str, Any]:
    """Every metric of :data:`DEFINITIONS` over one dataset's results (not-applicable cases left out)."""
    rs = [r for r in results if not r.not_applicable]
    klass = lambda r: r.judgement.klass  # noqa: E731 - tiny accessor used throughout
    infra = lambda r: klass(r) == "infrastructure_error"  # noqa: E731
    recovered = lambda r: klass(r) == "recovered_infrastructure_error"  # noqa: E731
    expected = lambda r: r.expect.get("class")  # noqa: E731
    out: dict[str, Any] = {
        "request_contract_errors": _count(rs, lambda r: bool(r.flags.get("unexpected_contract_error"))),
        "canonical_hit_rate": _rate(rs, lambda r: expected(r) not in ("request_contract_error", "agent_error"),
                                    lambda r: bool(r.flags.get("accepted_first_try"))),
        "target_to_stable_id_success_rate": _rate(rs, lambda r: r.flags.get("target_ok") is not None,
                                                  lambda r: bool(r.flags.get("target_ok"))),
        "false_success": _count(rs, lambda r: bool(r.flags.get("false_success"))),
        "wrong_selection": _count(rs, lambda r: bool(r.flags.get("wrong_selection"))),
        "wrong_writes": _count(rs, lambda r: bool(r.flags.get("wrong_write"))),
        "duplicate_writes": {"value": sum(r.case.weight * int(r.flags.get("duplicate_writes", 0)) for r in rs),
                             "cases": sum(1 for r in rs if r.flags.get("duplicate_writes"))},
        "classification_accuracy": _rate(rs, lambda r: _err_matrix(r) and r.flags.get("class_ok") is not None,
                                         lambda r: bool(r.flags.get("class_ok") and r.flags.get("reason_ok"))),
        "result_truthfulness": _rate(rs, lambda r: r.flags.get("result_truthful") is not None,
                                     lambda r: bool(r.flags.get("result_truthful"))),
        "infrastructure_failure_rate": _rate(rs, lambda r: True, infra),
        "unrecovered_infrastructure_errors": _count(rs, infra),
        "recovered_rate": _rate(rs, lambda r: infra(r) or recovered(r), recovered),
        "trace_id_linkability": _rate(rs, lambda r: r.flags.get("trace_linked") is not None,
                                      lambda r: bool(r.flags.get("trace_linked"))),
        "clean_rate": _rate(rs, lambda r: True, lambda r: klass(r) == "clean"),
        "business_calls_per_case": {"value": round(sum(int(r.judgement.evidence.get("business_calls") or 0)
                                                       for r in rs) / len(rs), 6) if rs else None,
                                    "cases": len(rs)},
    }
    out["_classes"] = dict(sorted(Counter(klass(r) for r in rs).items()))
    out["_cases"] = {"total": len(rs), "passed": sum(1 for r in rs if r.passed),
                     "weight": sum(r.case.weight for r in rs),
                     "not_applicable": sum(1 for r in results if r.not_applicable)}
    return out


def compute(datasets: Mapping[str, list[CaseResult]], **extra: Any) -> dict[str, Any]:
    """The ``metrics`` report section: definitions, per-dataset primary / reliability metrics, ``clean`` kept
    in its own table, the judged class counts, and the failing cases (first 50 per dataset)."""
    per = {name: dataset_metrics(results) for name, results in datasets.items()}
    section: dict[str, Any] = {
        "definitions": {k: {"layer": layer, "definition": text} for k, (layer, text) in DEFINITIONS.items()},
        "datasets": {}, "clean": {}, "classes": {}, "cases": {}, "failures": {},
    }
    for name, m in per.items():
        section["datasets"][name] = {k: m[k] for k in PRIMARY + RELIABILITY}
        section["clean"][name] = {k: m[k] for k in ("clean_rate", "business_calls_per_case")}
        section["classes"][name] = m["_classes"]
        section["cases"][name] = m["_cases"]
    for name, results in datasets.items():
        if name != "all":
            bad = [r.to_dict() for r in results if not r.passed and not r.not_applicable]
            section["failures"][name] = bad[:FAILURES_SHOWN]
    section.update(extra)
    return section


def unclassifiable(results: Iterable[CaseResult]) -> list[CaseResult]:
    """Results whose outcome the judge could not read from typed fields."""
    return [r for r in results if r.judgement.evidence.get("rule") in UNCLASSIFIABLE_RULES]


def publish(ctx: GateContext, name: str, payload: dict[str, Any]) -> None:
    """Put a top-level section into the JSON report (and, for ``metrics``, the terminal summary)."""
    ctx.section(name, payload)


def summary_lines(section: Mapping[str, Any]) -> list[str]:
    """Terminal lines of the metrics section: primary, reliability, then clean apart."""
    lines = []
    for name, m in section.get("datasets", {}).items():
        shown = ", ".join(f"{k}={fmt(v)}" for k, v in m.items())
        lines.append(f"{name}: {shown}")
    for name, m in section.get("clean", {}).items():
        lines.append(f"{name} (secondary, not folded in): " + ", ".join(f"{k}={fmt(v)}" for k, v in m.items()))
    return lines


def fmt(metric: Mapping[str, Any]) -> str:
    """A metric as shown (terminal, Markdown, the evaluation page): ``n/a``, ``0.020 (1/74)``, ``3``, ``1.5``."""
    value = metric.get("value")
    if value is None:
        return "n/a"
    if "denominator" in metric:  # whole numbers of calls (D1 case weights): 0.020 (1/74)
        return f"{value:.3f} ({metric['numerator']}/{metric['denominator']})"
    return f"{value:g}" if isinstance(value, float) else str(value)
