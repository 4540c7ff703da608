"""Results and verdicts: truthful completeness flags (D1 §11.1), judged dataset cases (D1 §9), schema views
and regenerated files (D2 §4, §6)."""

from __future__ import annotations

from typing import Any

from pytest_dws.assertions.core import assert_equal
from pytest_dws.assertions.errors import ABSENT


def assert_complete_is_truthful(result: Any, *, complete: bool | None = None, what: str = "") -> None:
    """A paginated result's completeness flags agree with each other (and with ``complete`` when given):
    complete => not partial, hasMore false, failedCount 0, no failures; failedCount == len(failures);
    failures present => not complete.

    Example: ``assert_complete_is_truthful(inv.stdout_json, complete=False)`` after a page-2 failure.
    """
    __tracebackhide__ = True
    label = f"{what}: " if what else ""
    if not isinstance(result, dict):
        raise AssertionError(f"{label}no JSON result object on stdout (got {type(result).__name__})")
    problems = []
    flag = result.get("complete", ABSENT)
    if not isinstance(flag, bool):
        problems.append(f".complete = {flag!r} (expected true or false)")
    failures = result.get("failures", [])
    failed = result.get("failedCount", ABSENT)
    if failed is not ABSENT and isinstance(failures, list) and failed != len(failures):
        problems.append(f".failedCount = {failed!r} but {len(failures)} failure(s) listed")
    if flag is True:
        for key, bad in (("partial", True), ("hasMore", True)):
            if result.get(key) is bad:
                problems.append(f".complete is true but .{key} = {bad}")
        if failures or (isinstance(failed, int) and failed > 0):
            problems.append(f".complete is true but failures are reported (failedCount {failed!r})")
    if flag is False and result.get("partial") is False and (failures or result.get("failedCount")):
        problems.append(".partial is false although failures are reported")
    if complete is not None and flag is not complete:
        problems.append(f".complete = {flag!r}, expected {complete}")
    if problems:
        shown = {k: result.get(k) for k in ("complete", "partial", "hasMore", "failedCount", "failures",
                                             "stopReason", "pagesFetched") if k in result}
        raise AssertionError(f"{label}the result is not truthful about completeness: {'; '.join(problems)}\n"
                             f"  flags: {shown}")


#: ToolSpec.ToSummaryPayload (GATES.md SCHCLI-PROJECTION): a summary is the full leaf minus these keys.
SUMMARY_DROP_KEYS = frozenset({
    "parameters", "has_parameters", "parameter_count", "constraints", "positionals", "examples", "effect_source",
    "agent_source_refs", "field_provenance", "path", "source", "product_id", "display", "is_alias",
})


def assert_byte_identical_regeneration(expected: dict[str, bytes], actual: dict[str, bytes], what: str) -> None:
    """Two file maps are byte-identical: same relative paths, same bytes (first differing offset shown).

    Example: ``assert_byte_identical_regeneration(committed, regenerated, "regenerated catalog vs committed")``
    """
    __tracebackhide__ = True
    problems = [f"  only in the first: {p}" for p in sorted(set(expected) - set(actual))]
    problems += [f"  only in the second: {p}" for p in sorted(set(actual) - set(expected))]
    for path in sorted(set(expected) & set(actual)):
        a, b = expected[path], actual[path]
        if a != b:
            offset = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            line = a[:offset].count(b"\n") + 1
            problems.append(f"  differs: {path} (first difference at byte {offset}, line {line}; "
                            f"{len(a)} vs {len(b)} bytes)")
    if problems:
        more = f"\n  ... {len(problems) - 30} more" if len(problems) > 30 else ""
        raise AssertionError(f"{what}: {len(problems)} file difference(s):\n" + "\n".join(problems[:30]) + more)


def assert_summary_projects_leaf(summary: dict[str, Any], leaf: dict[str, Any], what: str) -> None:
    """A progressive summary equals its full leaf minus SUMMARY_DROP_KEYS (never assembled independently).

    Example: ``assert_summary_projects_leaf(product["tools"][0], full_leaf, "schema chat: chat.x")``
    """
    __tracebackhide__ = True
    expected = {k: v for k, v in leaf.items() if k not in SUMMARY_DROP_KEYS}
    assert_equal(expected, summary, f"{what}: the summary is not the projection of the full leaf (expected -> actual):")


def assert_judged(run: Any, klass: str, what: str = "") -> Any:
    """The judge puts this outcome in layer ``klass`` (D1 §6); returns the Judgement.

    Example: ``assert_judged(inv, "expected_resolution_stop")`` for a same-name group that must stop.
    """
    __tracebackhide__ = True
    from pytest_dws.core.outcome import Outcome, judge

    outcome = run if isinstance(run, Outcome) else Outcome.from_invocation(run)
    verdict = judge(outcome)
    if verdict.klass != klass:
        shown = {k: v for k, v in verdict.evidence.items() if v not in (None, [], 0, False) or k == "exit_code"}
        raise AssertionError(f"{what or 'outcome'}: judged {verdict.klass}, expected {klass}\n  evidence: {shown}")
    return verdict


def assert_cases_pass(results: list[Any], what: str, *, replay: str = "", limit: int = 12) -> None:
    """Every dataset case had its expected outcome; the message lists the failing cases with their problems.

    Example: ``assert_cases_pass(run_cases(ctx, load_dataset("holdout")), "safety holdout")``.
    """
    __tracebackhide__ = True
    bad = [r for r in results if not r.passed and not r.not_applicable]
    if not bad:
        return
    lines = [f"{what}: {len(bad)} of {len(results)} cases did not have their expected outcome"
             + (f" ({replay})" if replay else "")]
    for r in bad[:limit]:
        lines.append(f"  {r.case.id}: {'; '.join(r.problems)}")
        lines.append(f"      argv: {' '.join(r.argv)}")
    if len(bad) > limit:
        lines.append(f"  ... {len(bad) - limit} more")
    raise AssertionError("\n".join(lines))
