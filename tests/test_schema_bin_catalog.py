"""`dws schema --all` as a catalog source: the core DATA gates judge what the binary embeds, and
SCHCLI-EQUALS-CATALOG catches a binary whose output differs from its catalog by a single field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_schema_mutants import REF

#: DATA gates of the core that judge a single catalog document (the rest need the tree's other artifacts).
CATALOG_GATES = {"SCH-AGENT-FIELDS", "SCH-CHAT-IDENTITIES", "SCH-CONSTRAINTS", "SCH-COUNTS", "SCH-DESTRUCTIVE",
                 "SCH-EXAMPLES", "SCH-HIGH-RISK-CONFIRM", "SCH-INTERFACE-FACTS-BOUNDED", "SCH-INTERFACE-REF",
                 "SCH-MCP-UNREVIEWED", "SCH-NO-CREDENTIALS", "SCH-RETIRED-REMOVED"}
CLI = ["--dws-cli", f"{{python}} -I -S {REF / 'dws'}"]


@pytest.fixture(scope="module")
def schema_all(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference binary's own catalog, as printed by `dws schema --all`."""
    out = subprocess.run([sys.executable, "-I", "-S", str(REF / "dws"), "schema", "--all"], capture_output=True,
                         check=True, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path_factory.mktemp("home"))})
    path = tmp_path_factory.mktemp("bin") / "schema-all.json"
    path.write_bytes(out.stdout)
    return path


def test_core_catalog_gates_pass_on_schema_all(run_contract, schema_all: Path) -> None:
    run = run_contract("--dws-catalog", str(schema_all), "--dws-expect", str(REF / "expectations.toml"),
                       "-m", "dws_data")
    statuses = {g: run.status(g) for g in CATALOG_GATES}
    assert set(statuses.values()) == {"passed"}, statuses
    assert not run.failing(), run.output()[-2000:]


@pytest.mark.parametrize("field", ["risk", "description", "parameters"])
def test_equals_catalog_catches_one_field(run_contract, schema_all: Path, tmp_path: Path, field: str) -> None:
    doc = json.loads(schema_all.read_text(encoding="utf-8"))
    leaf = doc["products"][0]["tools"][0]
    if field == "parameters":
        leaf["parameters"] = {**leaf["parameters"], "extra-flag": {"type": "string", "required": False,
                                                                   "description": "not a real flag"}}
    else:
        leaf[field] = "high" if field == "risk" else leaf[field] + "!"
    drifted = tmp_path / "catalog-on-disk.json"
    drifted.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    same = run_contract(*CLI, "--dws-catalog", str(schema_all), "-k", "SCHCLI-EQUALS-CATALOG")
    assert same.status("SCHCLI-EQUALS-CATALOG") == "passed", same.output()[-2000:]
    run = run_contract(*CLI, "--dws-catalog", str(drifted), "-k", "SCHCLI-EQUALS-CATALOG")
    assert run.status("SCHCLI-EQUALS-CATALOG") == "failed"
    assert leaf["canonical_path"] in " ".join(run.gates["SCHCLI-EQUALS-CATALOG"].get("failed_items", [])) + \
        run.output()
