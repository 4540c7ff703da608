"""``python -m pytest_dws release init`` (issue 27 (3)): from a run with one injected regression and the previous
release folder, the new folder carries the entries that still fail, drops the one that passes (listed), and lists
the new failure as TRIAGE, which a run then refuses (exit 4)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from pytest_dws.cli.release import plan

REF = Path(__file__).resolve().parents[1] / "fixtures" / "reference"
CLI = f"{{python}} -I -S {REF / 'dws'}"


def _run(run_contract: Any, mutants: str, *extra: str) -> Any:
    return run_contract("--dws-cli", CLI, "-m", "dws_err", f"--dws-env=DWS_REF_MUTANT={mutants}", *extra)


#: the gates the no-permission mutant fails
NO_PERMISSION = ("ERR-PERMISSION", "ERR-NO-MISLEADING-HINT[advice: permission]")


def test_release_init_carries_drops_and_triages(run_contract: Any, tmp_path: Path, answered: list[str]) -> None:
    # The previous release: ERR-PERMISSION failed (accepted), and an entry for a case that passes now.
    before = _run(run_contract, "no-permission", *answered)
    _, _, first = plan(before.report, {})
    # no-permission classifies PERMISSION_DENIED as a business error, whose advice (check the parameters) is also
    # not the permission class's (issue 43): both gates name the deviation
    assert first and all(e.startswith(NO_PERMISSION) for e in first), first
    previous = tmp_path / "prev"
    previous.mkdir()
    (previous / "expectations.toml").write_text('[release]\nname = "prev"\n\n[counts]\n', encoding="utf-8")
    lines = [f'"{e}" = "D1 §3.1 row 3: reason business_error (observed)"' for e in first]
    lines.append('"ERR-PARAM[param-code]" = "fixed since: passes now"')
    (previous / "baseline-binary.toml").write_text("[expected_failures]\n" + "\n".join(lines) + "\n",
                                                   encoding="utf-8")
    # The new release: the same deviation, and a regression (the trace ID is dropped).
    after = _run(run_contract, "no-permission,drop-trace", f"--dws-baseline={previous / 'baseline-binary.toml'}",
                 *answered)
    report = tmp_path / "after.json"
    report.write_text(__import__("json").dumps(after.report), encoding="utf-8")
    new = tmp_path / "new"
    proc = subprocess.run([sys.executable, "-m", "pytest_dws", "release", "init", str(report), "--from",
                           str(previous), "-o", str(new)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "dropped: ERR-PARAM[param-code]" in proc.stdout
    written = tomllib.loads((new / "baseline-binary.toml").read_text(encoding="utf-8"))["expected_failures"]
    assert {e for e in written if e.startswith(NO_PERMISSION)} == set(first)
    assert "ERR-PARAM[param-code]" not in written
    reasons = {e: r["reason"] if isinstance(r, dict) else r for e, r in written.items()}
    triage = {e: r for e, r in reasons.items() if r.startswith("TRIAGE:")}
    assert triage and all(e.startswith("ERR-DIAG-PRESERVED") for e in triage), written
    counts = tomllib.loads((new / "expectations.toml").read_text(encoding="utf-8"))
    assert counts["release"] == {"name": "prev"} and isinstance(counts["counts"], dict)
    # A run refuses a baseline that still holds a TRIAGE reason.
    refused = _run(run_contract, "no-permission,drop-trace", f"--dws-baseline={new / 'baseline-binary.toml'}")
    assert refused.ret == 4 and "to triage" in refused.output(), refused.output()[-1500:]


def test_a_new_failure_quotes_the_entry_whose_case_was_split() -> None:
    """An old baseline's per-tool case that the suite splits per flag (SCH-REQUIRED-FROM-CLI `required` ->
    `without --FLAG`) is named in the run's unknown cases: each new failure of that gate and tool is written to
    triage quoting the old entry and its reason (a person confirms it per flag), the old entry is dropped."""
    old = {"SCH-REQUIRED-FROM-CLI[t.x/required]": "D2 §3: runs without --a"}
    report = {"baseline_use": {"failed": [], "unknown_cases": {"SCH-REQUIRED-FROM-CLI[t.x/required]": ["without --a"]}},
              "gates": {"SCH-REQUIRED-FROM-CLI": {
                  "status": "failed", "failed_items": ["t.x", "t.y"], "reasons": ["schema marks --a required"],
                  "cases": {"t.x": {"failed": ["without --a"], "facts": {"without --a": {"exit": 0}}},
                            "t.y": {"failed": ["without --b"]}}}}}
    carried, dropped, triage = plan(report, old)
    assert not carried and dropped == ["SCH-REQUIRED-FROM-CLI[t.x/required]"]
    split = triage["SCH-REQUIRED-FROM-CLI[t.x/without --a]"]
    assert split["fingerprint"] == {"exit": 0}
    assert split["reason"].startswith("TRIAGE:") and "was 'SCH-REQUIRED-FROM-CLI[t.x/required]': D2 §3" in split[
        "reason"]
    assert "was" not in triage["SCH-REQUIRED-FROM-CLI[t.y/without --b]"]
