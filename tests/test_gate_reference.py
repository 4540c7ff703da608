"""The gate reference (docs/gates.md) is generated from the registry and must be current; ids are GATES.md's."""

from __future__ import annotations

from pathlib import Path

from pytest_dws.cli.gatedocs import inventory, render
from pytest_dws.registry import all_gates

DOC = Path(__file__).resolve().parents[1] / "docs" / "gates.md"


def test_inventory_has_the_107_gates_of_gates_md() -> None:
    inv = inventory()
    assert len([g for g, row in inv.items() if not row.get("own")]) == 107
    # ours, named: the reviewed agent contract, the trusted-host rule of the real binary (issue 34), the agent
    # evaluation (issue 36)
    assert sorted(g for g, row in inv.items() if row.get("own")) == [
        "EVAL-FIXTURES", "EVAL-HOLDOUT", "EVAL-METRICS", "EVAL-OBSERVED", "EVAL-VARIANT", "SCH-CONTRACT-SNAPSHOT",
        "SMK-LIVE", "WIRE-AUTH-TRUSTED"]
    assert all(row["doc"] and row["rule"] for row in inv.values())


def test_every_registered_gate_id_is_a_gates_md_id() -> None:
    inv = inventory()
    unknown = sorted({g.id for g in all_gates()} - set(inv))
    assert unknown == [], f"gate ids not in the inventory: {unknown}"


def test_every_registered_gate_has_a_doc_reference_and_a_summary() -> None:
    bad = [f"{g.id}/{g.part}" for g in all_gates() if not g.doc or not g.summary]
    assert bad == []


def test_docs_gates_md_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/gates.md is stale: run `python -m pytest_dws.cli.gatedocs > docs/gates.md`"
    )


def test_every_gate_part_states_its_observable_rule_in_docs_gates_md() -> None:
    """Issue 25 (1): each part says what it asserts at the boundary (its check's docstring), and docs/gates.md
    shows it beside the document's rule."""
    from pytest_dws.cli.gatedocs import observable

    bare = [f"{g.id}[{g.part}]" for g in all_gates() if len(observable(g)) < 20]
    assert bare == [], f"gate parts without an observable rule: {bare}"
    text = DOC.read_text(encoding="utf-8")
    assert all(observable(g) in text for g in all_gates())
