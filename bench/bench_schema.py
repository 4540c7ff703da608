"""Full run time of the schema / help / regeneration gates (issue 5) with 1 and 2 workers (by hand).

    python bench/bench_schema.py [--rounds 3] [--workers 1 2] [--xdist]

Each round runs, in a fresh process, exactly the gates judged by tests/mutation_matrix_schema.toml (every
SCHCLI-*, the binary SCH-*/ALI-* gates, regeneration, Skills, FIN) against the reference implementation, full
(no --dws-sample), with only the plugins the suite needs (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1,
-p pytest_dws.plugin: unrelated plugins of the machine are not the suite's overhead). Workers = the bounded
pool of the runner (default), or pytest-xdist processes (``--xdist``,
``-n N``; the gates then run one invocation at a time per worker). A probe plugin (this file, loaded with
``-p``) reads the ledgers at the end of each session: the session runner's invocations plus the target
processes run outside it (tree copies for SCHCLI-CORRUPT, the generator runs).

Reported (best round by suite wall, median in brackets: machine noise only ever adds time): suite wall (the
whole pytest process), its own CPU (load-independent overhead), the sum of the target's own process
wall times, their ratio, and the speed-up of the largest worker count over 1. Targets: speed-up >= 1.7x,
suite wall <= 1.15x the target process time (single worker: the suite's own overhead). Exit 1 on a miss.
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
import tomllib
from pathlib import Path
from typing import Any

from _probe import elapsed, probe_hooks, session_env

REPO = Path(__file__).resolve().parents[1]
REF = REPO / "fixtures" / "reference"
MATRIX = tomllib.loads((REPO / "tests" / "mutation_matrix_schema.toml").read_text(encoding="utf-8"))
_OUT = "DWS_BENCH_SCHEMA_OUT"
_WORKERS = "DWS_BENCH_SCHEMA_WORKERS"
SPEEDUP, RATIO = 1.7, 1.15


def select() -> str:
    parts = MATRIX["run"]["parts"]
    return " or ".join(parts.get(g, g) for g in sorted(MATRIX["run"]["judged"]))


# -- probe side (runs inside the measured pytest process, or in each xdist worker) --------------------------

# Probe side (this module is loaded into the measured session with -p).
pytest_sessionstart, pytest_collection_finish = probe_hooks(_WORKERS)


def pytest_sessionfinish(session: Any) -> None:
    from pytest_dws.plugin import contract

    run = contract(session.config)
    if run is None:
        return
    seen = run.ctx.ledger.seen.values()  # every target process of the session (runners, tree copies, generator)
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    out = {"session_wall": elapsed(), "suite_cpu": own.ru_utime + own.ru_stime,
           "count": sum(k.count for k in seen), "target_wall": sum(k.wall for k in seen),
           "target_cpu": sum(k.cpu for k in seen),
           "failed": int(session.testsfailed)}
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    Path(f"{os.environ[_OUT]}.{worker}").write_text(json.dumps(out), encoding="utf-8")


# -- driver side ------------------------------------------------------------------------------------------------
def one_round(workers: int, xdist: bool, tmp: Path) -> dict[str, float]:
    out = tmp / "probe"
    for old in tmp.glob("probe.*"):
        old.unlink()
    env = session_env(tmp, **{_OUT: str(out), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    argv = [sys.executable, "-m", "pytest", "--dws-contract", "-q", "-p", "no:cacheprovider", "-p", "pytest_dws.plugin",
            "-p", "bench_schema",
            "--dws-cli", f"{{python}} -I -S {REF / 'dws'}", "--dws-source", str(REF),
            "--dws-expect", str(REF / "expectations.toml"), "--dws-generator", MATRIX["run"]["generator"],
            "-m", MATRIX["run"]["markers"], "-k", select()]
    if xdist:
        argv += ["-p", "xdist", "-n", str(workers)]
    else:
        env[_WORKERS] = str(workers)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    probes = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(tmp.glob("probe.*"))]
    if xdist:
        probes = [p for p in probes if p["count"]] or probes
    if not probes:
        raise SystemExit(f"the probe wrote nothing:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    total = {k: sum(p[k] for p in probes) for k in ("count", "target_wall", "target_cpu", "failed", "suite_cpu")}
    return {**total, "suite_wall": wall, "session_wall": max(p["session_wall"] for p in probes)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--xdist", action="store_true", help="workers are pytest-xdist processes")
    args = parser.parse_args()
    med: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-schema-") as tmp:
        for _ in range(args.rounds):  # interleave worker counts so machine noise hits all alike
            for workers in args.workers:
                med.setdefault(workers, {"_rounds": []})["_rounds"].append(one_round(workers, args.xdist, Path(tmp)))
    for workers, entry in med.items():
        rounds = entry.pop("_rounds")
        best = min(rounds, key=lambda r: r["suite_wall"])  # best of the rounds: other jobs only ever add time
        entry.update(best)
        entry["median_suite_wall"] = statistics.median(r["suite_wall"] for r in rounds)
        ratio = entry["suite_wall"] / entry["target_wall"] if entry["target_wall"] else float("inf")
        entry["ratio"] = ratio
        print(f"workers={workers} ({'xdist' if args.xdist else 'pool'}): {int(entry['count'])} target processes, "
              f"failures={int(entry['failed'])}; suite wall {entry['suite_wall']:.2f}s [median "
              f"{entry['median_suite_wall']:.2f}s] (session "
              f"{entry['session_wall']:.2f}s), target wall sum {entry['target_wall']:.2f}s "
              f"({1000 * entry['target_wall'] / max(entry['count'], 1):.1f} ms each), target cpu sum "
              f"{entry['target_cpu']:.2f}s; suite process cpu {entry['suite_cpu']:.2f}s; suite/target {ratio:.2f}x")
    lo, hi = min(med), max(med)
    speedup = med[lo]["suite_wall"] / med[hi]["suite_wall"]
    single = med[lo]["ratio"]
    print(f"speed-up {lo}->{hi} workers: {speedup:.2f}x (target >= {SPEEDUP}x): "
          f"{'OK' if speedup >= SPEEDUP else 'MISSED'}")
    print(f"suite wall / target process time with {lo} worker: {single:.2f}x (target <= {RATIO}x): "
          f"{'OK' if single <= RATIO else 'MISSED'}")
    return 0 if speedup >= SPEEDUP and single <= RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
