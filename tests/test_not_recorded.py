"""Issue 38 with issue 37: a replay that lacks an invocation a newer suite asks (typed values, new argv) leaves the
baseline entries that need it unevaluated *for want of a recording*, said apart from other unevaluated entries
(``baseline_use.not_recorded``), never failed and never stale."""

from __future__ import annotations

from pytest_dws.verdict.baseline import Baseline
from pytest_dws.verdict.fold import SubjectRun, fold


def test_entries_of_an_unrecorded_subject_or_case_wait_for_the_next_recording() -> None:
    base = Baseline(None, {"G[a/c1]": "r", "G[a/c2]": "r", "G[b/c1]": "r", "G[b]": "r", "G[c/c1]": "r"})
    v = fold("G", [
        SubjectRun("a", judged=frozenset({"c2"}), unjudged=frozenset({"c1"}), unrecorded=frozenset({"c1"})),
        SubjectRun("b", not_applicable="not recorded: the replayed recording lacks it", not_recorded=True),
        SubjectRun("c", not_applicable="the synthetic world cannot answer it"),
    ], base)
    assert v.unrecorded == {"G[a/c1]", "G[b/c1]", "G[b]"}
    assert "G[a/c1]" not in v.matched and "G[c/c1]" not in v.unrecorded
    assert [r.outcome for r in v.results] == ["failed", "not_applicable", "not_applicable"]  # G[a/c2] is stale
