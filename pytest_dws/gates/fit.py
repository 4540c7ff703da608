"""FIT-NO-OVERFIT, dynamic half: nothing may depend on the datasets' fixed names, CIDs, keywords or trace IDs.

The observed and holdout datasets run twice: with the synthetic values written in their files, and with fresh
random values of the same kind (seeded, printed). A case that passes only with the file's values is fitted
to them; a failing or stopping scenario that exits 0 is a non-zero exit turned into success (D1 §9.1).
The variant dataset is random by construction (DS-VARIANT-MATRIX). The static half (grep of the source for
case labels and fixed literals) is another part of this gate id.
"""

from __future__ import annotations

from typing import Any

from pytest_dws import attribution
from pytest_dws.cases import collect
from pytest_dws.gates import ds
from pytest_dws.judge import FAILURE_CLASSES
from pytest_dws.profile import active_profile
from pytest_dws.registry import Access, gate

_STOPS = FAILURE_CLASSES | {"expected_resolution_stop"}


@gate("FIT-NO-OVERFIT", doc="D1 §9.1, §8.3", access={Access.MCP}, part="dynamic")
def no_overfit_dynamic(ctx: Any) -> None:
    """Every observed/holdout verdict holds with randomised names and IDs; failing scenarios keep non-zero exits."""
    prof = active_profile(ctx)
    checks: list[tuple[str, Any, list[str]]] = []
    for name in ("observed", "holdout"):
        fixed = {r.case.id: r for r in ds.results(ctx, name)}
        for r in ds.randomised(ctx, name):
            if r.not_applicable:
                continue
            base = fixed.get(r.case.id)
            if not r.passed and base is not None and base.passed:
                fitted = (f"passes only with the dataset's fixed values; with random values: {'; '.join(r.problems)} "
                          f"(argv: {' '.join(r.argv)})")
                checks.append((r.case.id, attribution.failing(fitted), []))
                continue
            expected_stop = r.expect.get("class") in _STOPS and r.expect.get("result") != "partial"
            if expected_stop and r.judgement.evidence.get("exit_code") == 0:
                # The exit 0 is that case's own failure (e.g. a retried write that then succeeded): its cause.
                message = f"a {r.expect['class']} scenario exited 0 (argv: {' '.join(r.argv)})"
                checks.append((r.case.id, attribution.failing(message), attribution.dataset_causes(prof, r)))
    collect(checks, header=f"results depend on fixed names/IDs or hide failures ({ds.replay(ctx)}):")
