"""The baseline of expected failures: ``GATE``, ``GATE[subject]`` or ``GATE[subject/case]`` (``GATE[case]`` for a
gate without subjects), each with a mandatory reason.

Why the finest grain: an entry that accepts a whole gate hides the next deviation of that gate. So a gate that
reports its failure as named cases (:class:`pytest_dws.verdict.cases.CaseFailures`) is matched case by case: every
failing case must be listed, a listed case that passes is stale, and a coarser entry over such a failure is
refused with the case entries to write instead. A listed item that passes fails the run as *stale* (a
baseline may only shrink knowingly); an entry naming an unknown gate id is a usage error, one naming a
subject or case the run does not have is reported as unknown, so typos cannot hide anything.

File format (TOML)::

    [expected_failures]
    "SCH-REF-REVIEW" = "e81 still has 11 unreviewed Skill references (D2 §5; observed unreviewed_skill_tools=11)"
    "SCH-HINT-PRECEDENCE[dev.disable_dev_app]" = "cf catalog contradicts destructive-safety.json"
    "ERR-CODE-PRIMARY[code-primary]" = "D1 §3.1: the code decides; observed reason=backend_dependency_unavailable"
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError, read_toml
from pytest_dws.verdict.cases import CaseFailures, CaseVerdict

#: The reason `python -m pytest_dws release init` gives a new failure: a person must replace it (a run refuses it).
TRIAGE = "TRIAGE:"
_ENTRY = re.compile(r"^(?P<gate>[A-Z]+(?:-[A-Z0-9]+)+)(?:\[(?P<inner>.+)\])?$")


def entry_name(gate_id: str, label: str | None, case: str | None = None) -> str:
    """The baseline spelling of an item (``label``: its subject or part) or of one of its cases."""
    inner = "/".join(p for p in (label, case) if p is not None)
    return f"{gate_id}[{inner}]" if inner else gate_id


def split_entry(entry: str) -> tuple[str, str | None]:
    """``GATE[inner]`` -> (GATE, inner); ``GATE`` -> (GATE, None)."""
    m = _ENTRY.match(entry)
    if m is None:
        raise ValueError(entry)
    return m["gate"], m["inner"]


#: Facts that name a set (comma-joined): a bound set is the breached fact, met when the failure shows at least
#: those members (issue 35 rule 8: an added read-only call or lookup does not turn an accepted deviation into a
#: new failure; a missing member, or "none" against any call, is another cause).
SET_FACTS = frozenset({"calls", "fields", "writes"})


def _agrees(fact: str, bound: Any, seen: Any) -> bool:
    """Whether an observed fact meets the bound one (:data:`SET_FACTS` by inclusion, the rest by equality)."""
    if fact in SET_FACTS and isinstance(bound, str) and isinstance(seen, str) and "none" not in (bound, seen):
        return set(bound.split(",")) <= set(seen.split(","))
    return bool(seen == bound)


@dataclass
class Baseline:
    """Expected failures by entry, with their reasons, and which of them were met and actually failed."""

    path: Path | None = None
    entries: dict[str, str] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)
    matched: set[str] = field(default_factory=set)
    #: entry -> the typed facts its failure must show (exit, reason, category, failing fields ...): the cause it
    #: accepts. A failure of the same case with other facts is a new failure (issue 24).
    fingerprints: dict[str, dict[str, Any]] = field(default_factory=dict)
    unknown: dict[str, list[str]] = field(default_factory=dict)  # misspelled case entries -> closest labels
    #: entries a replayed recording could not evaluate: their invocations are not in it (the next recording's)
    unrecorded: set[str] = field(default_factory=set)

    def lookup(self, gate_id: str, label: str | None) -> tuple[str, str] | None:
        """The coarse (entry, reason) covering this item as a whole, most specific first."""
        for name in ([entry_name(gate_id, label)] if label is not None else []) + [gate_id]:
            if name in self.entries:
                return name, self.entries[name]
        return None

    def case_entries(self, gate_id: str, label: str | None) -> dict[str, tuple[str, str]]:
        """{case: (entry, reason)} of the case entries naming this item."""
        prefix = f"{gate_id}[" + (f"{label}/" if label is not None else "")
        out = {}
        for entry, reason in self.entries.items():
            if entry.startswith(prefix) and entry.endswith("]"):
                case = entry[len(prefix):-1]
                if case:
                    out[case] = (entry, reason)
        return out

    def cause_changed(self, entry: str, facts: Mapping[str, Any]) -> str | None:
        """None when ``entry`` accepts a failure with these ``facts`` (it binds none, or they match); else why not."""
        bound = self.fingerprints.get(entry)
        if not bound:
            return None
        differ = {k: (v, facts.get(k, "<absent>")) for k, v in bound.items() if not _agrees(k, v, facts.get(k))}
        if not differ:
            return None
        shown = ", ".join(f"{k}: {w!r} -> {g!r}" for k, (w, g) in sorted(differ.items()))
        return f"fails for another cause than its baseline entry {entry!r} accepts ({shown})"

    def unknown_cases(self, gate_id: str, label: str | None, judged: set[str]) -> dict[str, list[str]]:
        """{entry: closest case labels} of the case entries of this item that name no case it judged (issue 24:
        a misspelled case is a usage error, never a silently ignored entry)."""
        import difflib

        labels = sorted(judged)
        # An item without a label (a gate's part judged as a whole) sees every case entry of its gate; one spelled
        # `<subject or part>/<case>` belongs to that labelled item, which judges it (ERR-JSON-CONSISTENT's json part
        # is not where [multi-profile/backend-dep-meta] is judged)
        return {entry: difflib.get_close_matches(case, labels, n=3, cutoff=0.3) or labels[:3]
                for case, (entry, _) in self.case_entries(gate_id, label).items()
                if case not in judged and not any(case.startswith(j + "/") for j in judged)
                and not (label is None and "/" in case)}

    def accepts(self, cause: str) -> str | None:
        """The entry accepting a rule-gate cause: the cause itself or a coarser spelling of it."""
        gate_id, inner = split_entry(cause)
        names = [cause]
        if inner is not None and "/" in inner:
            names.append(entry_name(gate_id, inner.split("/", 1)[0]))
        names.append(gate_id)
        return next((n for n in names if n in self.entries), None)

    def judge_cases(self, gate_id: str, label: str | None, exc: CaseFailures,
                    judged: Iterable[str] | None = None) -> CaseVerdict:
        """Match an item's failing cases against the baseline (see the module docstring). ``judged``: the cases
        the run looked at (None: all of them); a listed case it did not judge is neither accepted nor stale."""
        v = CaseVerdict()
        listed = self.case_entries(gate_id, label)
        if judged is not None:
            seen = set(judged) | set(exc.failures)
            listed = {c: e for c, e in listed.items() if c in seen}
        for case in exc.failures:
            if case in listed:
                changed = self.cause_changed(listed[case][0], exc.facts.get(case, {}))
                if changed is None:
                    v.accepted[case] = listed[case][1]
                    continue
                v.changed[case] = changed
                v.new.append(case)
                continue
            causes = exc.causes.get(case, ())
            accepted = [c for c in causes if self.accepts(c)]
            if causes and len(accepted) == len(causes):
                v.accounted[case] = list(causes)
            else:
                v.new.append(case)
        v.stale = sorted(c for c in listed if c not in exc.failures)
        v.entries_matched = sorted(e for e, _ in listed.values())
        # A listed case failing for another cause did fail: it is a new failure (``changed``), never "passes now"
        v.entries_failed = sorted(listed[c][0] for c in [*v.accepted, *v.changed])
        coarse = self.lookup(gate_id, label)
        if coarse is not None:
            v.coarse = coarse[0]
            v.entries_matched.append(coarse[0])
        return v

    def problems(self, collected: dict[str, set[str | None]]) -> list[str]:
        """Stale and unknown entries, given the collected gate ids and their item labels."""
        return [text for _, _, text in self.findings(collected)]

    def findings(self, collected: dict[str, set[str | None]]) -> list[tuple[str, str, str]]:
        """(``unknown`` | ``stale``, entry, message) for each entry that is wrong in this run."""
        out = []
        for entry in sorted(self.entries):
            gate_id, inner = split_entry(entry)
            if gate_id not in collected:
                continue  # gate not selected in this run (-m/-k): nothing to judge
            labels = collected[gate_id]
            if inner is not None and not _names_item_or_case(inner, labels):
                out.append(("unknown", entry, f"unknown baseline entry {entry!r}: gate {gate_id} has no such subject"))
            elif entry not in self.matched:
                continue  # collected but not run (deselected, not applicable)
            elif entry not in self.failed:
                out.append(("stale", entry, f"stale baseline entry {entry!r}: it passes now; remove it ({self.path})"))
        return out


def _names_item_or_case(inner: str, labels: Iterable[str | None]) -> bool:
    labels = set(labels)
    if inner in labels or None in labels:  # a subject/part, or a case of an item without one
        return True
    return any(lab is not None and inner.startswith(lab + "/") for lab in labels)


def load_baseline(path: Path | None, known_gates: Iterable[str] | None = None) -> Baseline:
    """Read a baseline TOML file; a malformed one, or one naming an unknown gate id, is a one-line input error."""
    if path is None:
        return Baseline()
    data = read_toml(path, "baseline file (option --dws-baseline / ini dws_baseline)")
    table = data.get("expected_failures", {})
    if not isinstance(table, dict):
        raise DwsInputError(path, "$.expected_failures", "expected a table of \"GATE-ID[subject]\" = \"reason\" (or "
                            "= {reason = \"...\", fingerprint = {exit = 5, ...}})")
    known = set(known_gates) if known_gates is not None else None
    reasons: dict[str, str] = {}
    fingerprints: dict[str, dict[str, Any]] = {}
    for entry, value in table.items():
        reason = value.get("reason") if isinstance(value, dict) else value
        if isinstance(value, dict):
            bound = value.get("fingerprint", {})
            if not isinstance(bound, dict) or not all(isinstance(v, (str, int, bool)) for v in bound.values()):
                raise DwsInputError(path, f"$.expected_failures.{entry!r}.fingerprint",
                                    "expected a table of field = string, integer or boolean")
            if bound:
                fingerprints[entry] = dict(bound)
        if isinstance(reason, str):
            reasons[entry] = reason
        m = _ENTRY.match(entry)
        if not m:
            raise DwsInputError(path, f"$.expected_failures.{entry!r}",
                                "expected GATE-ID, GATE-ID[subject] or GATE-ID[subject/case]")
        if known is not None and m["gate"] not in known:
            raise DwsInputError(path, f"$.expected_failures.{entry!r}", f"unknown gate id {m['gate']!r}")
        if not isinstance(reason, str) or not reason.strip():
            raise DwsInputError(path, f"$.expected_failures.{entry!r}", "a non-empty reason is mandatory")
    triage = [e for e, r in reasons.items() if r.strip().startswith(TRIAGE)]
    if triage:  # written by `release init`: each needs a person's reason (document sentence + observed field)
        raise DwsInputError(path, "$.expected_failures", f"{len(triage)} entr{'y' if len(triage) == 1 else 'ies'} "
                            f"still to triage (reason 'TRIAGE: ...'): {', '.join(map(repr, triage[:5]))}")
    return Baseline(path, reasons, fingerprints=fingerprints)
