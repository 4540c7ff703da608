"""Cases: a gate's failure broken into named cases, each optionally attributed to the rule gate it breaks.

Why: a baseline that accepts a gate (or a subject) as a whole hides the next deviation of the same gate. A gate
that judges several cases raises :class:`CaseFailures` instead of one ``AssertionError``; the item then matches
every failing case against the baseline on its own (``GATE[case]``, ``GATE[subject/case]``), so a new failing
case of a gate whose other case is accepted still fails the run.

Aggregate gates (ACC, DS, MET, REL, FIT, FIN) re-judge what rule gates judge. A failing case of theirs names its
*cause*: the rule gate (at the finest grain known: ``ERR-PERMISSION``, ``TGT-GROUP-NAME[+search-msg]``) whose
rule it breaks. A cause that the baseline accepts is reported under that rule gate and does not fail the
aggregate again (one root cause, one verdict); a failing case without an accepted cause fails it, named.

This module is a leaf: it imports nothing of the suite, so the data, context and gate layers can all use it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

#: A check of :func:`collect`: (case label, check) or (case label, check, causes).
Check = tuple[Any, ...]  # (label, check) or (label, check, causes): see collect()


class CaseFailures(AssertionError):
    """Failing cases of one gate item: ``{case: message}`` and, per case, the rule-gate causes (baseline-entry
    spelled: ``GATE`` or ``GATE[subject]`` or ``GATE[subject/case]``); a case without causes is unattributed."""

    def __init__(self, failures: Mapping[str, str], causes: Mapping[str, Iterable[str]] | None = None,
                 *, header: str = "", facts: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.failures = dict(failures)
        self.causes = {k: tuple(v) for k, v in (causes or {}).items() if v}
        self.header = header
        #: per case, the typed facts its failure was observed with (core.errors.Finding): its fingerprint
        self.facts = {k: dict(v) for k, v in (facts or {}).items() if v}
        super().__init__(self.render())

    def render(self, only: Iterable[str] | None = None) -> str:
        """The message: the header, then one ``[case] message`` block per case (``only``: a subset)."""
        keep = self.failures if only is None else {k: self.failures[k] for k in only if k in self.failures}
        lines = [self.header] if self.header else []
        for case, message in keep.items():
            cause = self.causes.get(case)
            tag = f" (cause: {', '.join(cause)})" if cause else ""
            lines.append(f"[{case}]{tag} {message}")
        return "\n".join(lines)


#: The case labels the outermost :func:`collect` of the gate run in progress judged (see :func:`judging`).
_JUDGED: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("dws_judged_cases", default=None)
#: The case labels the gate run in progress knows but could not judge (see :func:`not_judged`).
_UNJUDGED: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("dws_unjudged_cases", default=None)
#: ... and, of those, the ones whose invocation a replayed recording does not hold (see :func:`not_judged`).
_UNRECORDED: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("dws_unrecorded_cases", default=None)
_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("dws_collect_depth", default=0)


@contextlib.contextmanager
def judging() -> Iterator[tuple[set[str], set[str], set[str]]]:
    """Record the labels of the cases a gate run judges (the checks its outermost :func:`collect` ran), of
    those it knows but could not judge (:func:`not_judged`), and of those it could not judge because a replayed
    recording lacks their invocation.

    Why: a gate judges some cases only where a costly call was made (help defaults on sampled tools), so a
    baseline entry for a case this run did not judge is neither accepted nor stale: it was not looked at."""
    judged: set[str] = set()
    unjudged: set[str] = set()
    unrecorded: set[str] = set()
    tokens = _JUDGED.set(judged), _UNJUDGED.set(unjudged), _UNRECORDED.set(unrecorded)
    try:
        yield judged, unjudged, unrecorded
    finally:
        _JUDGED.reset(tokens[0])
        _UNJUDGED.reset(tokens[1])
        _UNRECORDED.reset(tokens[2])


def not_judged(labels: Iterable[str], *, unrecorded: bool = False) -> None:
    """Declare cases the gate run in progress knows but could not judge (an outcome that depends on the synthetic
    world, not on the rule; ``unrecorded``: a replayed recording does not hold the invocation, so the case waits
    for the next recording): a baseline entry naming one is not evaluated in this run, never a misspelling."""
    labels = list(labels)
    unjudged = _UNJUDGED.get()
    if unjudged is not None:
        unjudged.update(labels)
    missing = _UNRECORDED.get()
    if unrecorded and missing is not None:
        missing.update(labels)


def collect(checks: Iterable[Check], *, header: str = "") -> None:
    """Run every check; raise one :class:`CaseFailures` naming each failing case (a gate reports all it found).

    A check may carry its causes: the rule gate(s) whose rule it re-judges (aggregate gates). A check that raises
    :class:`~pytest_dws.core.errors.NotApplicable` (its input is not there: an invocation a replayed recording
    does not hold) is a case not judged, never a pass or a failure; when no check could be judged, the whole
    collection is not applicable."""
    __tracebackhide__ = True
    failures: dict[str, str] = {}
    causes: dict[str, list[str]] = {}
    facts: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    wants: list[str] = []  # what the skipped cases lack, as phrases (NotApplicable.wants)
    unrecorded: set[str] = set()  # ... of the skipped, those whose invocation a replayed recording lacks
    judged = _JUDGED.get() if _DEPTH.get() == 0 else None  # only the outermost collect names the cases
    depth = _DEPTH.set(_DEPTH.get() + 1)
    try:
        ran = _run_checks(checks, failures, causes, judged, facts, skipped, wants, unrecorded)
    finally:
        _DEPTH.reset(depth)
    if failures:
        raise CaseFailures(failures, causes, header=header, facts=facts)
    if skipped and ran == len(skipped):
        from pytest_dws.core.errors import NotApplicable, NotRecorded

        first = next(iter(skipped.values()))
        why = first + (f" (and {len(skipped) - 1} other cases not judged)" if len(skipped) > 1 else "")
        if unrecorded == set(skipped):  # every case waits for a recorded invocation: the whole waits, said so
            raise NotRecorded(why)
        raise NotApplicable(why, wants=next(iter(wants), None))


def _run_checks(checks: Iterable[Check], failures: dict[str, str], causes: dict[str, list[str]],
                judged: set[str] | None, facts: dict[str, dict[str, Any]] | None = None,
                skipped: dict[str, str] | None = None, wants: list[str] | None = None,
                unrecorded: set[str] | None = None) -> int:
    """Run the checks into ``failures`` / ``causes`` / ``facts`` / ``skipped`` (``unrecorded``: the skipped whose
    invocation a replayed recording lacks); the number of checks run."""
    from pytest_dws.core.errors import NotApplicable, NotRecorded

    ran = 0
    for entry in checks:
        ran += 1
        label, check = entry[0], entry[1]
        cause = entry[2] if len(entry) > 2 else None
        if judged is not None:
            judged.add(label)
        try:
            check()
        except NotApplicable as exc:
            if skipped is None:
                raise
            skipped[label] = str(exc)
            if wants is not None and exc.wants:
                wants.append(exc.wants)
            if judged is not None:
                judged.discard(label)
            waits = isinstance(exc, NotRecorded)
            if waits and unrecorded is not None:
                unrecorded.add(label)
            not_judged([label], unrecorded=waits)
        except CaseFailures as exc:  # a nested collect: keep its cases' causes under this label
            failures[label] = str(exc)
            nested = [c for cs in exc.causes.values() for c in cs]
            unattributed = any(k not in exc.causes for k in exc.failures)
            own = _as_list(cause)
            if own or (nested and not unattributed):
                causes[label] = own or sorted(set(nested))
        except AssertionError as exc:
            failures[label] = str(exc)
            if cause:
                causes[label] = _as_list(cause)
            if facts is not None and getattr(exc, "facts", None):
                facts[label] = dict(exc.facts)  # type: ignore[attr-defined]
    return ran


def _as_list(cause: Iterable[str] | str | None) -> list[str]:
    if cause is None:
        return []
    return [cause] if isinstance(cause, str) else list(cause)


@dataclass
class CaseVerdict:
    """How one item's failing cases meet the baseline (see :meth:`pytest_dws.verdict.baseline.Baseline.judge_cases`)."""

    new: list[str] = field(default_factory=list)  # failing, not accepted: they fail the item
    changed: dict[str, str] = field(default_factory=dict)  # listed cases failing for another cause: why
    accepted: dict[str, str] = field(default_factory=dict)  # case -> baseline reason (xfail)
    accounted: dict[str, list[str]] = field(default_factory=dict)  # case -> accepted rule-gate causes
    stale: list[str] = field(default_factory=list)  # baseline case entries of this item that did not fail
    coarse: str | None = None  # a gate/subject entry that would hide the cases: it must name them instead
    entries_matched: list[str] = field(default_factory=list)
    entries_failed: list[str] = field(default_factory=list)


def soft(problems: list[str], check: Any, *args: Any, **kw: Any) -> bool:
    """Run one ``assert_*`` helper of :mod:`pytest_dws.assertions`; its failure becomes one entry of
    ``problems`` (a gate reports everything it found, not only the first). True when the check passed."""
    try:
        check(*args, **kw)
    except AssertionError as exc:
        problems.append(str(exc))
        return False
    return True
