"""Whole contract sessions for the DS / MET / REL / FIT gates: the reference passes them, and a mutant or a
fitted implementation makes exactly the intended gate fail, by its GATES.md id."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.inputs import datasets as ds
from pytest_dws.verdict import metrics

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "fixtures" / "reference" / "dws"
CLI = f"{{python}} -I -S {REFERENCE}"
GATES = ("DS-VARIANT-MATRIX", "DS-SAFETY-HOLDOUT", "MET-REPORT", "REL-ALL", "FIT-NO-OVERFIT")
SELECT = "dws_ds or dws_met or dws_rel or dws_fit"

pytestmark = pytest.mark.slow


def section(report: dict[str, Any], name: str) -> dict[str, Any]:
    """A gate-published report section (top level once the spine carries sections, else under observed)."""
    return report.get(name) or report.get("observed", {}).get(name) or {}


@pytest.fixture
def small_variant_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer generated variant cases, a seed of their own: for a run whose invocations all run live. A run answered
    from the recorded default job (``answered``) keeps the job's own knobs: other cases would run live."""
    monkeypatch.setenv("DWS_VARIANT_EXAMPLES", "20")
    monkeypatch.setenv("DWS_VARIANT_SEED", "20260803")


def test_reference_passes_and_reports_metrics_with_definitions(run_contract: Callable[..., Any],
                                                               answered: list[str]) -> None:
    run = run_contract("--dws-cli", CLI, "-m", SELECT, *answered)
    assert {g: run.status(g) for g in GATES} == dict.fromkeys(GATES, "passed"), run.output()
    sec = section(run.report, "metrics")
    assert set(sec["definitions"]) == set(metrics.DEFINITIONS)
    assert all(d["definition"] for d in sec["definitions"].values())
    for name in ("observed", "variant", "holdout", "all"):
        assert set(sec["datasets"][name]) == set(metrics.PRIMARY + metrics.RELIABILITY)
        assert "clean_rate" not in sec["datasets"][name]  # clean is shown apart, never folded in
        assert set(sec["clean"][name]) == {"clean_rate", "business_calls_per_case"}
    allm = sec["datasets"]["all"]
    assert (allm["wrong_selection"]["value"], allm["wrong_writes"]["value"], allm["duplicate_writes"]["value"]) == (
        0, 0, 0)
    assert sec["seed"] == run.report["datasets"]["seed"]
    release = section(run.report, "release")
    assert release["verdict"] == "pass" and all(c["ok"] for c in release["conditions"] if c["doc"] != "D1 §10 b5")
    b5 = next(c for c in release["conditions"] if c["doc"] == "D1 §10 b5")
    assert b5["ok"] is None and release["d1_10"]["state"] == "incomplete"  # repo, Schema, Skill: not selected


def test_pick_first_fails_the_release_on_wrong_selection(run_contract: Callable[..., Any], answered: list[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DWS_VARIANT_EXAMPLES", "0")
    run = run_contract("--dws-cli", CLI, "--dws-env", "DWS_REF_MUTANT=pick-first", "-m", "dws_rel", *answered)
    assert run.status("REL-ALL") == "failed"
    failed = {c["condition"]: c for c in section(run.report, "release")["conditions"] if not c["ok"]}
    assert "wrong selection = 0" in failed
    assert any(i.startswith("observed/ambiguous_same_name/") for i in failed["wrong selection = 0"]["cases"])
    assert "[wrong selection = 0 (D1 §10 b3)]" in run.output()


def test_unreadable_error_output_fails_the_metrics_report(run_contract: Callable[..., Any], answered: list[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Errors printed on stdout cannot be classified from typed fields: the metrics would be untrustworthy."""
    monkeypatch.setenv("DWS_VARIANT_EXAMPLES", "0")
    run = run_contract("--dws-cli", CLI, "--dws-env", "DWS_REF_MUTANT=error-on-stdout", "-m", "dws_met", *answered)
    assert run.status("MET-REPORT") == "failed"
    assert "could not be classified from typed fields" in run.output()


@pytest.mark.usefixtures("small_variant_run")
def test_an_implementation_fitted_to_the_dataset_values_fails_no_overfit(run_contract: Callable[..., Any],
                                                                        tmp_path: Path) -> None:
    """It behaves only when it sees the dataset files' own names/IDs, and picks the first namesake otherwise."""
    known = sorted({v for name in ("observed", "holdout") for c in ds.load_dataset(name)
                    for v in c.symbols.values()})
    wrapper = tmp_path / "fitted_dws.py"
    wrapper.write_text(
        "import os, sys\n"
        f"KNOWN = set({json.dumps(known, ensure_ascii=False)})\n"
        "if not KNOWN & set(sys.argv[1:]):\n"
        "    os.environ['DWS_REF_MUTANT'] = 'pick-first'\n"
        f"os.execv(sys.executable, [sys.executable, '-I', {str(REFERENCE)!r}, *sys.argv[1:]])\n",
        encoding="utf-8")
    run = run_contract("--dws-cli", f"{{python}} -I {wrapper}", "-m", "dws_fit")
    assert run.status("FIT-NO-OVERFIT") == "failed"
    assert "passes only with the dataset's fixed values" in run.output()
    assert run.report["datasets"]["seed"] == 20260803  # the environment's seed: the one the run draws and names
    assert sys.executable  # the wrapper re-executes the same interpreter


def test_accepted_causes_make_the_aggregates_xfailed_never_passed(run_contract: Callable[..., Any],
                                                                   answered: list[str], pytester: pytest.Pytester,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24: the baseline accepts the one rule gate that breaks a D1 §10 condition (the permission row of
    D1 §3.1 is missing). Nothing new fails, so the exit code is 0; but DS and REL judged failing cases, so they
    are xfailed with the accepted cause, and the terminal's D1 §10 line says NOT MET, like release.verdict."""
    monkeypatch.setenv("DWS_VARIANT_EXAMPLES", "0")
    pytester.makefile(".toml", base='[expected_failures]\n"ERR-PERMISSION" = "D1 §3.1 row 2: no permission row"\n'
                      '"ERR-NO-MISLEADING-HINT[advice: permission]" = "D1 §8.1: the fallback advice (no permission '
                      'row)"\n')
    run = run_contract("--dws-cli", CLI, "--dws-env", "DWS_REF_MUTANT=no-permission", "--dws-baseline",
                       "base.toml", "-m", "dws_err or dws_ds or dws_rel", *answered)
    assert run.result.ret == 0, run.output()
    assert section(run.report, "release")["verdict"] == "fail"
    statuses = {g: run.status(g) for g in ("ERR-PERMISSION", "DS-VARIANT-MATRIX", "REL-ALL")}
    assert statuses == dict.fromkeys(statuses, "xfailed"), run.output()
    rel = run.report["gates"]["REL-ALL"]["cases"][""]
    assert rel["accounted"] == {"variant: independent of fixed names and CIDs (D1 §9.1, §10 b2)": ["ERR-PERMISSION"]}
    line = next(x for x in run.output().splitlines() if x.startswith("release verdict (D1 §10)"))
    assert line.startswith("release verdict (D1 §10): NOT MET, 1 of ")
    assert line.endswith("all causes accepted by the baseline: ERR-PERMISSION (decided from the suite's own calls "
                         "(proxy: no --dws-agent))")


def test_the_release_line_says_met_only_on_the_judged_conditions(run_contract: Callable[..., Any],
                                                                 answered: list[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34 (5): b1-b4 hold, b5 ("whole repo, Schema, Skill and real read-only smoke") is not judged by this
    run: the line never says MET alone, it names b5 and what would judge it."""
    monkeypatch.setenv("DWS_VARIANT_EXAMPLES", "0")
    run = run_contract("--dws-cli", CLI, "-m", "dws_rel", *answered)
    assert section(run.report, "release")["verdict"] == "pass" and run.status("REL-ALL") == "passed"
    line = next(x for x in run.output().splitlines() if x.startswith("release verdict (D1 §10)"))
    assert line.startswith("release verdict (D1 §10): MET on 8 of 9 conditions; b5 not judged: whole repo ("), line
    assert "Schema (" in line and "Skill (" in line and "--dws-live-smoke" in line


def _gates(**statuses: str) -> dict[str, Any]:
    return {g: {"status": s} for g, s in statuses.items()}


def test_the_release_line_says_met_when_every_condition_is_judged_and_holds() -> None:
    from pytest_dws.session.summary import release_line
    from pytest_dws.verdict.release import complete

    rel = {"verdict": "pass", "conditions": [{"condition": f"c{i}", "doc": "D1 §10 b1", "ok": True} for i in range(8)]}
    every = _gates(**{"FIN-GO-TEST-ALL": "passed", "FIN-SCHEMA-CATALOG": "passed", "SCH-COUNTS": "passed",
                      "FIN-SKILL-COMMANDS": "passed", "SMK-LIVE": "passed"})
    assert release_line(complete(rel, every), "passed") == "release verdict (D1 §10): MET, 9 of 9 conditions hold"
    broken = {**every, "SCH-COUNTS": {"status": "failed"}}
    line = release_line(complete(rel, broken), "passed")
    assert line.startswith("release verdict (D1 §10): NOT MET, 1 of 9 conditions failed (D1 §10 b5)"), line
    assert "SCH-COUNTS" in line
    accepted = {**every, "SCH-COUNTS": {"status": "xfailed"}}
    assert release_line(complete(rel, accepted), "passed").endswith("all causes accepted by the baseline: SCH-COUNTS")
    no_smoke = {k: v for k, v in every.items() if k != "SMK-LIVE"}
    assert "b5 not judged: real read-only smoke" in release_line(complete(rel, no_smoke), "passed")


def test_a_run_names_the_baseline_entries_it_did_not_evaluate(run_contract: Callable[..., Any],
                                                               answered: list[str], pytester: pytest.Pytester,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24 (5): an entry whose gate or subject this run did not judge is neither accepted nor stale; the run
    says so (report and terminal), so a CI job can require that every entry was evaluated somewhere."""
    monkeypatch.setenv("DWS_VARIANT_EXAMPLES", "0")
    pytester.makefile(".toml", base='[expected_failures]\n"ERR-PERMISSION" = "D1 §3.1 row 2: no permission row"\n'
                      '"ERR-NO-MISLEADING-HINT[advice: permission]" = "D1 §8.1: the fallback advice (no permission '
                      'row)"\n')
    run = run_contract("--dws-cli", CLI, "--dws-env", "DWS_REF_MUTANT=no-permission", "--dws-baseline",
                       "base.toml", "-m", "dws_met", *answered)
    assert run.report["baseline_use"]["not_evaluated"] == ["ERR-NO-MISLEADING-HINT[advice: permission]",
                                                           "ERR-PERMISSION"]
    assert any("2 baseline entries not evaluated" in x for x in run.output().splitlines())
