"""Results and verdicts: truthful completeness flags (D1 §11.1), judged dataset cases (D1 §9), schema views
and regenerated files (D2 §4, §6)."""

from __future__ import annotations

from typing import Any

from pytest_dws.assertions.core import assert_equal
from pytest_dws.assertions.errors import ABSENT


def assert_complete_is_truthful(result: Any, *, complete: bool | None = None, what: str = "") -> None:
    """A paginated result's ``complete`` (the flag D1 §9.5 / §11.3 name) is a bool that no other flag contradicts
    (and equals ``complete`` when given): complete => not partial, hasMore not true, no failure listed or counted.
    Other flags are judged only where they contradict ``complete`` (issue 35 rule 6): their presence, spelling
    and mutual bookkeeping are the implementation's.

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
    if flag is True:
        for key, bad in (("partial", True), ("hasMore", True)):
            if result.get(key) is bad:
                problems.append(f".complete is true but .{key} = {bad}")
        if (isinstance(failures, list) and failures) or (isinstance(failed, int) and failed > 0):
            problems.append(f".complete is true but failures are reported (failedCount {failed!r})")
    if complete is not None and flag is not complete:
        problems.append(f".complete = {flag!r}, expected {complete}")
    if problems:
        shown = {k: result.get(k) for k in ("complete", "partial", "hasMore", "failedCount", "failures",
                                             "stopReason", "pagesFetched") if k in result}
        raise AssertionError(f"{label}the result is not truthful about completeness: {'; '.join(problems)}\n"
                             f"  flags: {shown}")


def assert_not_claimed_complete(run: Any, what: str = "") -> None:
    """A read cut short (a later page failed, the page limit was reached, the cursor never ended) never poses as a
    full result (D1 §9.4 "partial 冒充 complete 则判优化失败", §9.5, §11.1): exit 0 only with ``complete: false``
    (a partial result), and never ``complete: true`` on any exit.

    Example: ``assert_not_claimed_complete(dws_run("chat", "+chat-members-list", "--group", cid, "--page-limit",
    "1"))`` in a world of one member per page.
    """
    __tracebackhide__ = True
    from pytest_dws.assertions.core import context_of, facts_of
    from pytest_dws.core.errors import Finding

    out = getattr(run, "stdout_json", None)
    flag = out.get("complete", ABSENT) if isinstance(out, dict) else ABSENT
    if run.exit_code == 0 and flag is not False:
        raise Finding(f"{what + ': ' if what else ''}exit 0 with .complete = {flag!r}: a result cut short must say "
                      f"complete:false{context_of(run)}", **facts_of(run), breach="claimed-complete")
    if flag is True:
        raise Finding(f"{what + ': ' if what else ''}exit {run.exit_code} with .complete = true although the read "
                      f"was cut short{context_of(run)}", **facts_of(run), breach="claimed-complete")


#: What every summary carries of its leaf (where the leaf has it): D2 §4's identity (a stable canonical path, the
#: primary CLI path) and safety (effect, risk, confirmation, idempotency). Which other leaf keys a summary drops is
#: the implementation's choice (issue 35 rule 5; e81's ToolSpec.ToSummaryPayload drops parameters, examples,
#: provenance ... ; cf drops interface_ref too).
SUMMARY_KEEP_KEYS = (("canonical_path",), ("primary_cli_path", "cli_path"), ("effect",), ("risk",),
                     ("confirmation",), ("idempotency",))


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
    """A progressive summary is a projection of its full leaf (never assembled independently): every key it carries
    is a key of the leaf with the leaf's value, and it keeps the leaf's identity and safety fields
    (:data:`SUMMARY_KEEP_KEYS`). Which other keys it leaves out is the implementation's.

    Example: ``assert_summary_projects_leaf(product["tools"][0], full_leaf, "schema chat: chat.x")``
    """
    __tracebackhide__ = True
    carried = {k: leaf.get(k, ABSENT) for k in summary}
    assert_equal(carried, summary, f"{what}: the summary is not a projection of the full leaf (leaf -> summary):")
    lost = [" or ".join(keys) for keys in SUMMARY_KEEP_KEYS
            if any(k in leaf for k in keys) and not any(k in summary for k in keys)]
    if lost:
        raise AssertionError(f"{what}: the summary drops the leaf's identity/safety field(s) {', '.join(lost)} "
                             "(D2 §4: every tool's identity and effect/risk/confirmation/idempotency)")


def assert_judged(run: Any, klass: str, what: str = "") -> Any:
    """The judge puts this outcome in layer ``klass`` (D1 §6); returns the Judgement.

    Example: ``assert_judged(inv, "expected_resolution_stop")`` for a same-name group that must stop.
    """
    __tracebackhide__ = True
    from pytest_dws.core.outcome import Outcome, judge

    outcome = run if isinstance(run, Outcome) else Outcome.from_invocation(run)
    verdict = judge(outcome, getattr(run, "envelope", None))  # an invocation's: the release's error keys
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
