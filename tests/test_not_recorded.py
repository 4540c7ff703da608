"""Issue 38 with issue 37: a replay that lacks an invocation a newer suite asks (typed values, new argv) leaves the
baseline entries that need it unevaluated *for want of a recording*, said apart from other unevaluated entries
(``baseline_use.not_recorded``), never failed and never stale."""

from __future__ import annotations

import pytest

from pytest_dws.core.errors import NotApplicable, NotRecorded
from pytest_dws.verdict.baseline import Baseline
from pytest_dws.verdict.cases import collect, judging
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


def test_a_case_entry_of_a_labelled_part_is_no_unknown_case_of_the_gates_unlabelled_part() -> None:
    """ERR-JSON-CONSISTENT has a part judged as a whole (cases json, table) and a part labelled multi-profile: an
    entry [multi-profile/backend-dep-meta] is that part's, never a misspelled case of the other (live on 81f67c8d,
    the run exited 4 for it); a case entry without a label stays checked."""
    base = Baseline(None, {"G[multi-profile/backend-dep-meta]": "r", "G[jsn]": "r"})
    assert base.unknown_cases("G", None, {"json", "table"}) == {"G[jsn]": ["json"]}
    assert base.unknown_cases("G", "multi-profile", {"backend-dep-meta"}) == {}
    assert base.unknown_cases("G", "multi-profile", {"other"}) != {}


def test_a_gate_whose_every_case_lacks_its_recorded_invocation_waits_as_a_whole() -> None:
    """Live on 81f67c8d's old recording: TGT-SAME-SEMANTICS[+chat-members-list users+bots] judged none of its cases
    (each invocation missing from the replay), and its entries were counted 'not evaluated' instead of 'waiting for
    the next recording'. A collection whose every skipped case is NotRecorded is NotRecorded; one with a case the
    synthetic world cannot answer stays NotApplicable, and its unrecorded cases are still named."""
    def missing() -> None:
        raise NotRecorded("not recorded: ./dws x")

    def unanswerable() -> None:
        raise NotApplicable("the synthetic world cannot answer it")

    with judging() as (_, unjudged, unrecorded), pytest.raises(NotRecorded):
        collect([("c1", missing), ("c2", missing)])
    assert unrecorded == unjudged == {"c1", "c2"}
    with judging() as (_, unjudged, unrecorded), pytest.raises(NotApplicable) as info:
        collect([("c1", missing), ("c2", unanswerable)])
    assert not isinstance(info.value, NotRecorded) and unrecorded == {"c1"} and unjudged == {"c1", "c2"}
