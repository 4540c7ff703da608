"""What a contract run reports: per-gate verdicts (JSON), and a terminal summary grouped by family.

Everything is derived from test reports (``user_properties``), so it also works under pytest-xdist where the
gates run in worker processes.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_dws.core.identity import target_digest
from pytest_dws.launch.plan import merge_ledgers
from pytest_dws.registry import all_gates
from pytest_dws.session import summary
from pytest_dws.verdict import release as release_verdict
from pytest_dws.verdict.fold import ORDER, SubResult

if TYPE_CHECKING:
    from pytest_dws.core.protocols import ContractRun

_ORDER = list(ORDER)


@dataclass
class ItemResult:
    """One pytest item's outcome, and its sub-results (subject, outcome, detail, cases) when it has them."""

    gate: str
    part: str | None
    outcome: str
    detail: str = ""
    subjects: list[SubResult] = field(default_factory=list)
    judged: int = 0  # subjects (and their cases) the part judged: 0 for a part that judged nothing


@dataclass
class Recorder:
    """Collects item outcomes; renders the JSON report and the terminal summary."""

    contract: ContractRun
    results: dict[str, ItemResult] = field(default_factory=dict)
    observed: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, Any] = field(default_factory=dict)  # extra report sections (e.g. metrics)
    baseline_problems: list[str] = field(default_factory=list)
    spent: list[dict[str, Any]] = field(default_factory=list)  # the items' drained invocation ledgers
    reads: dict[str, dict[str, int]] = field(default_factory=dict)  # gate -> recorded invocations read / lacked
    deferred_stale: list[str] = field(default_factory=list)  # gate-wide entries a shard cannot judge alone
    wants: dict[str, set[str]] = field(default_factory=dict)  # gate -> what its not-applicable parts lack (phrases)

    def record(self, report: pytest.TestReport) -> None:
        props: dict[str, Any] = dict(p for p in report.user_properties if isinstance(p, tuple) and len(p) == 2)
        gate = props.get("dws_gate")
        if gate is None or props.get("dws_not_in_shard"):
            return
        if "dws_observed" in props:
            self.observed.update(props["dws_observed"])
        if props.get("dws_wants"):
            self.wants.setdefault(gate, set()).add(str(props["dws_wants"]))
        value: Any
        for key, value in report.user_properties:
            if key == "dws_section":
                name, payload = value
                self.sections.setdefault(name, {}).update(payload)
            elif key == "dws_invocations" and report.when == "call":  # the teardown report repeats them
                self.spent.append(value)
                got = value.get("reads") or {}
                if got.get("held") or got.get("lacked"):
                    mine = self.reads.setdefault(gate, {"read": 0, "not_recorded": 0})
                    mine["read"] += int(got.get("held", 0)) + int(got.get("lacked", 0))
                    mine["not_recorded"] += int(got.get("lacked", 0))
        outcome = _outcome(report)
        if outcome is None:
            return
        previous = self.results.get(report.nodeid)
        if previous is not None and _ORDER.index(previous.outcome) <= _ORDER.index(outcome):
            return  # keep the worst phase (a teardown error after a pass, ...)
        subs = [SubResult(label, sub, detail=detail, cases=cases)
                for label, sub, detail, cases in props.get("dws_subjects", [])]
        self.results[report.nodeid] = ItemResult(gate, props.get("dws_part"), outcome, _detail(report), subs,
                                                 int(props.get("dws_judged") or 0))
        if "dws_labels" in props:
            self.contract.subjects_seen(gate, props["dws_labels"])
        use = props.get("dws_baseline")
        if use is not None:
            self.contract.baseline.matched.update(use["matched"])
            self.contract.baseline.failed.update(use["failed"])
            self.contract.baseline.unknown.update(use.get("unknown") or {})
            self.contract.baseline.unrecorded.update(use.get("unrecorded") or [])

    def gates(self) -> dict[str, dict[str, Any]]:
        """Per gate id: status, family, doc reference, sub-result counts and the subjects that failed."""
        docs = {g.id: g.doc for g in all_gates()}
        summaries = {g.id: g.summary for g in all_gates() if g.summary}
        by_gate: dict[str, list[SubResult]] = defaultdict(list)
        parts: dict[str, dict[str, Any]] = defaultdict(dict)
        for r in self.results.values():
            parts[r.gate][r.part or ""] = {"outcome": r.outcome, "judged": r.judged}
            # An item without sub-results (not applicable as a whole, an error) stands for itself.
            whole = [SubResult(r.part, r.outcome, detail=r.detail)]
            subs = r.subjects if r.subjects and r.outcome != "error" else whole
            by_gate[r.gate].extend(subs)
        out: dict[str, dict[str, Any]] = {}
        for gate_id in sorted(by_gate):
            subs = by_gate[gate_id]
            counts = Counter(r.outcome for r in subs)
            status = next(o for o in _ORDER if counts.get(o))
            entry: dict[str, Any] = {
                "status": status,
                "family": gate_id.split("-", 1)[0],
                "doc": docs.get(gate_id, ""),
                "rule": summaries.get(gate_id, ""),
                "items": dict(sorted(counts.items())),
                "failed_items": sorted(r.label or gate_id for r in subs if r.outcome in ("failed", "error")),
                "xfailed_items": sorted(r.label or gate_id for r in subs if r.outcome == "xfailed"),
                # failed only because a baseline entry passes now (release init drops it, never triages it)
                "stale_items": sorted(r.label or gate_id for r in subs
                                      if r.outcome == "failed" and r.detail == "stale baseline entry"),
                # Every judged subject's outcome: `python -m pytest_dws merge` adds shards up by subject.
                "outcomes": {r.label or gate_id: r.outcome for r in subs},
                # per gate part: its outcome and how many subjects (and cases) it judged (issue 34)
                "parts": dict(sorted(parts[gate_id].items())),
            }
            notes = sorted({r.detail for r in subs if r.outcome in ("not_applicable", "xfailed") and r.detail})
            if notes:
                entry["notes"] = notes
            if status == "not_applicable" and self.wants.get(gate_id):  # what is missing, as a phrase
                entry["wants"] = sorted(self.wants[gate_id])
            reasons = [f"[{r.label}] {r.detail}" if r.label else r.detail for r in subs
                       if r.outcome in ("failed", "error") and r.detail][:3]
            if reasons:  # the first failures' first lines: what a summary shows in one line
                entry["reasons"] = reasons
            cases = {r.label or "": r.cases for r in subs if r.cases}
            if cases:  # per subject: the failing cases, the accepted ones, the ones caused by an accepted rule gate
                entry["cases"] = cases
            out[gate_id] = entry
        return out

    def as_json(self) -> dict[str, Any]:
        s = self.contract.settings
        gates = self.gates()
        return {
            "suite": "pytest-dws",
            "target": {
                "origin": s.origin,
                "source": str(s.source) if s.source else None,
                "catalog": str(s.catalog) if s.catalog else None,
                "cli": s.cli,
                # what the build was, not only where (two builds at one path are two targets)
                "digest": s.recorded.get("digest") or (target_digest(s.cli) if s.cli else None),
                "replay": str(s.replay) if s.replay else None,
                "expectations": str(s.expect) if s.expect else None,
                "baseline": str(s.baseline) if s.baseline else None,
                # a replay: the recorded run's options it took back (issue 37 (1)), and recorded paths not here
                "from_recording": dict(s.from_recording),
                "missing_recorded": dict(s.missing_recorded),
                "strict": sorted(s.strict),  # the strict readings judged (--dws-strict; docs/contract.md R9)
            },
            "isolation": self.contract.isolation.to_dict(),
            "summary": dict(sorted(Counter(g["status"] for g in gates.values()).items())),
            "gates": gates,
            "observed": dict(sorted(self.observed.items())),
            "baseline_problems": self.baseline_problems,
            "baseline_use": {"failed": sorted(self.contract.baseline.failed),
                             "deferred_stale": sorted(self.deferred_stale),
                             "unknown_cases": dict(sorted(self.contract.baseline.unknown.items())),
                             "not_evaluated": self.not_evaluated(),
                             # of those, the ones a replayed recording could not answer (until the next recording)
                             "not_recorded": sorted(set(self.not_evaluated()) & self.contract.baseline.unrecorded)},
            # by_gate: with a recording, how many recorded invocations each gate read, and lacked on a replay
            "invocations": {**merge_ledgers(self.spent), "by_gate": dict(sorted(self.reads.items()))},
            "sampling": self.sampling(),
            "pins": self.pins(),
            **self.sections,
            **({"release": release_verdict.complete(self.sections["release"], gates)}
               if isinstance(self.sections.get("release"), dict) else {}),
        }

    def pins(self) -> dict[str, Any]:
        """The counts the expectations file pins, and which gate compared each in this run: a pin no gate compared
        (its gate was not applicable or not selected) is listed, never silently accepted (issue 34)."""
        from pytest_dws.inputs.expectations import count_gates

        expect = getattr(getattr(self.contract, "ctx", None), "expect", None)
        pinned = dict(sorted((getattr(expect, "counts", None) or {}).items()))
        compared = self.sections.get("pins_compared") or {}
        gates = count_gates()
        return {"pinned": pinned, "not_compared": {k: list(gates.get(k, ())) for k in pinned if k not in compared}}

    def not_evaluated(self) -> list[str]:
        """Baseline entries this run did not evaluate (their gate was not selected, or their subject or case was
        outside the sample, shard or --dws-subject): neither accepted nor stale here (issue 24: every entry is
        evaluated by some run, and a run says which it did not)."""
        base = self.contract.baseline
        return sorted(set(base.entries) - base.matched)

    def sampling(self) -> dict[str, Any]:
        """How the costly per-tool calls were sampled (the `--dws-sample` / `--dws-shard` of this run)."""
        s = self.contract.settings
        out: dict[str, Any] = {"sample": s.sample if s.sample is not None else "coverage",
                               "shard": "/".join(map(str, s.shard)) if s.shard else None}
        seen = self.observed.get("schema_sample")
        if isinstance(seen, dict):
            out["help_and_schema_judged_on"] = {"tools": seen.get("judged"), "of": seen.get("of")}
            # tools added because their parse probe listed other flags than their schema (binary.views.suspects)
            out["probe_suspects"] = seen.get("probe_suspects") or []
        return out

    def cost_lines(self) -> list[str]:
        """The run's cost in two lines: what was sampled, and the target invocations by kind."""
        lines = []
        seen = self.observed.get("schema_sample")
        if isinstance(seen, dict) and seen.get("judged") != seen.get("of"):
            flagged = len(seen.get("probe_suspects") or [])
            how = f"{seen.get('how')}" + (f" + {flagged} whose probe lists other flags than their schema"
                                           if flagged else "")
            lines.append(f"help and schema judged on {seen['judged']} of {seen['of']} tools ({how}"
                         + (f", shard {seen['shard']}" if seen.get("shard") else "")
                         + "); --dws-sample all for every tool")
        spent = merge_ledgers(self.spent)
        missing = spent["not_recorded"]
        if missing["count"]:
            first = "; ".join(" ".join(a) for a in missing["argv"][:3])
            lacking = ", ".join(f"{g} {r['not_recorded']}" for g, r in sorted(self.reads.items())
                                if r["not_recorded"])
            lines.append(f"replay: {missing['count']} invocations not recorded (their subjects are not applicable; "
                         f"all in the report's invocations.not_recorded{'; by gate: ' + lacking if lacking else ''})"
                         f": {first}")
        if spent["total"]["count"]:
            kinds = ", ".join(f"{k} {v['count']} ({v['cpu']:.0f} s)" for k, v in spent["kinds"].items())
            lines.append(f"target invocations: {spent['total']['count']}, {spent['total']['cpu']:.0f} s of target "
                         f"CPU: {kinds}")
        return lines

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_json(), ensure_ascii=False, indent=2, sort_keys=False) + "\n",
                        encoding="utf-8")

    def terminal_summary(self, tr: Any) -> None:
        """Metrics and costs first; the closing block (:mod:`pytest_dws.session.summary`) last, where a person
        looks: the exit and its meaning, the D1 §10 verdict, the families, each failure in one line."""
        if not self.results:
            return
        if "metrics" in self.sections:
            from pytest_dws.verdict.metrics import summary_lines

            tr.write_sep("-", "dws metrics (D1 §9.5; clean is shown apart and never folded in)")
            for line in summary_lines(self.sections["metrics"]):
                tr.write_line(line)
        report = self.as_json()
        if "evaluation" in self.sections:
            from pytest_dws.session import evalview

            tr.write_sep("-", "dws agent evaluation (D1 §9.5, §10: four dimensions apart)")
            for line in evalview.lines(report):
                tr.write_line(line, red="BROKEN" in line)
            if self.contract.settings.eval_html is not None:
                self.contract.settings.eval_html.write_text(evalview.page(report), encoding="utf-8")
        for line in self.cost_lines():
            tr.write_line(f"dws-contract: {line}")
        for problem in self.baseline_problems:
            tr.write_line(f"BASELINE {problem}", red=True)
        if self.observed and self.contract.settings.expect is None:
            tr.write_sep("-", "observed counts (pin them in an expectations file, --dws-expect)")
            tr.write_line("[counts]")
            for key, value in sorted(self.observed.items()):
                if isinstance(value, int):
                    tr.write_line(f"{key} = {value}")
        block = summary.build(report)
        tr.write_sep("=", "dws contract: verdict")
        for line in summary.text_lines(block):
            bad = line.startswith(("FAIL ", "exit 1")) or "NOT MET" in line
            tr.write_line(line, red=bad, green=line.startswith("exit 0"), bold=line.startswith(("exit", "release")))
        if self.contract.settings.summary is not None:
            self.contract.settings.summary.write_text(summary.markdown(block), encoding="utf-8")

def _outcome(report: pytest.TestReport) -> str | None:
    if report.when == "call":
        if hasattr(report, "wasxfail"):
            return "xfailed"
        return {"passed": "passed", "failed": "failed", "skipped": "not_applicable"}[report.outcome]
    if report.failed:
        return "error"
    if report.skipped:
        return "not_applicable"
    return None


def _detail(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return str(report.wasxfail)
    if report.skipped and isinstance(report.longrepr, tuple):
        text = str(report.longrepr[2]).removeprefix("Skipped: ").removeprefix("not applicable: ")
        return re.sub(r" \(gate [^()]*\)$", "", text)  # the gate id the -rs line carries: the report knows it
    return ""

