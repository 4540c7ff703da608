"""Wall time of the D1 runtime gates against the target's own process time over the same run (by hand).

    python bench/bench_runtime.py [--cli "{python} -I -S fixtures/reference/dws"] [--rounds 3] [--workers 1 2]

Each round runs ``pytest --dws-contract -m "dws_err or dws_tgt or dws_ali or dws_smk or dws_acc"`` in a fresh
process. A probe plugin (this file, loaded with ``-p``) reads the runner's ledger at the end of the session:
the number of target invocations and the sum of their wall times (spawn to reap, output read) and CPU times.
Reported per worker count (the runner's bounded pool):

- suite wall: the whole pytest process (interpreter start, plugin import, collection, gates, report);
- session wall: pytest_sessionstart -> pytest_sessionfinish;
- target wall sum: what the invocations themselves cost; the ratio suite/target is the suite's overhead
  (target <= 1.15x, issue 4). With more than one worker the invocations overlap, so the ratio can be < 1.

Figures are the median of the rounds. Exit status 1 if the best worker count misses 1.15x.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _probe import elapsed, probe_hooks, session_env

REPO = Path(__file__).resolve().parents[1]
MARK = "dws_err or dws_tgt or dws_ali or dws_smk or dws_acc"
TARGET = 1.15
_OUT = "DWS_BENCH_RUNTIME_OUT"
_WORKERS = "DWS_BENCH_RUNTIME_WORKERS"

# Probe side (this module is loaded into the measured session with -p).
pytest_sessionstart, pytest_collection_finish = probe_hooks(_WORKERS)


def pytest_sessionfinish(session: Any) -> None:
    """Probe side: write the runner's ledger before the context closes."""
    from pytest_dws.plugin import contract

    run = contract(session.config)
    runner = run.ctx.cache.get(("cli",)) if run is not None else None
    out = {"session_wall": elapsed(), "count": getattr(runner, "count", 0),
           "target_wall": getattr(runner, "total_wall", 0.0), "target_cpu": getattr(runner, "total_cpu", 0.0),
           "failed": int(session.testsfailed)}
    Path(os.environ[_OUT]).write_text(json.dumps(out), encoding="utf-8")


def one_round(cli: str, workers: int, cwd: Path) -> dict[str, float]:
    out = cwd / "probe.json"
    env = session_env(cwd, **{_OUT: str(out), _WORKERS: str(workers)})
    argv = [sys.executable, "-m", "pytest", "--dws-contract", "--dws-cli", cli, "-m", MARK, "-q",
            "-p", "no:cacheprovider", "-p", "bench_runtime"]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if not out.exists():
        raise SystemExit(f"the probe wrote nothing:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    data = json.loads(out.read_text(encoding="utf-8"))
    data["suite_wall"] = wall
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", default=f"{{python}} -I -S {REPO / 'fixtures' / 'reference' / 'dws'}")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    best = None
    with tempfile.TemporaryDirectory(prefix="bench-runtime-") as tmp:
        for workers in args.workers:
            rounds = [one_round(args.cli, workers, Path(tmp)) for _ in range(args.rounds)]
            med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
            ratio = med["suite_wall"] / med["target_wall"] if med["target_wall"] else float("inf")
            session_ratio = med["session_wall"] / med["target_wall"] if med["target_wall"] else float("inf")
            best = ratio if best is None else min(best, ratio)
            print(f"workers={workers}: {int(med['count'])} invocations, failures={int(med['failed'])}; "
                  f"suite wall {med['suite_wall']:.2f}s, session wall {med['session_wall']:.2f}s, "
                  f"target wall sum {med['target_wall']:.2f}s ({1000 * med['target_wall'] / max(med['count'], 1):.1f} "
                  f"ms each), target cpu sum {med['target_cpu']:.2f}s; suite/target {ratio:.2f}x, "
                  f"session/target {session_ratio:.2f}x")
    print(f"best suite/target ratio {best:.2f}x (target <= {TARGET}x): {'OK' if best <= TARGET else 'MISSED'}")
    return 0 if best is not None and best <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
