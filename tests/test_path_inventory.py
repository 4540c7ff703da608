"""The path inventory (issue 43, pytest_dws/inputs/data/paths.toml): every path a cited sentence covers is judged.

For each sentence a gate cites, the inventory lists the paths it covers (commands, flags and aliases, failure paths
of the binary, directions of a comparison, values, files); each path must name the gate's case that judges it, a
reference mutant a mutation matrix pins against that gate, or the test that builds a violating tree for it. A path
with none of them is a sentence judged on fewer paths than it names: this test fails, naming it.
"""

from __future__ import annotations

import ast
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.registry import gate_ids

REPO = Path(__file__).resolve().parents[1]
INVENTORY = REPO / "pytest_dws" / "inputs" / "data" / "paths.toml"
KINDS = {"command", "flag", "alias", "failure-path", "direction", "value", "field", "file"}


def _load(name: str) -> dict[str, Any]:
    return tomllib.loads((REPO / "tests" / name).read_text(encoding="utf-8"))


@cache
def pinned() -> dict[str, set[str]]:
    """mutant -> the gate ids some matrix pins it to fail."""
    out: dict[str, set[str]] = {}
    for name in ("mutation_matrix.toml", "mutation_matrix_default.toml"):
        for mutant, gates in _load(name)["mutants"].items():
            out.setdefault(mutant, set()).update(gates)
    for mutant, row in _load("mutation_matrix_schema.toml")["mutants"].items():
        out.setdefault(mutant, set()).update(row.get("kills", []))
    return out


@cache
def defined_tests(file: str) -> set[str]:
    tree = ast.parse((REPO / file).read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def sentences() -> list[dict[str, Any]]:
    return tomllib.loads(INVENTORY.read_text(encoding="utf-8"))["sentence"]


def _problems(sentence: dict[str, Any]) -> list[str]:
    gate = sentence["gate"]
    out = [] if gate in gate_ids() else [f"{gate} is not a registered gate"]
    for path in sentence["paths"]:
        label = f"{gate} ({sentence['doc']}): {path['path']}"
        if path.get("kind") not in KINDS:
            out.append(f"{label}: kind {path.get('kind')!r} not one of {sorted(KINDS)}")
        if not (path.get("case") or path.get("mutants") or path.get("tree")):
            out.append(f"{label}: neither a case of the gate, nor a mutant, nor a violating tree judges it")
        for mutant in path.get("mutants", []):
            if gate not in pinned().get(mutant, set()):
                out.append(f"{label}: mutant {mutant!r} is not pinned against {gate} in a tests/mutation_matrix*.toml")
        if tree := path.get("tree"):
            file, _, name = tree.partition("::")
            if not (REPO / file).is_file() or name not in defined_tests(file):
                out.append(f"{label}: {tree} is not a test of this repository")
    return out


@pytest.mark.parametrize("sentence", sentences(), ids=lambda s: f"{s['gate']} {s['doc']}")
def test_every_path_of_the_sentence_is_judged(sentence: dict[str, Any]) -> None:
    problems = _problems(sentence)
    assert not problems, "\n".join(problems)


def test_the_inventory_counts() -> None:
    """The figures the issue asks for: sentences, paths, and the distinct mutants that fail exactly on a path."""
    all_ = sentences()
    paths = [p for s in all_ for p in s["paths"]]
    mutants = {m for p in paths for m in p.get("mutants", [])}
    judged_by = {"case": sum(1 for p in paths if p.get("case")), "mutant": sum(1 for p in paths if p.get("mutants")),
                 "tree": sum(1 for p in paths if p.get("tree"))}
    print(f"path inventory: {len(all_)} sentences of {len({s['gate'] for s in all_})} gates, {len(paths)} paths, "
          f"{len(mutants)} mutants; paths with a case {judged_by['case']}, a mutant {judged_by['mutant']}, "
          f"a violating tree {judged_by['tree']}")
    assert len(all_) >= 13 and len(paths) >= len(all_)
    assert set(pinned()) >= mutants


def test_a_path_judged_by_nothing_fails(tmp_path: Path) -> None:
    """The rule itself: a path with no case, mutant or tree, or a mutant its matrix does not pin, is named."""
    bad = {"gate": "SMK-MEMBERS", "doc": "D1 §7.4", "paths": [
        {"kind": "command", "path": "an unjudged path"},
        {"kind": "command", "path": "a mutant pinned elsewhere", "mutants": ["drop-trace"]},
        {"kind": "file", "path": "a missing test", "tree": "tests/test_path_inventory.py::test_nothing_here"}]}
    problems = _problems(bad)
    assert len(problems) == 3 and "neither a case" in problems[0] and "drop-trace" in problems[1], problems
