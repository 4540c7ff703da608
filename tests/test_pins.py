"""Every pin is compared (issue 34): a count an expectations file pins is compared by the gates
``pytest_dws/inputs/data/count_names.toml`` names for it, or refused (exit 4, tests/test_bad_input.py), and a
totals part with nothing pinned is not applicable, never passed.

One run of the reference's default job with every pinnable count pinned to 9999: each gate the table names for a
count fails, and its failure names that count (D1 §11.2's "1009 executable command paths" is FIN-SKILL-COMMANDS'
``skill_command_paths``)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.inputs.expectations import count_gates, reported_only
from pytest_dws.registry import gate_ids

REPO = Path(__file__).resolve().parents[1]
REF = REPO / "fixtures" / "reference"
CLI = f"{{python}} -I -S {REF / 'dws'}"
GENERATOR = "{python} -I -S tools/generate_catalog.py"


def test_the_count_table_names_real_gates_and_no_count_twice() -> None:
    ids = set(gate_ids())
    named = {g for gates in [*count_gates().values(), *reported_only().values()] for g in gates}
    assert named <= ids, sorted(named - ids)
    assert not set(count_gates()) & set(reported_only())
    assert all(count_gates().values()), "a pinnable count without a gate that compares it"


def test_the_reference_pins_every_count_a_gate_compares() -> None:
    """The default target judges every totals part (issue 34 (4)): its expectations pin every comparable count."""
    pinned = tomllib.loads((REF / "expectations.toml").read_text(encoding="utf-8"))["counts"]
    # the cf-generation binding counts (v2 bindings file) do not apply to the reference's v3 file
    cf_only = {"historical_bindings", "binding_migrations", "binding_exclusions", "binding_additions"}
    assert set(count_gates()) - cf_only == set(pinned), sorted(set(count_gates()) - cf_only ^ set(pinned))


@pytest.mark.slow
def test_a_wrong_pin_fails_every_gate_that_compares_it(run_contract: Callable[..., Any], answered: list[str],
                                                        pytester: pytest.Pytester) -> None:
    real = tomllib.loads((REF / "expectations.toml").read_text(encoding="utf-8"))
    text = (REF / "expectations.toml").read_text(encoding="utf-8")
    wrong = "\n".join(f"{k} = 9999" for k in sorted(real["counts"]))
    text = re.sub(r"\[counts\].*?(?=\n\[)", "[counts]\n" + wrong + "\n", text, flags=re.S)
    expect = pytester.path / "expect.toml"
    expect.write_text(text, encoding="utf-8")
    run = run_contract("--dws-cli", CLI, "--dws-source", str(REF), "--dws-expect", str(expect),
                       "--dws-generator", GENERATOR, "-m", "dws_sch or dws_fin or dws_ali", *answered)
    assert run.ret == 1, run.output()[-3000:]
    out = run.output()
    failing = run.failing()
    for name in sorted(real["counts"]):
        gates = set(count_gates()[name])
        assert gates <= failing, f"{name} = 9999 does not fail {sorted(gates - failing)}"
        assert f"root['{name}']: 9999 -> " in out, f"no failure names {name}"
    reasons = " ".join(run.gates["FIN-SKILL-COMMANDS"].get("reasons") or [])
    assert "[pinned count]" in reasons and "'skill_command_paths': 9999" in reasons, reasons
    assert run.report["pins"]["not_compared"] == {}


def test_a_pin_whose_gate_did_not_judge_is_named(run_contract: Callable[..., Any]) -> None:
    """A pinned count whose gate was not selected (or not applicable) is listed, never silently accepted."""
    run = run_contract("--dws-cli", CLI, "--dws-source", str(REF), "--dws-expect", str(REF / "expectations.toml"),
                       "-k", "SCH-COUNTS")
    loose = run.report["pins"]["not_compared"]
    assert "skill_command_paths" in loose and loose["skill_command_paths"] == ["FIN-SKILL-COMMANDS"]
    assert "tools" not in loose and "products" not in loose
    assert "pinned count(s) no gate compared in this run" in run.output()


def test_a_totals_part_with_nothing_pinned_is_not_applicable(run_contract: Callable[..., Any]) -> None:
    """Without an expectations file the DATA totals parts judged nothing: not applicable, with the observed count
    and where to pin it (the reference once reported SCH-DESTRUCTIVE[data-totals] passed with 0 destructive tools
    and no pin)."""
    run = run_contract("--dws-source", str(REF), "-m", "dws_data", "-k", "DESTRUCTIVE or HIGH-RISK")
    parts = run.gates["SCH-DESTRUCTIVE"]["parts"]
    assert parts["data-totals"] == {"outcome": "not_applicable", "judged": 0}, parts
    assert parts["data"]["outcome"] == "passed" and parts["data"]["judged"] >= 1, parts
    assert any("pin it" in n for n in run.gates["SCH-DESTRUCTIVE"].get("notes") or [])
