"""The shipped release files (expectations, baselines) are well-formed and name real gate items."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pytest_dws.cli.gatedocs import inventory
from pytest_dws.inputs.expectations import load_expectations
from pytest_dws.verdict.baseline import load_baseline, split_entry

RELEASES = Path(__file__).resolve().parents[1] / "fixtures" / "releases"


@pytest.mark.parametrize("path", sorted(RELEASES.glob("*/baseline*.toml")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_baselines_name_inventory_gates_with_reasons(path: Path) -> None:
    baseline = load_baseline(path)  # validates the entry syntax and the mandatory reasons
    assert baseline.entries
    unknown = sorted(e for e in baseline.entries if e.split("[", 1)[0] not in inventory())
    assert unknown == []


def test_binary_baseline_subjects_are_items_of_a_binary_run(pytester: pytest.Pytester) -> None:
    """Subject-level entries must match item names that a run with a binary collects (same profile)."""
    from conftest import REFERENCE_CLI

    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("--dws-contract", "--dws-cli", " ".join(REFERENCE_CLI), "--collect-only", "-q",
                                "-p", "no:cacheprovider")
    collected: dict[str, set[str | None]] = {}
    for line in result.outlines:
        if line.startswith("dws::"):
            gate_id, inner = split_entry(line.rsplit("::", 1)[-1])
            collected.setdefault(gate_id, set()).add(inner)
    baseline = load_baseline(RELEASES / "81f67c8d" / "baseline-binary.toml")
    # Per-tool SCH subjects come from the binary's own catalog (the reference has other tools): those entries are
    # checked against the real build by tests/test_real_binaries.py; the profile-derived subjects here.
    baseline.entries = {e: r for e, r in baseline.entries.items() if not e.startswith("SCH-")}
    problems = baseline.problems(collected)  # an unknown subject or case spelling is reported here
    assert [p for p in problems if p.startswith("unknown")] == []
    assert all(split_entry(e)[0] in collected for e in baseline.entries)


@pytest.mark.parametrize("path", sorted(RELEASES.glob("*/expectations.toml")), ids=lambda p: p.parent.name)
def test_expectations_pin_the_document_counts(path: Path) -> None:
    expect = load_expectations(path)
    assert expect.get("tools") and expect.get("products")


def test_scenarios_ship_inside_the_wheel() -> None:
    """pyproject maps fixtures/scenarios to the package pytest_dws._scenarios, which the runtime gates read
    when installed from a wheel (no checkout beside them)."""
    import tomllib

    from pytest_dws.inputs.datasets import scenarios_root

    repo = RELEASES.parents[1]
    setup = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "pytest_dws._scenarios" in setup["packages"]
    assert (repo / setup["package-dir"]["pytest_dws._scenarios"]).resolve() == scenarios_root().resolve()
    assert (scenarios_root() / "d1" / "world.json").is_file()


def test_every_package_of_the_tree_ships() -> None:
    """A sub-package missing from pyproject's explicit list would work in the editable install of a checkout and
    be absent from the wheel a user installs: every folder with an __init__.py is listed."""
    repo = Path(__file__).resolve().parents[1]
    setup = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {".".join(p.parent.relative_to(repo).parts) for root in ("pytest_dws", "fake_mcp")
             for p in (repo / root).rglob("__init__.py")}
    assert found <= set(setup["packages"]), sorted(found - set(setup["packages"]))
