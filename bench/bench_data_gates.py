"""What the user waits for: the whole ``pytest --dws-contract -m dws_data`` process beside upstream's own static
catalog check, on the same release, A B A B, a ratio per pair.

    python bench/bench_data_gates.py [--upstream ../shared/upstream] [--pairs 5] [--tools 849,2000,5000,10000]

The anchor is ``scripts/policy/check-schema-catalog.sh`` of each release (jq + rg at cf8cf95, jq + POSIX grep
at 81f67c8d) with its ``go test`` lines cut: copied into a temporary tree whose ``internal/`` and ``skills/``
link to the release (read only), so it checks exactly the files our DATA gates read. ``rg`` comes from the
``bench`` extra (``pip install -e '.[bench]'``: the ripgrep wheel) when the machine has none.

Both sides are whole processes started the way a release engineer starts them (interpreter start, imports,
pytest's collection and report included), timed with ``perf_counter`` around ``wait4``; peak RSS is the
child's own ``ru_maxrss``. The growth part times the pytest side alone on synthetic cf trees of N tools
(``tests/synth.py``), to show time and memory grow linearly. Run it on an idle machine: nothing here pins a
CPU. Skips with a message when ``../shared/upstream`` is absent.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _probe import whole_process

REPO = Path(__file__).resolve().parents[1]
RELEASES = {"dws-cf8cf95": "cf8cf95", "dws-81f67c8d": "81f67c8d"}
#: `go test ./x \` and its continuation lines: the compiled half of the upstream check, not the static one.
GO_TEST = re.compile(r"^go test (?:[^\n]*\\\n)*[^\n]*\n", re.MULTILINE)


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, int]:
    """(wall seconds, exit code, peak RSS in KiB) of one whole process."""
    wall, code, usage = whole_process(argv, cwd, env)
    return wall, code, usage.ru_maxrss


def static_tree(release: Path, work: Path) -> Path:
    """A temporary tree for the upstream script: data dirs linked, scripts/policy copied without `go test`."""
    root = work / release.name
    (root / "scripts").mkdir(parents=True)
    for name in ("internal", "skills"):
        if (release / name).exists():
            (root / name).symlink_to(release / name)
    policy = root / "scripts" / "policy"
    shutil.copytree(release / "scripts" / "policy", policy)
    for script in policy.glob("*.sh"):
        text = script.read_text(encoding="utf-8")
        script.write_text(GO_TEST.sub("", text), encoding="utf-8")
    return root


def pytest_argv(source: Path, commit: str | None) -> list[str]:
    argv = [sys.executable, "-m", "pytest", "--dws-contract", "-p", "no:cacheprovider", "-q", "-m", "dws_data",
            "--dws-source", str(source)]
    if commit is not None:
        rel = REPO / "fixtures" / "releases" / commit
        argv += ["--dws-expect", str(rel / "expectations.toml"), "--dws-baseline", str(rel / "baseline.toml")]
    return argv


def pairs(upstream: Path, count: int, env: dict[str, str], work: Path) -> None:
    for name, commit in RELEASES.items():
        release = upstream / name
        tree = static_tree(release, work)
        script = ["sh", str(tree / "scripts" / "policy" / "check-schema-catalog.sh")]
        ours = pytest_argv(release, commit)
        run(script, tree, env), run(ours, work, env)  # warm the page cache and the bytecode caches
        ratios, a_walls, b_walls = [], [], []
        for _ in range(count):
            a, _, _ = run(script, tree, env)
            b, _, rss = run(ours, work, env)  # from a folder of the user's, not this repo (no conftest of ours)
            a_walls.append(a)
            b_walls.append(b)
            ratios.append(b / a)
        print(f"{commit}: upstream static script median {statistics.median(a_walls):.3f} s, "
              f"pytest -m dws_data median {statistics.median(b_walls):.3f} s (peak {rss // 1024} MiB); "
              f"ratio per pair {', '.join(f'{r:.2f}' for r in ratios)} -> median {statistics.median(ratios):.2f}x")


def growth(sizes: list[int], env: dict[str, str], work: Path) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    import synth

    base = None
    for n in sizes:
        root = synth.build("cf", max(0, n - 7)).write(work / f"synthetic-{n}")
        argv = pytest_argv(root, None)
        run(argv, work, env)
        walls, peak = [], 0
        for _ in range(3):
            wall, _, rss = run(argv, work, env)
            walls.append(wall)
            peak = max(peak, rss)
        wall = statistics.median(walls)
        base = base or (n, wall, peak)
        print(f"{n:>6} tools: {wall:.3f} s, peak {peak // 1024} MiB "
              f"(x{wall / base[1]:.2f} time, x{peak / base[2]:.2f} memory for x{n / base[0]:.2f} tools)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", type=Path, default=REPO.parent / "shared" / "upstream")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--tools", default="849,2000,5000,10000", help="synthetic sizes for the growth curve")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # a user's normal setting
    with tempfile.TemporaryDirectory(prefix="bench-data-") as tmp:
        work = Path(tmp)
        if not (args.upstream / "dws-cf8cf95").is_dir():
            print(f"skipped: no upstream releases at {args.upstream} (give --upstream)")
        elif shutil.which("rg", path=env.get("PATH")) is None and shutil.which("rg") is None:
            print("skipped pairs: the cf8cf95 script needs rg (pip install -e '.[bench]')")
        else:
            bindir = str(Path(sys.executable).parent)
            env["PATH"] = bindir + os.pathsep + env.get("PATH", "")  # the venv's rg, if that is where it is
            pairs(args.upstream, args.pairs, env, work)
        growth([int(n) for n in args.tools.split(",") if n], env, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
