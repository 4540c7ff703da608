"""Time loading + every DATA gate on both upstream datasets against the floor of only parsing the same JSON.

    python bench/bench_data_gates.py [--upstream ../shared/upstream] [--repeat 7]

For each dataset, in one process and interleaved (so machine noise hits both alike):
- floor: read + ``json.loads`` of exactly the files the loader reads (the same parser, default GC);
- pipeline: ``load_release`` + every registered DATA gate function over all its subjects (the library
  path of ``pytest --dws-contract``, without pytest's per-item machinery), i.e. ``judge(ctx)``.
Both are measured as CPU time of this process (``time.process_time``: robust when other jobs share the
machine) and as wall time; the best of ``--repeat`` runs is reported, the median in brackets, plus where
the pipeline time goes. Target: pipeline <= 2x floor.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_dws.catalog import hashes, load_release  # noqa: E402
from pytest_dws.catalog.credentials import scan  # noqa: E402
from pytest_dws.catalog.judge import data_context, data_gates, judge  # noqa: E402

DATASETS = ("dws-cf8cf95", "dws-81f67c8d")


def floor(paths: list[Path]) -> tuple[float, float]:
    """(cpu, wall) seconds to read and parse ``paths``."""
    cpu, wall = time.process_time(), time.perf_counter()
    for path in paths:
        json.loads(path.read_bytes())
    return time.process_time() - cpu, time.perf_counter() - wall


def pipeline(root: Path) -> tuple[float, float, int]:
    """(cpu, wall, items) of load_release + every DATA gate over its subjects."""
    cpu, wall = time.process_time(), time.perf_counter()
    verdicts = judge(data_context(source=root))
    return time.process_time() - cpu, time.perf_counter() - wall, len(verdicts)


def parts(root: Path) -> dict[str, float]:
    """Where the time goes (one run): loading, the source_hash recomputation, the credential scan."""
    t0 = time.process_time()
    rel = load_release(source=root)
    t1 = time.process_time()
    hashes.digest(rel.canonical)
    t2 = time.process_time()
    scan(rel.canonical, rel.doc)
    for name, art in rel.files.items():
        if name not in rel.catalog_files:
            scan(art.raw, art.data)
    t3 = time.process_time()
    return {"load+validate": t1 - t0, "source_hash": t2 - t1, "credential scan": t3 - t2}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", type=Path, default=REPO.parent / "shared" / "upstream")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"DATA gate parts: {len(data_gates())}  (python {sys.version.split()[0]})")
    worst = 0.0
    for name in DATASETS:
        root = args.upstream / name
        rel = load_release(source=root)
        paths = [root / n for n in rel.files]
        size = sum(p.stat().st_size for p in paths)
        del rel
        gc.collect()
        floors: list[tuple[float, float]] = []
        runs: list[tuple[float, float]] = []
        floors_nogc: list[float] = []
        items = 0
        for _ in range(args.repeat):
            floors.append(floor(paths))
            gc.collect()
            cpu, wall, items = pipeline(root)
            runs.append((cpu, wall))
            gc.collect()
            gc.disable()
            floors_nogc.append(floor(paths)[0])
            gc.enable()
            gc.collect()
        f_cpu, f_wall = min(c for c, _ in floors), min(w for _, w in floors)
        p_cpu, p_wall = min(c for c, _ in runs), min(w for _, w in runs)
        worst = max(worst, p_cpu / f_cpu)
        med = statistics.median
        print(f"\n{name}: {len(paths)} JSON files, {size / 1e6:.1f} MB, {items} gate items")
        print(f"  floor: read + json.loads   cpu {f_cpu * 1000:7.1f} ms [median {med(c for c, _ in floors) * 1000:.1f}]"
              f"  wall {f_wall * 1000:7.1f} ms")
        print(f"  floor with GC disabled      cpu {min(floors_nogc) * 1000:7.1f} ms")
        print(f"  load + all DATA gates       cpu {p_cpu * 1000:7.1f} ms [median {med(c for c, _ in runs) * 1000:.1f}]"
              f"   wall {p_wall * 1000:7.1f} ms")
        print(f"  ratio                       cpu {p_cpu / f_cpu:7.2f} x   wall {p_wall / f_wall:.2f} x"
              f"   (vs GC-disabled floor {p_cpu / min(floors_nogc):.2f} x)")
        for part, seconds in parts(root).items():
            print(f"    of which {part:<18} cpu {seconds * 1000:7.1f} ms")
    print(f"\nworst cpu ratio {worst:.2f} x (target <= 2.0 x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
