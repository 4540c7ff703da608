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

import tempfile
from pathlib import Path
from typing import Any

from pytest_dws.registry import Access, Gate, NotApplicable, all_gates

#: The modules holding the DATA-layer gates (catalog files + the static source scan): sch_data*.
PREFIX = "pytest_dws.gates.sch_data"


def data_gates() -> list[Gate]:
    """Every registered gate part of the DATA layer."""
    return [g for g in all_gates() if g.func.__module__.startswith(PREFIX)]


def data_context(source: Path | None = None, catalog: Path | None = None, expect: Path | None = None) -> Any:
    """A contract context for a tree and/or catalog file (no binary), as the plugin would build it."""
    from pytest_dws.context import Context
    from pytest_dws.expectations import load_expectations
    from pytest_dws.settings import Settings

    settings = Settings(source=source, catalog=catalog, expect=expect, origin="judge")
    return Context(settings, load_expectations(expect), Path(tempfile.gettempdir()))


def judge(ctx: Any, gates: list[Gate] | None = None) -> dict[tuple[str, str | None], str]:
    """``{(gate id, subject): "passed" | "failed" | "not_applicable"}`` (several parts of one id: worst)."""
    order = ["failed", "passed", "not_applicable"]
    out: dict[tuple[str, str | None], str] = {}
    for gate in gates if gates is not None else data_gates():
        if not any(ctx.available(a) for a in gate.access):
            continue
        try:
            subjects: list[str | None] = list(gate.subjects(ctx)) if gate.subjects else [None]
        except NotApplicable:
            subjects = [None]
        for subject in subjects or [None]:
            try:
                gate.func(ctx) if subject is None else gate.func(ctx, subject)
                verdict = "passed"
            except NotApplicable:
                verdict = "not_applicable"
            except AssertionError:
                verdict = "failed"
            key = (gate.id, subject)
            if key not in out or order.index(verdict) < order.index(out[key]):
                out[key] = verdict
    return out


def failing(verdicts: dict[tuple[str, str | None], str]) -> set[str]:
    """Failed items named like the plugin's: ``GATE-ID`` or ``GATE-ID[subject]``."""
    return {g if s is None else f"{g}[{s}]" for (g, s), v in verdicts.items() if v == "failed"}


__all__ = ["Access", "data_context", "data_gates", "failing", "judge"]
