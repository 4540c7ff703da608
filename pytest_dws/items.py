"""Gate items: one pytest item per gate (or per gate and subject), named like ``SCH-DESTRUCTIVE[chat.x]``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_dws.baseline import entry_name
from pytest_dws.cases import CaseFailures
from pytest_dws.registry import Gate, NotApplicable

if TYPE_CHECKING:
    from pytest_dws.session import ContractSession

#: ``-m dws_sch`` selects a family; ``-m dws_bin`` an access class.
FAMILY_DOCS = {
    "ERR": "D1 §3, §7.1, §8.1, §11.1 — central server-failure classification",
    "TGT": "D1 §4, §6, §7.2, §8.2, §11.1 — unified chat target contract",
    "ALI": "D1 §5, §7.3, §8.3, §11.1 — compatibility flag aliases",
    "FIN": "D1 §7.4, §11.2 — final repository gates",
    "SMK": "D1 §7.4, §11.3 — smoke",
    "ACC": "D1 §7.4, §10 — acceptance",
    "FIT": "D1 §9.1, §8.3 — no fitting",
    "DS": "D1 §9.2–§9.4 — datasets",
    "MET": "D1 §9.5, §10 — metrics",
    "REL": "D1 §10 — release verdict",
    "SCH": "D2 §1, §3, §4, §5, §9 — Agent command catalog",
    "SCHCLI": "D2 §6, §7 — the `dws schema` command",
}


class FamilyCollector(pytest.Collector):
    """Groups the gate items of one family (``dws::SCH``); it collects nothing by itself."""

    def collect(self) -> Iterable[pytest.Item]:  # pragma: no cover - items are built by the session
        return []


class GateItem(pytest.Item):
    """Runs one gate (for one subject) against the session's :class:`~pytest_dws.context.Context`."""

    def __init__(
        self,
        *,
        gate: Gate,
        subject: str | None,
        contract: ContractSession,
        label: str | None = None,
        why: Exception | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(**kw)
        self.why = why  # the NotApplicable / target failure met while listing this gate's subjects
        self.gate = gate
        self.subject = subject  # what the gate function receives (None: a whole-run gate)
        self.label = label if label is not None else subject  # what the item name and baseline entries use
        self.contract = contract
        self.add_marker(f"dws_{gate.family.lower()}")
        for access in gate.access:
            self.add_marker("dws_" + access.name.lower())
        self.user_properties += [("dws_gate", gate.id), ("dws_doc", gate.doc)]
        if self.label is not None:
            self.user_properties.append(("dws_subject", self.label))

    def runtest(self) -> None:
        ctx, gate, baseline = self.contract.ctx, self.gate, self.contract.baseline
        if not any(ctx.available(a) for a in gate.access):
            _not_applicable(ctx_missing(ctx, gate))
        entry = baseline.lookup(gate.id, self.label)
        cases = baseline.case_entries(gate.id, self.label)
        before = set(ctx.observed)
        try:
            if self.why is not None:
                raise self.why
            if self.subject is None:
                gate.func(ctx)
            else:
                gate.func(ctx, self.subject)
        except NotApplicable as exc:
            _not_applicable(str(exc))
        except CaseFailures as exc:
            self._judge_cases(exc)
            return
        except AssertionError:
            self._baseline_use([entry[0]] if entry else [], [entry[0]] if entry else [])
            if entry is not None:
                pytest.xfail(f"baseline: {entry[1]}")
            raise
        finally:
            new = {k: ctx.observed[k] for k in set(ctx.observed) - before}
            if new:
                self.user_properties.append(("dws_observed", new))
            for name, payload in ctx.drain_sections().items():
                self.user_properties.append(("dws_section", (name, payload)))
        listed = sorted(e for e, _ in cases.values())
        self._baseline_use(listed + ([entry[0]] if entry else []), [])
        self._fail_stale(listed + ([entry[0]] if entry is not None and entry[0] != gate.id else []), "it")

    def _judge_cases(self, exc: CaseFailures) -> None:
        """A failure broken into cases: each failing case must be accepted by its own entry, or caused by a
        rule gate whose failure the baseline accepts (reported there); anything else fails the item."""
        baseline = self.contract.baseline
        v = baseline.judge_cases(self.gate.id, self.label, exc)
        self._baseline_use(v.entries_matched, v.entries_failed)
        self.user_properties.append(("dws_cases", {
            "failed": v.new, "accepted": v.accepted, "accounted": v.accounted, "stale": v.stale,
            "causes": {c: list(exc.causes[c]) for c in v.new if c in exc.causes}}))
        if v.coarse is not None and v.new:
            names = ", ".join(repr(entry_name(self.gate.id, self.label, c)) for c in v.new)
            raise AssertionError(f"{exc}\nbaseline entry {v.coarse!r} is coarser than this failure: a new case "
                                 f"would hide behind it; list the failing cases instead: {names}")
        if v.new:
            tail = (f"\n(also failing, accepted by the baseline: {', '.join(v.accepted)})" if v.accepted else "")
            raise AssertionError(exc.render(v.new) + tail)
        stale = [entry_name(self.gate.id, self.label, c) for c in v.stale]
        if v.coarse is not None and v.coarse != self.gate.id:
            stale.append(v.coarse)  # every case is accounted for: the coarse entry covers nothing
        self._fail_stale(stale, "the case")
        if v.accepted:
            pytest.xfail("baseline: " + "; ".join(f"[{c}] {r}" for c, r in v.accepted.items()))
        # Every failing case is caused by an accepted rule-gate failure, reported under that gate: pass.

    def _fail_stale(self, stale: list[str], what: str) -> None:
        """A baseline entry met by this item that did not fail: the baseline may only shrink knowingly."""
        if stale:
            pytest.fail(f"stale baseline entr{'y' if len(stale) == 1 else 'ies'} {', '.join(map(repr, stale))}: "
                        f"{what} passes now; remove it from {self.contract.baseline.path}", pytrace=False)

    def _baseline_use(self, matched: list[str], failed: list[str]) -> None:
        """Which baseline entries this item met and which of them failed (the recorder folds them, also under
        xdist, for the session's stale check)."""
        if matched:
            self.user_properties.append(("dws_baseline", {"matched": sorted(set(matched)),
                                                          "failed": sorted(set(failed))}))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """Gate verdicts read as the spec: the message and the doc reference, no traceback."""
        if isinstance(excinfo.value, AssertionError):
            return f"{self.name} ({self.gate.doc}): {self.gate.summary}\n{excinfo.value}"
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


def _not_applicable(reason: str) -> None:
    """Skip, reported at the gate's own location (so the summary line points at the gate, not here)."""
    raise pytest.skip.Exception(f"not applicable: {reason}", _use_item_location=True)


def ctx_missing(ctx: Any, gate: Gate) -> str:
    """The reason a gate cannot run: the first missing input, phrased as the option to set."""
    for access in sorted(gate.access, key=lambda a: a.value):
        try:
            ctx.require(access)
        except NotApplicable as exc:
            return str(exc)
    return "input missing"
