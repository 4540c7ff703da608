"""The reference generator (fixtures/reference/tools/generate_catalog.py): deterministic, offline, never writes
a reviewed input, fails in one line on an inconsistent input, and agrees with the suite's hash algorithms."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_dws.inputs.catalog import source_hash, surface_hash_e81
from pytest_dws.observe.sourcetree import files_under
from tests.conftest import reference_copy
from tests.test_schema_mutants import REF

EXPECT = __import__("tomllib").loads((REF / "expectations.toml").read_text(encoding="utf-8"))["schema"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return reference_copy(tmp_path / "ref")


def generate(tree: Path, *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    home = tree.parent / "home"
    home.mkdir(exist_ok=True)
    base = {"PATH": "/usr/bin:/bin", "HOME": str(home), "HTTP_PROXY": "http://127.0.0.1:1",
            "HTTPS_PROXY": "http://127.0.0.1:1"}
    return subprocess.run([sys.executable, "-I", "-S", "tools/generate_catalog.py"], cwd=tree, capture_output=True,
                          text=True, env={**base, **(env or {})}, check=False)


def test_regeneration_reproduces_the_committed_catalog_twice(tree: Path) -> None:
    committed = files_under(REF, EXPECT["generated"])
    assert generate(tree).returncode == 0
    first = files_under(tree, EXPECT["generated"])
    assert generate(tree).returncode == 0
    assert first == committed == files_under(tree, EXPECT["generated"])


def test_generation_never_writes_reviewed_inputs(tree: Path) -> None:
    before = files_under(tree, EXPECT["reviewed_inputs"])
    assert generate(tree).returncode == 0
    assert files_under(tree, EXPECT["reviewed_inputs"]) == before


@pytest.mark.parametrize(("mutate", "where"), [
    (lambda t: _edit(t / "internal/cli/schema_command_registry/products/chat.json",
                     lambda d: d["tools"].append({"canonical_path": "chat.ghost", "cli_path": "chat ghost"})),
     "schema_command_registry/products/chat.json"),
    (lambda t: (t / "skills/dingtalk-chat/SKILL.md").write_text("用 `dws chat ghost --x 1`\n", encoding="utf-8"),
     "reference-review.json"),
    (lambda t: (t / "internal/cli/schema_mcp_metadata.json").write_text("{", encoding="utf-8"),
     "schema_mcp_metadata.json"),
])
def test_inconsistent_input_is_one_line_and_writes_nothing(tree: Path, mutate, where: str) -> None:
    before = files_under(tree, EXPECT["generated"])
    mutate(tree)
    out = generate(tree)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and where in out.stderr and "Traceback" not in out.stderr
    assert files_under(tree, EXPECT["generated"]) == before


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


@pytest.mark.parametrize(("mutant", "same_twice", "inputs_kept"), [
    ("gen-timestamp", False, True), ("gen-edits-input", True, False)])
def test_generator_mutants(tree: Path, mutant: str, same_twice: bool, inputs_kept: bool) -> None:
    inputs = files_under(tree, EXPECT["reviewed_inputs"])
    env = {"DWS_REF_MUTANT": mutant}
    assert generate(tree, env=env).returncode == 0
    first = files_under(tree, EXPECT["generated"])
    assert generate(tree, env=env).returncode == 0
    assert (first == files_under(tree, EXPECT["generated"])) is same_twice
    assert (files_under(tree, EXPECT["reviewed_inputs"]) == inputs) is inputs_kept


def test_hashes_agree_with_the_suite() -> None:
    """The reference computes source_hash / surface_hash exactly as pytest_dws.inputs.catalog recomputes them (R1.7)."""
    cli = REF / "internal" / "cli"
    envelope = json.loads((cli / "schema_catalog" / "catalog.json").read_text(encoding="utf-8"))
    tools = {}
    for shard in sorted((cli / "schema_catalog" / "tools").glob("*.json")):
        tools.update(json.loads(shard.read_text(encoding="utf-8"))["tools"])
    assert source_hash(envelope["version"], envelope["surface_hash"], envelope["catalog"], tools) == \
        envelope["source_hash"]
    registry = [e for p in sorted((cli / "schema_command_registry" / "products").glob("*.json"))
                for e in json.loads(p.read_text(encoding="utf-8"))["tools"]]
    assert surface_hash_e81(registry) == envelope["surface_hash"]
