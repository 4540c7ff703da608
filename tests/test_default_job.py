"""The README's main job (`pytest --dws-contract` on the embedded reference) judges something in every gate part it
reports passed (issue 34 (3), (4)): the reference exercises every rule it is the default target for (destructive
tools, high-risk writes, several profiles, a test snapshot, every pinned count), and the D1 §10 line names b5's
state instead of saying MET while a condition is not judged. One whole default job, run once for every worker of
the test run (tests/once.py) and recorded as a user records it: tests/test_recording.py replays the same run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.once import made_once

REPO = Path(__file__).resolve().parents[1]

#: The parts the reference cannot judge, and why (what would judge them): anything else not applicable is a rule
#: the default target stopped exercising.
IDLE = {
    ("FIN-DRIFT", ""), ("FIN-FOCUSED-TESTS", ""), ("FIN-GO-GENERATE", ""), ("FIN-GO-TEST-ALL", ""),
    ("FIN-GOFMT", ""), ("FIN-SCHEMA-CATALOG", "script"),  # a Go tree and its toolchain
    ("SCH-NO-LISTTOOLS", "src"),  # Go code to scan
    ("SCH-BYTE-IDENTICAL", "bin"),  # the tree commits its catalog: regeneration is judged by [src]
    ("SCH-CONTRACT-SNAPSHOT", ""),  # no reviewed agent-contract snapshot in the reference's folder
    ("SMK-LIVE", ""),  # opt-in, the real service (--dws-live-smoke)
    # the agent evaluation: opt-in, --dws-agent
    *((g, "") for g in ("EVAL-FIXTURES", "EVAL-HOLDOUT", "EVAL-METRICS", "EVAL-OBSERVED", "EVAL-VARIANT")),
}


def _run_main_job(work: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--dws-contract", "-p", "no:cacheprovider", "-q",
                           f"--dws-record={work / 'rec'}", f"--dws-report={work / 'report.json'}"], cwd=REPO,
                          capture_output=True, text=True, check=False, timeout=1800)
    (work / "ret").write_text(str(proc.returncode), encoding="utf-8")
    (work / "output.txt").write_text(proc.stdout + proc.stderr, encoding="utf-8")


def readme_main_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the README's main job run in the repository, recorded (``--dws-record``: the same run, its
    invocations kept beside it): ``ret``, ``output.txt``, ``report.json`` and the recording ``rec``. Why recorded:
    tests/test_recording.py needs the default job recorded as a user records it, and one whole job does for both
    (issue 44: a recording changes no verdict, and its replay is proved to give the live run's, item by item)."""
    return made_once(tmp_path_factory, "readme-main-job", _run_main_job)


@pytest.fixture(scope="module")
def default_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], str]:
    work = readme_main_job(tmp_path_factory)
    report = json.loads((work / "report.json").read_text(encoding="utf-8"))
    return int((work / "ret").read_text(encoding="utf-8")), report, (work / "output.txt").read_text(encoding="utf-8")


@pytest.mark.slow
def test_no_gate_part_passes_with_zero_judged_subjects(default_job: tuple[int, dict[str, Any], str]) -> None:
    code, report, out = default_job
    assert code == 0, out[-3000:]
    parts = {(g, p): v for g, entry in report["gates"].items() for p, v in entry["parts"].items()}
    empty = sorted(k for k, v in parts.items() if v["outcome"] == "passed" and v["judged"] < 1)
    assert not empty, f"gate parts reported passed that judged nothing: {empty}"
    idle = {k for k, v in parts.items() if v["outcome"] == "not_applicable"}
    assert idle == IDLE, f"not applicable on the reference: unexpected {sorted(idle - IDLE)}, judged now " \
                         f"{sorted(IDLE - idle)}"
    # the rules the reference now exercises (issue 34 (4)): each judged at least one subject
    for key in [("SCH-DESTRUCTIVE", "data"), ("SCH-DESTRUCTIVE", "bin"), ("SCH-DESTRUCTIVE", "data-totals"),
                ("SCH-HIGH-RISK-CONFIRM", "data"), ("SCH-HIGH-RISK-CONFIRM", "bin"),
                ("ERR-JSON-CONSISTENT", "multi-profile"), ("DS-SAFETY-HOLDOUT", "cross-profile"),
                ("FIT-NO-OVERFIT", "snapshots"),
                ("SCH-NO-SELF-REPLAY", "regen"), ("WIRE-AUTH-TRUSTED", "")]:
        assert parts[key]["outcome"] == "passed" and parts[key]["judged"] >= 1, (key, parts[key])
    assert report["pins"]["not_compared"] == {}, report["pins"]


@pytest.mark.slow
def test_the_release_line_names_the_state_of_b5(default_job: tuple[int, dict[str, Any], str]) -> None:
    _, report, out = default_job
    line = next(x for x in out.splitlines() if x.startswith("release verdict (D1 §10)"))
    assert line.startswith("release verdict (D1 §10): MET on 8 of 9 conditions; b5 not judged: "), line
    assert "whole repo" in line and "real read-only smoke" in line and "--dws-live-smoke" in line
    b5 = next(c for c in report["release"]["conditions"] if c["doc"] == "D1 §10 b5")
    assert b5["ok"] is None and b5["parts"] == {"whole repo": "not judged", "Schema": "passed", "Skill": "passed",
                                                "real read-only smoke": "not judged"}
    assert report["release"]["d1_10"]["state"] == "incomplete"


@pytest.mark.slow
def test_the_not_applicable_lines_of_the_main_job_read(default_job: tuple[int, dict[str, Any], str]) -> None:
    """Issue 46 (4): each "not applicable for want of ..." line names what is missing as a phrase (typed ``wants``)."""
    from tests.test_closing_lines import assert_lines_read

    assert_lines_read(default_job[1])
