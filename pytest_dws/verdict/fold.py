"""The verdict of one gate item over its subjects, against the baseline: pure data in, pure data out.

Why one item per gate: a release of 849 tools would otherwise be thousands of pytest items, and pytest's
per-item protocol (reports, capture, terminal lines) costs more than the gates' own work, while a real failure
drowns among thousands of lines. So a gate item runs its gate over every subject and keeps each subject's
outcome as a *sub-result*; this module folds the sub-results with the baseline exactly as per-subject items
were judged (issue "True verdicts"): a subject failure is accepted by its own ``GATE[subject]`` entry (or by the
gate-wide ``GATE``), a failure broken into cases is matched case by case (:meth:`Baseline.judge_cases`), a
listed subject or case that passes is stale, and a new failing subject fails the item even when the others
are accepted.

Nothing here imports pytest or a gate module: the item (:mod:`pytest_dws.session.items`) turns the
:class:`ItemVerdict` into pass, fail, xfail or skip, and the report (:mod:`pytest_dws.session.report`) reads the
sub-results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_dws.core.errors import NotApplicable, NotRecorded
from pytest_dws.core.protocols import GateContext
from pytest_dws.registry import Gate, judged_cases, run_once, unjudged_cases, unrecorded_cases
from pytest_dws.verdict.baseline import Baseline, entry_name
from pytest_dws.verdict.cases import CaseFailures

#: Sub-result outcomes, worst first (the report folds a gate's status in this order).
ORDER = ("failed", "error", "xfailed", "passed", "not_applicable")
#: How many failing subjects a failure message shows in full (the rest by name; all of them in the report).
SHOWN = 10


@dataclass
class SubjectRun:
    """What running the gate on one subject gave: nothing (pass), a failure, or not applicable."""

    label: str | None
    failure: AssertionError | None = None
    not_applicable: str | None = None
    judged: frozenset[str] | None = None  # the cases the run judged (None: unknown, every listed case counts)
    unjudged: frozenset[str] = frozenset()  # the cases it knew but could not judge (not evaluated, not misspelt)
    unrecorded: frozenset[str] = frozenset()  # ... of those, the ones a replayed recording could not answer
    not_recorded: bool = False  # not applicable as a whole because a replayed recording lacks an invocation
    wants: str | None = None  # not applicable: what is missing, as a phrase (NotApplicable.wants)


def attempt(ctx: GateContext, gate: Gate, label: str | None, subject: str | None = None) -> SubjectRun:
    """Run ``gate`` on ``subject`` (once per session, :func:`run_once`): a pass, a failure (AssertionError, incl.
    CaseFailures) or not applicable. Anything else (a bug, an interrupt) propagates. The gate items and the
    aggregate that re-judges the DATA gates (pytest_dws.observe.rejudge) both read runs through this."""
    try:
        run_once(ctx, gate, subject)
    except NotApplicable as exc:
        return SubjectRun(label, not_applicable=str(exc), not_recorded=isinstance(exc, NotRecorded),
                          wants=exc.wants)
    except AssertionError as exc:
        return SubjectRun(label, failure=exc, judged=judged_cases(ctx, gate, subject),
                          unjudged=unjudged_cases(ctx, gate, subject), unrecorded=unrecorded_cases(ctx, gate, subject))
    return SubjectRun(label, judged=judged_cases(ctx, gate, subject), unjudged=unjudged_cases(ctx, gate, subject),
                      unrecorded=unrecorded_cases(ctx, gate, subject))


@dataclass
class SubResult:
    """One subject's verdict after the baseline: ``outcome`` is one of :data:`ORDER` (``failed`` also for a
    stale entry), ``message`` the failure text shown, ``detail`` the baseline reason / not-applicable reason."""

    label: str | None
    outcome: str
    message: str = ""
    detail: str = ""
    cases: dict[str, Any] | None = None

    def as_json(self) -> list[Any]:
        return [self.label, self.outcome, self.detail, self.cases]


@dataclass
class ItemVerdict:
    """The fold of an item's sub-results: what fails it, what the baseline accepted, which entries it met."""

    results: list[SubResult] = field(default_factory=list)
    matched: set[str] = field(default_factory=set)  # baseline entries this item met
    failed: set[str] = field(default_factory=set)  # ... and that failed as listed
    unknown: dict[str, list[str]] = field(default_factory=dict)  # case entries naming no case it judged -> closest
    #: entries this item could not evaluate because a replayed recording lacks the invocations they need
    unrecorded: set[str] = field(default_factory=set)

    @property
    def failing(self) -> list[SubResult]:
        return [r for r in self.results if r.outcome == "failed"]

    @property
    def accepted(self) -> list[SubResult]:
        return [r for r in self.results if r.outcome == "xfailed"]

    @property
    def all_not_applicable(self) -> bool:
        return bool(self.results) and all(r.outcome == "not_applicable" for r in self.results)

    def failure_message(self, per_subject: bool) -> str:
        """Every failing subject with its reason: the first :data:`SHOWN` in full, the rest by name."""
        failing = self.failing
        if not per_subject:
            return "\n".join(r.message for r in failing)
        lines = [f"{len(failing)} of {len(self.results)} subjects fail"
                 + (f" ({len(self.accepted)} more accepted by the baseline)" if self.accepted else "")]
        for r in failing[:SHOWN]:
            lines.append(f"--- [{r.label}]\n{r.message}")
        rest = [str(r.label) for r in failing[SHOWN:]]
        if rest:
            lines.append(f"... and {len(rest)} more failing subjects (all in the JSON report): {', '.join(rest)}")
        return "\n".join(lines)

    def xfail_reason(self) -> str:
        parts = [f"[{r.label}] {r.detail}" if r.label is not None else r.detail for r in self.accepted]
        shown = "; ".join(parts[:SHOWN])
        more = len(parts) - SHOWN
        return "accepted: " + shown + (f" (+{more} more accepted subjects)" if more > 0 else "")


def fold(gate_id: str, outcomes: list[SubjectRun], baseline: Baseline) -> ItemVerdict:
    """Fold ``outcomes`` with ``baseline``. A gate-wide ``GATE`` entry is judged stale by the session (it may
    cover another part or item of the gate), every finer entry here."""
    v = ItemVerdict()
    for o in outcomes:
        v.results.append(_one(gate_id, o, baseline, v))
    return v


def _one(gate_id: str, o: SubjectRun, baseline: Baseline, v: ItemVerdict) -> SubResult:
    label = o.label
    entry = baseline.lookup(gate_id, label)
    cases = baseline.case_entries(gate_id, label)
    v.unrecorded.update(e for c, (e, _) in cases.items() if o.not_recorded or c in o.unrecorded)
    if o.not_recorded and entry is not None and entry[0] != gate_id:
        v.unrecorded.add(entry[0])
    if o.not_applicable is not None:
        return SubResult(label, "not_applicable", detail=o.not_applicable)
    exc = o.failure
    if o.judged:  # the cases this item can produce are known: a case entry naming none of them is a misspelling
        seen = set(o.judged) | set(o.unjudged) | (set(exc.failures) if isinstance(exc, CaseFailures) else set())
        v.unknown.update(baseline.unknown_cases(gate_id, label, seen))
    if isinstance(exc, CaseFailures):
        return _cases(gate_id, label, exc, baseline, v, o.judged)
    if exc is not None:
        facts = dict(getattr(exc, "facts", None) or {})
        printed: dict[str, Any] | None = {"facts": {"": facts}} if facts else None  # its fingerprint, reported
        if entry is not None:
            v.matched.add(entry[0])
            changed = baseline.cause_changed(entry[0], facts)
            if changed is not None:  # the listed item fails, but for another cause: a new failure
                return SubResult(label, "failed", message=f"{exc}\n{changed}", detail=changed, cases=printed)
            v.failed.add(entry[0])
            return SubResult(label, "xfailed", message=str(exc), detail=entry[1], cases=printed)
        return SubResult(label, "failed", message=str(exc), detail=first_line(str(exc)), cases=printed)
    # Passed: every entry naming this subject (or a case it judged) is stale; a gate-wide one is judged per
    # session, and a case this run did not judge (a costly check outside the sample) is neither.
    listed = sorted(e for c, (e, _) in cases.items() if o.judged is None or c in o.judged)
    v.matched.update(listed)
    stale = list(listed)
    if entry is not None:
        v.matched.add(entry[0])
        if entry[0] != gate_id:
            stale.append(entry[0])
    if stale:
        return SubResult(label, "failed", message=_stale(stale, "it", baseline), detail="stale baseline entry")
    return SubResult(label, "passed")


def _cases(gate_id: str, label: str | None, exc: CaseFailures, baseline: Baseline, v: ItemVerdict,
           judged: frozenset[str] | None = None) -> SubResult:
    """A failure broken into cases: each failing case must be accepted by its own entry, or caused by a rule
    gate whose failure the baseline accepts (reported there); anything else fails the subject."""
    cv = baseline.judge_cases(gate_id, label, exc, judged)
    v.matched.update(cv.entries_matched)
    v.failed.update(cv.entries_failed)
    cases = {"failed": cv.new, "accepted": cv.accepted, "accounted": cv.accounted, "stale": cv.stale,
             "causes": {c: list(exc.causes[c]) for c in cv.new if c in exc.causes},
             "changed": cv.changed, "facts": {c: exc.facts[c] for c in exc.failures if c in exc.facts}}
    if cv.coarse is not None and cv.new:
        names = ", ".join(repr(entry_name(gate_id, label, c)) for c in cv.new)
        return SubResult(label, "failed", cases=cases, message=(
            f"{exc}\nbaseline entry {cv.coarse!r} is coarser than this failure: a new case would hide behind "
            f"it; list the failing cases instead: {names}"))
    if cv.new:
        tail = f"\n(also failing, accepted by the baseline: {', '.join(cv.accepted)})" if cv.accepted else ""
        tail += "".join(f"\n[{c}] {why}" for c, why in cv.changed.items())
        first = f"[{next(iter(cv.changed))}] {next(iter(cv.changed.values()))}" if cv.changed and \
            all(c in cv.changed for c in cv.new) else first_line(exc.render(cv.new))
        return SubResult(label, "failed", message=exc.render(cv.new) + tail, cases=cases, detail=first)
    stale = [entry_name(gate_id, label, c) for c in cv.stale]
    if cv.coarse is not None and cv.coarse != gate_id:
        stale.append(cv.coarse)  # every case is accounted for: the coarse entry covers nothing
    if stale:
        return SubResult(label, "failed", message=_stale(stale, "the case", baseline), cases=cases,
                         detail="stale baseline entry")
    # Every failing case is accepted: by its own entry, or because a rule gate whose failure the baseline accepts
    # caused it (reported under that gate). Either way the subject failed: it is xfailed, never passed.
    reasons = [f"[{c}] {r}" for c, r in cv.accepted.items()]
    reasons += [f"[{c}] caused by {', '.join(causes)} (accepted there)" for c, causes in cv.accounted.items()]
    return SubResult(label, "xfailed", message=str(exc), cases=cases, detail="; ".join(reasons))


def _stale(stale: list[str], what: str, baseline: Baseline) -> str:
    return (f"stale baseline entr{'y' if len(stale) == 1 else 'ies'} {', '.join(map(repr, stale))}: {what} passes "
            f"now; remove it from {baseline.path}")


def first_line(text: str, width: int = 200) -> str:
    """A failure's first non-empty line (the reason a summary shows), at most ``width`` characters."""
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line if len(line) <= width else line[:width - 1] + "…"
