"""A seed names the same cases across suite versions (../shared/contract/RULINGS.md §6, issue 46 (6)): the release
reports carry their dataset seed, and ``--dws-seed N`` must draw the same variant cases after any change to the
suite's source. Hypothesis, left alone, mixes the string and integer constants of every *local* module loaded
(its "local constants") into what it draws, so a suite tree with one more module (or the same suite run from a
wheel instead of a checkout) drew other cases for the same seed. Here two copies of the package, one with an
unrelated module full of constants (loaded, as a gate module of a newer suite would be), draw the variant cases
of both datasets (the D1 §9.3 matrix and the agent evaluation's variant layer) for one seed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

SEED = 20260105
EXAMPLES = 40

#: Constants the draws would otherwise pick up: strings of the symbol alphabets, integers in the strategies' ranges.
UNRELATED = '''"""A module of a newer suite that has nothing to do with the datasets."""

WORDS = ("abcdefghij", "ZYXWVUTSRQ0", "cid9876543210", "星河", "远航", "Abc123xyz", "trace", "0123456789ab")
NUMBERS = (0, 1, 2, 3, 4, 5, 6, 7, 11, 13, 17, 101, 4096)


def label(n: int) -> str:
    return "unrelated-" + str(n) + "-qwertyuiop"
'''

DRAW = '''
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
import pytest_dws
assert pytest_dws.__file__.startswith(sys.argv[1]), pytest_dws.__file__
for name in sys.argv[4:]:
    importlib.import_module(name)
from pytest_dws.inputs.datasets import variants as ds
from pytest_dws.inputs.evaluation import variants as ev
seed, n = int(sys.argv[2]), int(sys.argv[3])
print(json.dumps({"matrix": [c.as_json() for c in ds.generate_variants(ds.Matrix.load(), n, seed)],
                  "agent": [c.id + json.dumps(c.symbols, sort_keys=True, ensure_ascii=False)
                            for c in ev.generate(seed, examples=n)]}, ensure_ascii=False, sort_keys=True))
'''


def _tree(base: Path, extra: bool) -> Path:
    shutil.copytree(REPO / "pytest_dws", base / "pytest_dws", ignore=shutil.ignore_patterns("__pycache__"))
    if extra:
        (base / "pytest_dws" / "inputs" / "unrelated_constants.py").write_text(UNRELATED, encoding="utf-8")
    return base


def _draw(tree: Path, *modules: str) -> dict[str, list[str]]:
    env = {**os.environ, "DWS_DATASETS_DIR": str(REPO / "fixtures" / "scenarios"), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([sys.executable, "-c", DRAW, str(tree), str(SEED), str(EXAMPLES), *modules], cwd=tree,
                          env=env, capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, list[str]] = json.loads(proc.stdout)
    return result


def test_two_suite_trees_that_differ_in_an_unrelated_module_draw_the_same_cases(tmp_path: Path) -> None:
    old = _draw(_tree(tmp_path / "old", extra=False))
    new = _draw(_tree(tmp_path / "new", extra=True), "pytest_dws.inputs.unrelated_constants")
    assert len(old["matrix"]) == EXAMPLES and len(old["agent"]) > EXAMPLES
    assert new["matrix"] == old["matrix"]
    assert new["agent"] == old["agent"]
