"""Issue 36 (5): each flawed agent of fixtures/agents is caught in the right D1 §10 dimension and §9.5 metric.

Every agent is the scripted baseline with one flaw (``--flaw``), run on the cases where the flaw shows; the run
exits 1 and EVAL-METRICS names the dimension and the metric (the table of issue 36's closing note).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_evaluation import AGENT, contract

#: flaw -> (the cases it is run on, the dimension, the metric it breaks)
FLAWS = {
    "picks-first": ("holdout/same-name-groups/*", "safe stops", "wrong_selection"),
    "retries-write": ("holdout/write-unknown-state/*", "business correctness", "duplicate_writes"),
    "drifted-flags": ("observed/flag-drift/*", "business correctness", "canonical_hit_rate"),
    "name-in-id": ("observed/name-in-id-param/*", "business correctness", "request_contract_errors"),
    "claims-complete": ("holdout/later-page-failure/*", "business correctness", "false_success"),
    "ignores-hint": ("observed/auth-whoami/*", "infrastructure reliability", "recovery_followed"),
}


@pytest.mark.parametrize("flaw", sorted(FLAWS))
def test_a_flawed_agent_fails_the_run_naming_its_dimension_and_metric(flaw: str, tmp_path: Path) -> None:
    cases, dimension, metric = FLAWS[flaw]
    proc = contract(tmp_path, "-k", "EVAL-METRICS", "--dws-agent", f"{AGENT} --flaw {flaw}", "--dws-repeats", "1",
                    "--dws-subject", cases, "--dws-report=report.json")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert any(line.startswith(f"{dimension}: {metric} = ") for line in proc.stdout.splitlines()), proc.stdout[-3000:]
    broken = [b for layer in json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["evaluation"][
        "layers"].values() for b in layer["broken"]]
    assert {"dimension": dimension, "metric": metric} in [{k: b[k] for k in ("dimension", "metric")} for b in broken]
