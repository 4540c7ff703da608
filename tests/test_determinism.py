"""Two runs on the same build give the same report apart from timings (issue 28): every random draw comes from
one seed, by default the build's own digest (printed, and settable with --dws-seed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WARM_START  # (the main job's start-up, as a user runs it)

REPO = Path(__file__).resolve().parents[1]

CLI = f"--dws-cli={{python}} -I -S {REPO / 'fixtures' / 'reference' / 'dws'}"

pytestmark = pytest.mark.slow


def _without_timings(report: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in report.items() if k != "invocations"}
    out["plan"] = {"batches": [{k: v for k, v in b.items() if k not in ("estimate_s", "line")}
                               for b in report.get("plan", {}).get("batches", [])]}
    return out


def test_two_runs_on_the_same_build_give_the_same_report(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    reports = []
    for n in (1, 2):
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dws-contract", CLI,
                               f"--dws-warm-start={WARM_START}", "-m",
                               "dws_ds or dws_rel or dws_met or dws_fit or dws_tgt", f"--dws-report=r{n}.json"],
                              cwd=tmp_path, capture_output=True, text=True, check=False, timeout=600,
                              env={k: v for k, v in os.environ.items() if not k.startswith("DWS_VARIANT")})
        assert proc.returncode == 0, proc.stdout[-2000:]
        reports.append(json.loads((tmp_path / f"r{n}.json").read_text(encoding="utf-8")))
    # nothing in the user's folder but the reports asked for (hypothesis' caches go to the run's temp tree)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pytest.ini", "r1.json", "r2.json"]
    assert reports[0]["datasets"]["seed"] == reports[1]["datasets"]["seed"]
    assert _without_timings(reports[0]) == _without_timings(reports[1])
