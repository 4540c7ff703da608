"""Baseline entries bind their cause (issue 24 (4)): an entry may carry the fingerprint of the failure it accepts
(typed facts: exit code, error reason and category, the failing fields, the backend tools called); the same item
or case failing with other facts is a new failure that names both. ``release init`` writes the fingerprints a run
observed (the migration of an old baseline)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_dws.cli.release import plan
from pytest_dws.verdict.baseline import load_baseline

REF = Path(__file__).resolve().parents[1] / "fixtures" / "reference"
CLI = f"{{python}} -I -S {REF / 'dws'}"


def _run(run_contract: Any, tmp_path: Path, fingerprint: str, *, mutant: str = "no-permission") -> Any:
    base = tmp_path / "baseline.toml"
    base.write_text('[expected_failures]\n"ERR-PERMISSION" = {reason = "D1 §3.1 row 3: business_error observed", '
                    f'fingerprint = {{{fingerprint}}}}}\n', encoding="utf-8")
    return run_contract("--dws-cli", CLI, "-k", "ERR-PERMISSION", f"--dws-env=DWS_REF_MUTANT={mutant}",
                        f"--dws-baseline={base}")


def test_the_same_cause_is_accepted(run_contract: Any, tmp_path: Path) -> None:
    run = _run(run_contract, tmp_path, 'exit = 1, reason = "business_error"')
    assert run.ret == 0 and run.status("ERR-PERMISSION") == "xfailed", run.output()[-1500:]


def test_another_cause_is_a_new_failure_naming_both(run_contract: Any, tmp_path: Path) -> None:
    run = _run(run_contract, tmp_path, 'exit = 1, reason = "mcp_tool_error"')
    assert run.ret == 1 and run.status("ERR-PERMISSION") == "failed", run.output()[-1500:]
    assert "fails for another cause" in run.output()
    assert "'mcp_tool_error' -> 'business_error'" in run.output()


def test_release_init_writes_the_observed_fingerprints(run_contract: Any) -> None:
    run = run_contract("--dws-cli", CLI, "-k", "ERR-PERMISSION", "--dws-env=DWS_REF_MUTANT=no-permission")
    _, _, triage = plan(run.report, {})
    assert triage["ERR-PERMISSION"]["fingerprint"]["reason"] == "business_error"
    carried, _, _ = plan({**run.report, "baseline_use": {"failed": ["ERR-PERMISSION"]}},
                         {"ERR-PERMISSION": "D1 §3.1 row 3"})
    assert carried["ERR-PERMISSION"] == {"reason": "D1 §3.1 row 3", "fingerprint": triage["ERR-PERMISSION"][
        "fingerprint"]}


def test_a_malformed_fingerprint_is_one_line(tmp_path: Path) -> None:
    import pytest

    from pytest_dws.core.errors import DwsInputError

    base = tmp_path / "b.toml"
    base.write_text('[expected_failures]\n"ERR-PERMISSION" = {reason = "r", fingerprint = "exit 1"}\n',
                    encoding="utf-8")
    with pytest.raises(DwsInputError, match=r"ERR-PERMISSION'\.fingerprint"):
        load_baseline(base, ["ERR-PERMISSION"])
