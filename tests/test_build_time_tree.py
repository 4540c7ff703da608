"""A tree that assembles its catalog at build time (issue 27 (1)): upstream retired the committed JSON catalog in
August 2026. The DATA gates then judge the catalog the binary embeds (`schema --all`), the report says so, the
regeneration gates say why they do not apply, and two `schema --all` of the build must be byte-identical. Without
a binary nothing of the catalog can be judged: a DATA run is exit 4."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import reference_copy

REF = Path(__file__).resolve().parents[1] / "fixtures" / "reference"

#: A build whose `schema --all` differs from run to run (a nonce): the byte-identical rule's violating input.
NONDETERMINISTIC = """#!{python}
import json, os, subprocess, sys
argv = sys.argv[1:]
proc = subprocess.run([sys.executable, "-I", "-S", {dws!r}, *argv], capture_output=True)
if argv == ["schema", "--all"] and proc.returncode == 0:
    doc = json.loads(proc.stdout)
    doc["assembled_at"] = os.urandom(8).hex()
    sys.stdout.write(json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=2) + "\\n")
else:
    sys.stdout.buffer.write(proc.stdout)
sys.stderr.buffer.write(proc.stderr)
sys.exit(proc.returncode)
"""


@pytest.fixture
def build_time(tmp_path: Path) -> tuple[Path, Path]:
    """(the tree without a committed catalog, the built binary that embeds it)."""
    tree = reference_copy(tmp_path / "tree")
    for old in (tree / "internal" / "cli").glob("schema_catalog*"):
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    build = reference_copy(tmp_path / "build")
    return tree, build


def test_the_data_gates_judge_the_catalog_the_binary_embeds(build_time: tuple[Path, Path],
                                                            run_contract: Any) -> None:
    tree, build = build_time
    run = run_contract("--dws-source", str(tree), "--dws-cli", f"{{python}} -I -S {build / 'dws'}",
                       "--dws-generator", "{python} -I -S tools/generate_catalog.py",
                       "-k", "SCH-AGENT-FIELDS or SCH-DESTRUCTIVE or SCH-BYTE-IDENTICAL or SCH-NO-DRIFT")
    assert run.ret == 0, run.output()[-2000:]
    assert "binary" in run.report["catalog"]["from"]
    assert run.status("SCH-AGENT-FIELDS") == "passed" and run.status("SCH-DESTRUCTIVE") == "passed"
    assert run.status("SCH-BYTE-IDENTICAL") == "passed"  # its [bin] part; [src] is not applicable
    assert run.status("SCH-NO-DRIFT") == "not_applicable"
    assert "assembles its catalog at build time" in " ".join(run.gates["SCH-NO-DRIFT"]["notes"])
    assert "catalog: from the binary" in run.output()


def test_two_different_schema_all_of_one_build_fail_the_byte_identical_rule(build_time: tuple[Path, Path],
                                                                           run_contract: Any,
                                                                           tmp_path: Path) -> None:
    tree, build = build_time
    wrapper = tmp_path / "nondeterministic.py"
    wrapper.write_text(NONDETERMINISTIC.format(python=sys.executable, dws=str(build / "dws")), encoding="utf-8")
    wrapper.chmod(0o755)
    run = run_contract("--dws-source", str(tree), "--dws-cli", str(wrapper), "-k", "SCH-BYTE-IDENTICAL")
    assert run.ret == 1 and run.failing() == {"SCH-BYTE-IDENTICAL"}, run.output()[-2000:]


def test_without_a_binary_the_catalog_cannot_be_judged_and_a_data_run_is_bad_input(build_time: tuple[Path, Path],
                                                                                 run_contract: Any) -> None:
    tree, _ = build_time
    run = run_contract("--dws-source", str(tree), "-m", "dws_data")
    assert run.ret == 4, run.output()[-2000:]
    assert "nothing was judged" in run.output() and "not applicable for want of --dws-cli" in run.output()
