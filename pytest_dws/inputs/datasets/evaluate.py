"""Running cases against the implementation and judging each outcome
(pytest_dws.core.outcome) against its expectation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_dws.core.outcome import FAILURE_CLASSES, Judgement
from pytest_dws.inputs.datasets.cases import Case


# -- evaluation -------------------------------------------------------------------------------------------
@dataclass
class CaseResult:
    """A case run and judged: the verdict, what differed from the expectation, and the metric flags."""

    case: Case
    argv: list[str]
    expect: dict[str, Any]
    judgement: Judgement
    problems: list[str] = field(default_factory=list)
    flags: dict[str, Any] = field(default_factory=dict)
    not_applicable: str | None = None  # the case needs a capability the implementation lacks (reason)
    recorded: bool = True  # False: a replayed recording lacks its invocation (not applicable until the next one)

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.case.id, "argv": self.argv, "expected": self.expect.get("class"),
                "judged": self.judgement.klass, "rule": self.judgement.evidence.get("rule"),
                "problems": self.problems, "weight": self.case.weight, "not_applicable": self.not_applicable}


def evaluate(case: Case, argv: list[str], expect: dict[str, Any], judgement: Judgement,
             calls: list[dict[str, Any]] | None = None) -> CaseResult:
    """Compare one judgement with the case's expectation; every mismatch is one typed problem line.

    ``calls`` are the recorded tool calls (dicts with ``tool`` and ``arguments``), needed by ``expect.call``.
    ``expect.or``: alternative outcomes that conform as well (each a partial expectation laid over the main
    one), e.g. a read whose transient failure may be retried once or surfaced (D1 §3.2 "最多…重试一次").
    """
    main = _evaluate(case, argv, {k: v for k, v in expect.items() if k != "or"}, judgement, calls)
    if main.passed:
        return main
    for alt in expect.get("or") or []:
        base = {k: v for k, v in expect.items() if k not in ("or", *alt)}
        other = _evaluate(case, argv, {**base, **{k: v for k, v in alt.items() if v is not None}}, judgement, calls)
        if other.passed:
            return other
    return main


def _evaluate(case: Case, argv: list[str], expect: dict[str, Any], judgement: Judgement,
              calls: list[dict[str, Any]] | None = None) -> CaseResult:
    ev, want = judgement.evidence, expect
    problems: list[str] = []

    def check(name: str, actual: Any) -> None:
        if name in want and want[name] != actual:
            problems.append(f"{name}: expected {want[name]!r}, got {actual!r}")

    # A partial result whose failure entries carry no reason: its class is not observable from typed fields
    # (e81's page ledger records {stage, cursor, error}); the partial itself is judged below ("result").
    untyped_partial = want.get("result") == "partial" and ev.get("rule") == "partial-result" \
        and not ev.get("failure_reasons")
    if ev.get("rule") == "no-exit":  # timed out, crashed or flooded: no class of its own can be read (issue 28)
        problems.append("the implementation did not exit by itself (timed out, crashed or flooded its output)")
    elif judgement.klass != want["class"] and not untyped_partial:
        problems.append(f"class: expected {want['class']}, judged {judgement.klass} ({ev.get('rule')})")
    for name in ("reason", "stage", "origin", "trace_id"):
        check(name, ev.get(name))
    for name in ("business_calls", "search_calls", "writes", "exit_code"):
        check(name, ev.get(name))
    if "misleading_recovery" in want and bool(ev.get("misleading_recovery")) != want["misleading_recovery"]:
        problems.append(f"misleading_recovery: expected {want['misleading_recovery']}, "
                        f"got {bool(ev.get('misleading_recovery'))}")
    target = want.get("target")
    allowed = {target} if target else set()
    wrong_selection = sorted(set(ev.get("targets", [])) - allowed)
    wrong_writes = sorted(set(ev.get("write_targets", [])) - allowed)
    if "writes" in want and want["writes"] == 0 and ev.get("writes"):
        wrong_writes = wrong_writes or ["<write despite expected none>"]
    if wrong_selection:
        problems.append(f"wrong selection: business calls targeted {wrong_selection}, expected {target!r}")
    if target and judgement.klass == "clean" and target not in ev.get("targets", []):
        problems.append(f"target: {target!r} never reached a business call")
    for name in ("names_in_id", "cids_searched"):
        if ev.get(name):
            problems.append(f"{name}: {ev[name]}")
    if ev.get("duplicate_writes"):
        problems.append(f"duplicate writes: {ev['duplicate_writes']}")
    result_ok = _result_truthful(want.get("result"), ev)
    if result_ok is False:
        problems.append(f"result: expected {want['result']}, output complete={ev.get('complete')!r} "
                        f"failedCount={ev.get('failedCount')!r}")
    problems += _call_problems(want.get("call"), calls or [])
    expected_ok = want["class"] in ("clean", "recovered_infrastructure_error") or want.get("result") == "partial"
    false_success = bool(ev.get("false_success")) or (
        judgement.evidence.get("exit_code") == 0 and not expected_ok) or (
        want.get("result") == "partial" and ev.get("complete") is True)
    if false_success and not any(p.startswith("class") for p in problems):
        problems.append("false success: exit 0 / complete although the expected outcome is a failure or stop")
    flags = {
        "wrong_selection": bool(wrong_selection), "wrong_write": bool(wrong_writes),
        "duplicate_writes": int(ev.get("duplicate_writes") or 0), "false_success": false_success,
        # None: not observable (an untyped partial), left out of the classification accuracy
        "class_ok": None if untyped_partial else judgement.klass == want["class"],
        "reason_ok": want.get("reason") in (None, ev.get("reason")),
        "result_truthful": result_ok, "trace_linked": None if "trace_id" not in want else
        ev.get("trace_id") == want["trace_id"],
        "target_ok": None if not target else (target in ev.get("targets", []) and not wrong_selection
                                              and not ev.get("names_in_id")),
        "unexpected_contract_error": judgement.klass == "request_contract_error" != want["class"],
        "accepted_first_try": ev.get("reason") not in ("unknown_flag", "unknown_command", "parameter_conflict",
                                                       "flag_conflict"),
        "failure": judgement.klass in FAILURE_CLASSES,
    }
    return CaseResult(case, argv, expect, judgement, problems, flags)


def _result_truthful(want: str | None, ev: dict[str, Any]) -> bool | None:
    if want == "complete":  # nothing failed; a single page may still say complete:false with hasMore
        return not ev.get("reported_failures")
    if want == "partial":
        return ev.get("complete") is False and bool(ev.get("reported_failures"))
    return None


def _call_problems(spec: dict[str, Any] | None, calls: list[dict[str, Any]]) -> list[str]:
    """``expect.call``: some recorded call of ``tool`` carries the given arguments (a subset)."""
    if not spec:
        return []
    for rec in calls:
        args = rec.get("arguments") or {}
        if rec.get("tool") == spec["tool"] and all(args.get(k) == v for k, v in spec.get("arguments", {}).items()):
            return []
    return [f"call: no {spec['tool']} call with arguments {spec.get('arguments', {})}"]


#: Optional capabilities a case may require, and how their absence shows (D1 §9.2: cross-profile IDs): an
#: implementation without --profile rejects the flag; one with it but without the named profile configured
#: (the release's expectations configure it through ``[profiles]``; without them the case is not applicable
#: before this) refuses before any request.
REQUIREMENTS = {"multi_profile": "the implementation has no --profile flag, or no second profile is configured "
                                 "for it (it refused --profile before any request: exit {exit}, reason {reason})"}


def unsupported(case: Case, result: CaseResult) -> str | None:
    """Why a case with ``requires`` does not apply to this implementation (None: it applies)."""
    if case.requires is None:
        return None
    if case.requires not in REQUIREMENTS:
        return f"unknown requirement {case.requires!r}"
    ev = result.judgement.evidence
    refused = ev.get("reason") == "unknown_flag" or (ev.get("exit_code") not in (0, None) and not ev.get("calls"))
    return REQUIREMENTS[case.requires].format(exit=ev.get("exit_code"), reason=ev.get("reason")) if refused else None
