"""Judge a release with the DATA gates without a pytest session (benchmarks, scripts, quick checks).

The same registered gate functions run over the same subjects as in ``pytest --dws-contract``; only the
collection/reporting machinery is skipped. Used by ``bench/bench_data_gates.py`` and by the self-tests that
compare the upstream failing sets with the documented deviations.

Example::

    ctx = data_context(source=Path("dws-81f67c8d"))
    verdicts = judge(ctx)                       # {("SCH-REF-REVIEW", None): "failed", ...}
    failing = {k for k, v in verdicts.items() if v == "failed"}
"""

from __future__ import annotations

import contextlib
import gc
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.registry import Access, Gate, all_gates
from pytest_dws.verdict.fold import attempt

#: The modules holding the DATA-layer gates (catalog files + the static source scan).
PREFIX = ("pytest_dws.gates.sch.data", "pytest_dws.gates.sch.release", "pytest_dws.gates.sch.reviews")


def data_gates() -> list[Gate]:
    """Every registered gate part of the DATA layer."""
    return [g for g in all_gates() if g.func.__module__.startswith(PREFIX)]


def data_context(source: Path | None = None, catalog: Path | None = None, expect: Path | None = None) -> Any:
    """A contract context for a tree and/or catalog file (no binary), as the plugin would build it."""
    from pytest_dws.inputs.expectations import load_expectations
    from pytest_dws.inputs.settings import Settings
    from pytest_dws.observe.context import Context

    settings = Settings(source=source, catalog=catalog, expect=expect, origin="judge")
    return Context(settings, load_expectations(expect), Path(tempfile.gettempdir()))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector for a batch over a loaded release, then resume it.

    A release is tens of MB of parsed JSON held for the whole run, and every generational collection that
    the gates' allocations trigger re-traverses it (about 60 ms of CPU on the e81 tree, a third of the
    parse floor). Parsed JSON holds no reference cycles, so nothing is lost by not collecting mid-batch.
    On exit everything still alive is moved to the oldest generation (``gc.freeze()`` then ``gc.unfreeze()``,
    whose documented effect is exactly that) instead of letting the first young collection traverse the
    whole release once more; skipped when the process froze objects itself, a freeze we must not undo.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


def judge(ctx: GateContext, gates: list[Gate] | None = None) -> dict[tuple[str, str | None], str]:
    """``{(gate id, subject): "passed" | "failed" | "not_applicable"}`` (several parts of one id: worst).

    Runs with the garbage collector paused (:func:`gc_paused`).
    """
    with gc_paused():
        return _judge(ctx, gates)


def _judge(ctx: GateContext, gates: list[Gate] | None) -> dict[tuple[str, str | None], str]:
    order = ["failed", "passed", "not_applicable"]
    out: dict[tuple[str, str | None], str] = {}
    for gate in gates if gates is not None else data_gates():
        if not any(ctx.available(a) for a in gate.access):
            continue
        try:
            subjects: list[str | None] = list(gate.subjects(ctx)) if gate.subjects else [None]
        except NotApplicable:  # no subjects to judge (e.g. no binary for an embedded catalog): nothing to run
            out.setdefault((gate.id, None), "not_applicable")
            continue
        for subject in subjects or [None]:
            run = attempt(ctx, gate, subject, subject)  # the same run the gate's own item reports
            verdict = "failed" if run.failure else "not_applicable" if run.not_applicable is not None else "passed"
            key = (gate.id, subject)
            if key not in out or order.index(verdict) < order.index(out[key]):
                out[key] = verdict
    return out


def failing(verdicts: dict[tuple[str, str | None], str]) -> set[str]:
    """Failed items named like the plugin's: ``GATE-ID`` or ``GATE-ID[subject]``."""
    return {g if s is None else f"{g}[{s}]" for (g, s), v in verdicts.items() if v == "failed"}


__all__ = ["Access", "data_context", "data_gates", "failing", "judge"]
