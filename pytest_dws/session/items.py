"""Gate items: one pytest item per gate (or gate part, ``SCH-EXAMPLES[bin]``); subjects are sub-results."""

from __future__ import annotations

import fnmatch
import functools
import inspect
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_dws.core.errors import DwsInputError, NotApplicable
from pytest_dws.registry import Gate
from pytest_dws.verdict.fold import ItemVerdict, SubjectRun, attempt, fold

if TYPE_CHECKING:
    from pytest_dws.core.protocols import ContractRun, GateContext

#: ``-m dws_sch`` selects a family; ``-m dws_bin`` an access class.
FAMILY_DOCS = {
    "ERR": "D1 §3, §7.1, §8.1, §11.1 — central server-failure classification",
    "TGT": "D1 §4, §6, §7.2, §8.2, §11.1 — unified chat target contract",
    "ALI": "D1 §5, §7.3, §8.3, §11.1 — compatibility flag aliases",
    "FIN": "D1 §7.4, §11.2 — final repository gates",
    "SMK": "D1 §7.4, §11.3 — smoke (on the fake backend; SMK-LIVE, opt-in: the real service)",
    "ACC": "D1 §7.4, §10 — acceptance",
    "FIT": "D1 §9.1, §8.3 — no fitting",
    "DS": "D1 §9.2–§9.4 — datasets",
    "MET": "D1 §9.5, §10 — metrics",
    "REL": "D1 §10 — release verdict",
    "EVAL": "D1 §8.4, §9, §10 — an agent's runs judged",
    "SCH": "D2 §1, §3, §4, §5, §9 — Agent command catalog",
    "SCHCLI": "D2 §6, §7 — the `dws schema` command",
    "WIRE": "docs/wire.md §1, §2 — the real binary's wire rules that no D1/D2 sentence states (credentials)",
}


class FamilyCollector(pytest.Collector):
    """Groups the gate items of one family (``dws::SCH``); it collects nothing by itself."""

    def collect(self) -> Iterable[pytest.Item]:  # pragma: no cover - items are built by the session
        return []


class GateItem(pytest.Item):
    """Runs one gate (part) over all its subjects against the session's :class:`~pytest_dws.observe.context.Context`.

    Subjects are sub-results (:mod:`pytest_dws.verdict.fold`), listed when the item runs, not at collection: one
    item per gate keeps pytest's per-item cost and the terminal proportional to the gates, not to the tools."""

    def __init__(self, *, gate: Gate, contract: ContractRun, label: str | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.gate = gate
        self.label = label  # the part (`GATE[bin]`) when one id has several checks, else None
        self.contract = contract
        self.add_marker(f"dws_{gate.family.lower()}")
        for access in gate.access:
            self.add_marker("dws_" + access.name.lower())
        self.user_properties += [("dws_gate", gate.id), ("dws_doc", gate.doc)]
        if label is not None:
            self.user_properties.append(("dws_part", label))

    def runtest(self) -> None:
        ctx, gate = self.contract.ctx, self.gate
        if not any(ctx.available(a) for a in gate.access):
            self._not_applicable(*ctx_missing(ctx, gate))
        shard = self.contract.settings.shard
        if shard is not None and shard[0] != 1 and not gate.per_tool:
            self.user_properties.append(("dws_not_in_shard", True))  # the report leaves it to shard 1
            self._not_applicable(f"not a per-tool gate: shard 1/{shard[1]} judges it "
                                 f"(--dws-shard {shard[0]}/{shard[1]})", "shard 1 of the matrix")
        before = set(ctx.observed)
        ctx.item = self  # the snapshot gate hands it to syrupy (test location, session, --snapshot-update)
        try:
            outcomes = self._run(ctx)
        except DwsInputError as exc:  # bad input met only now (a file a gate reads): a usage error, not a verdict
            pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
        finally:
            ctx.item = None
            new = {k: ctx.observed[k] for k in set(ctx.observed) - before}
            if new:
                self.user_properties.append(("dws_observed", new))
            for name, payload in ctx.drain_sections().items():
                self.user_properties.append(("dws_section", (name, payload)))
            spent = ctx.ledger.drain()
            if spent is not None:
                self.user_properties.append(("dws_invocations", spent))
        v = fold(gate.id, outcomes, self.contract.baseline)
        # What this part judged: per subject that was not "not applicable", its judged cases (1 when the gate
        # does not name cases). The report's gates.<id>.parts carries it: a part never passes on nothing.
        self.user_properties.append(("dws_judged", sum(
            (len(o.judged) or 1) if o.judged is not None else 1 for o in outcomes if o.not_applicable is None)))
        self._publish(v)
        if v.failing:
            raise AssertionError(v.failure_message(gate.subjects is not None))
        if v.accepted:
            pytest.xfail(v.xfail_reason())
        if v.all_not_applicable:
            reasons = sorted({r.detail for r in v.results})
            wants = sorted({o.wants for o in outcomes if o.wants})
            self._not_applicable(reasons[0] + (f" (and {len(reasons) - 1} other reasons)" if len(reasons) > 1
                                               else ""), wants[0] if wants else None)

    def _not_applicable(self, reason: str, wants: str | None = None) -> None:
        """Not applicable as a whole; ``wants`` (what is missing, a phrase) reaches the report's closing block."""
        if wants:
            self.user_properties.append(("dws_wants", wants))
        _not_applicable(reason, self.name)

    def _run(self, ctx: GateContext) -> list[SubjectRun]:
        """The gate over every selected subject (or once, for a whole-run gate): one :class:`SubjectRun` each."""
        gate = self.gate
        if gate.subjects is None:
            return [attempt(ctx, gate, self.label)]
        try:
            listed = gate.subjects(ctx)
        except NotApplicable as exc:
            self._not_applicable(str(exc), exc.wants)
        subjects = list(listed)
        # Every subject the gate has, also those a sample, a shard or --dws-subject leaves out: the baseline
        # check knows them all (a sampled gate's list carries the rest as ``universe``).
        universe = list(getattr(listed, "universe", subjects))
        self.user_properties.append(("dws_labels", universe))
        patterns = self.contract.settings.subjects
        if patterns:
            judged = set(subjects)
            subjects = [s for s in universe if any(fnmatch.fnmatchcase(s, p) for p in patterns)
                        and (s in judged or not self.contract.settings.shard)]
            if not subjects:
                self._not_applicable(f"no subject matches --dws-subject {','.join(patterns)}",
                                     "a subject matching --dws-subject")
        if not subjects and universe and self.contract.settings.shard is not None:
            self.user_properties.append(("dws_not_in_shard", True))  # its subjects are other shards'
            self._not_applicable("none of the gate's subjects is in this shard", "a subject in this shard")
        if not subjects:
            self._not_applicable("the gate has no subjects in this release", "a subject in this release")
        return [attempt(ctx, gate, s, s) for s in subjects]

    def _publish(self, v: ItemVerdict) -> None:
        """Sub-results and baseline use as user properties: they reach the report (also from xdist workers)
        and the JUnit XML, one property per failing or accepted subject so CI dashboards name the tool."""
        self.user_properties.append(("dws_subjects", [r.as_json() for r in v.results]))
        if v.matched or v.unknown or v.unrecorded:
            self.user_properties.append(("dws_baseline", {"matched": sorted(v.matched), "failed": sorted(v.failed),
                                                          "unknown": v.unknown, "unrecorded": sorted(v.unrecorded)}))
        if self.gate.subjects is not None:
            for r in v.results:
                if r.outcome in ("failed", "xfailed"):
                    self.user_properties.append((f"dws_{r.outcome}_subject", r.label))

    @property
    def obj(self) -> Any:
        """The gate function (what syrupy's test location and pytest's reporting read from an item)."""
        return self.gate.func

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """Gate verdicts read as the spec: the message and the doc reference, no traceback."""
        if isinstance(excinfo.value, AssertionError):
            return f"{self.name} ({self.gate.doc}): {self.gate.summary}\n{excinfo.value}"
        if isinstance(excinfo.value, pytest.xfail.Exception):
            return str(excinfo.value)  # pytest renders an xfail's longrepr too: no traceback to format
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        path, line = _location(self.gate.func)
        return path, line, f"{self.name} ({self.gate.doc})"


@functools.cache
def _location(func: Any) -> tuple[Path, int | None]:
    """Where a gate function is defined (cached: thousands of items share a few hundred functions)."""
    code = getattr(func, "__code__", None)
    if code is not None:
        return Path(code.co_filename), code.co_firstlineno - 1
    return Path(inspect.getfile(func)), None


def _not_applicable(reason: str, name: str) -> None:
    """Skip, reported at the gate's own location and naming its id (a `-rs` line says which gate)."""
    raise pytest.skip.Exception(f"not applicable: {reason} (gate {name})", _use_item_location=True)


def ctx_missing(ctx: GateContext, gate: Gate) -> tuple[str, str | None]:
    """The reason a gate cannot run and what is missing: the first missing input, phrased as the option to set."""
    for access in sorted(gate.access, key=lambda a: a.value):
        try:
            ctx.require(access)
        except NotApplicable as exc:
            return str(exc), exc.wants
    return "input missing", None
