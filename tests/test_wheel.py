"""The wheel works outside this repository (issue 46 (3)): ``python -m build`` makes an sdist and, from it, a wheel
that ``twine check --strict`` passes; the wheel, installed into a fresh venv and run from an empty folder (no ini
file, no checkout beside it), judges the reference (exit 0) and refuses a run with no target in one line (exit 4).
Whatever a gate reads at run time (scenarios, datasets, schemas, the stdio test plugin) is inside the package.

To stay near a minute the build runs without isolation (setuptools and wheel come from the test extra) and the
fresh venv has no pip and no dependencies of its own: the wheel is installed into it ``--no-deps`` by this
interpreter's pip, and a ``.pth`` line lends it this venv's site-packages for pytest, jsonschema, hypothesis ...
(a path line: the editable install's own finder there is not run, so ``pytest_dws`` is the wheel's)."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.conftest import REPO, WARM_START

REFERENCE = REPO / "fixtures" / "reference"


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False, timeout=timeout)


@pytest.mark.slow
def test_the_built_wheel_judges_the_reference_from_an_empty_folder(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(REPO)], REPO)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in dist.iterdir())
    twine = _run([sys.executable, "-m", "twine", "check", "--strict", str(wheels[0]), str(sdists[0])], tmp_path)
    assert twine.returncode == 0, twine.stdout + twine.stderr

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        tmp_path).stdout.strip())
    (purelib / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    installed = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                      "--no-index", str(wheels[0])], tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    empty = tmp_path / "empty"
    empty.mkdir()
    where = _run([str(python), "-c", "import pytest_dws; print(pytest_dws.__file__)"], empty)
    assert Path(where.stdout.strip()).is_relative_to(purelib), where.stdout + where.stderr

    report = empty / "report.json"
    judged = _run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "--dws-contract",
                   f"--dws-cli={{python}} -I -S {REFERENCE / 'dws'}", f"--dws-source={REFERENCE}",
                   f"--dws-expect={REFERENCE / 'expectations.toml'}", f"--dws-report={report}",
                   f"--dws-warm-start={WARM_START}"], empty, 1800)
    assert judged.returncode == 0, judged.stdout[-3000:] + judged.stderr[-2000:]
    judged_report = json.loads(report.read_text(encoding="utf-8"))
    assert judged_report["invocations"]["total"]["warm"] > 0, judged_report["invocations"]  # (the wheel's spawner)
    gates = judged_report["gates"]
    assert sum(v["status"] == "passed" for v in gates.values()) >= 90, sorted(gates)
    assert not [g for g, v in gates.items() if v["status"] in ("failed", "error")]

    bare = _run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "--dws-contract"], empty)
    assert bare.returncode == 4, bare.stdout + bare.stderr
    lines = [line for line in (bare.stdout + bare.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ERROR: dws-contract: --dws-contract:"), lines
    assert sorted(p.name for p in empty.iterdir()) == ["report.json"]  # nothing else left in the user's folder
