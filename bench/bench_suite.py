"""Time the README's test command against the main job, as whole processes (issue 44: the proof in minutes).

Run by hand (never in CI), from a checkout whose venv is active::

    python bench/bench_suite.py                  # one run of each, in this checkout
    python bench/bench_suite.py --runs 3         # the median of three runs of each
    python bench/bench_suite.py --tree /work/x   # another checkout (e.g. main before a change), this interpreter

The test command is the README's second command (``python -m pytest -n 2 --dist loadgroup tests``), the main job
its first (``pytest --dws-contract``); both run as they would for a contributor: a fresh process, the repository's
own pyproject. Prints each run's wall time and exit code, the load average before and after (the machine may be
shared: a figure without its load says little), the medians and their ratio (test command / main job).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_COMMAND = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "tests", "-q", "-p",
                "no:cacheprovider"]
MAIN_JOB = [sys.executable, "-m", "pytest", "--dws-contract", "-q", "-p", "no:cacheprovider"]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(argv: list[str], cwd: Path, log: Path) -> tuple[float, int]:
    """Wall seconds and exit code of one whole process; its output goes to ``log``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # CI keeps a bytecode cache
    start = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        code = subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env, check=False).returncode
    return time.monotonic() - start, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs of each command (the median is reported)")
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout to time (default: this one)")
    parser.add_argument("--logs", type=Path, default=Path("/tmp"), help="where each run's output is kept")
    parser.add_argument("--only", choices=("tests", "main"), default=None, help="time one command only")
    parser.add_argument("--durations", type=int, default=0, help="also print the test command's N slowest items")
    args = parser.parse_args()
    args.logs.mkdir(parents=True, exist_ok=True)  # a folder named that is not there yet is made, not a traceback
    tests = TEST_COMMAND + ([f"--durations={args.durations}"] if args.durations else [])
    walls: dict[str, list[float]] = {"main": [], "tests": []}
    for i in range(args.runs):
        for name, argv in (("main", MAIN_JOB), ("tests", tests)):
            if args.only and name != args.only:
                continue
            before = load()
            wall, code = timed(argv, args.tree, args.logs / f"bench-suite-{name}-{i}.log")
            walls[name].append(wall)
            print(f"{name:5} run {i + 1}: {wall:7.1f} s wall, exit {code}; load before {before}, after {load()}",
                  flush=True)
    medians = {k: statistics.median(v) for k, v in walls.items() if v}
    for name, value in medians.items():
        print(f"{name:5} median of {len(walls[name])}: {value:.1f} s")
    if len(medians) == 2:
        print(f"ratio test command / main job: {medians['tests'] / medians['main']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
