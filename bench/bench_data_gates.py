"""Time loading + every DATA gate on both upstream datasets against the floor of only parsing the same JSON.

    python bench/bench_data_gates.py [--upstream ../shared/upstream] [--repeat 7]

For each dataset, in one process and interleaved (so machine noise hits both alike):
- floor: read + ``json.loads`` of exactly the files the loader reads (the same parser, default GC);
- pipeline: ``load_release`` + every registered DATA gate function over all its subjects (the library
  path of ``pytest --dws-contract``, without pytest's per-item machinery), i.e. ``judge(ctx)``.
Both are measured as CPU time of this process (``time.process_time``: robust when other jobs share the
machine) and as wall time; the best of ``--repeat`` runs is reported, the median in brackets, plus where
the pipeline time goes (each part best of ``--repeat``; "gate items + rest" is the pipeline minus the
parts, GC is the cyclic collector's CPU time inside the best pipeline run; ``judge`` pauses the collector,
see :func:`pytest_dws.catalog.judge.gc_paused`). Target: pipeline <= 2x floor.

The line "floor + R1.7 re-serialisation" is a lower bound no implementation of the gates can beat: the
source_hash must be recomputed from the parsed catalog (orjson + Go escapes + sha256, GATES.md R1.7).
The next line adds SCH-NO-CREDENTIALS' text scan, which must read every byte (C-speed literal searches):
what is left above it is validation plus the per-subject gate work in Python.
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
from pytest_dws.catalog.judge import data_context, data_gates, gc_paused, judge  # noqa: E402

DATASETS = ("dws-cf8cf95", "dws-81f67c8d")


def floor(paths: list[Path]) -> tuple[float, float]:
    """(cpu, wall) seconds to read and parse ``paths``."""
    cpu, wall = time.process_time(), time.perf_counter()
    for path in paths:
        json.loads(path.read_bytes())
    return time.process_time() - cpu, time.perf_counter() - wall


class _GcClock:
    """Running total of the CPU time spent in the cyclic garbage collector (via ``gc.callbacks``), so the
    report can show the collector's share of a pipeline run."""

    def __init__(self) -> None:
        self.total = 0.0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.total += time.process_time() - self._start


GC_CLOCK = _GcClock()


def pipeline(root: Path) -> tuple[float, float, int, float]:
    """(cpu, wall, items, gc cpu) of load_release + every DATA gate over its subjects."""
    gc_before = GC_CLOCK.total
    cpu, wall = time.process_time(), time.perf_counter()
    verdicts = judge(data_context(source=root))
    return (time.process_time() - cpu, time.perf_counter() - wall, len(verdicts), GC_CLOCK.total - gc_before)


def parts(root: Path, repeat: int) -> dict[str, float]:
    """Where the time goes: loading, the R1.7 re-serialisation, its sha256, the credential scan (best of
    ``repeat`` each, on a freshly loaded release as in a real run)."""
    best: dict[str, float] = {}
    for _ in range(repeat):
        gc.collect()
        with gc_paused():  # the collector regime of judge(), so that the parts add up to the pipeline
            t0 = time.process_time()
            rel = load_release(source=root)
            t1 = time.process_time()
            canonical = rel.canonical
            t2 = time.process_time()
            hashes.digest(canonical)
            t3 = time.process_time()
            scan(canonical, rel.doc, canonical=True)
            for name, art in rel.files.items():
                if name not in rel.catalog_files:
                    scan(art.raw, art.data)
            t4 = time.process_time()
        for key, seconds in (("load+validate", t1 - t0), ("re-serialise (R1.7)", t2 - t1), ("sha256", t3 - t2),
                             ("credential scan", t4 - t3)):
            best[key] = min(best.get(key, seconds), seconds)
        del rel, canonical
    return best


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
        runs: list[tuple[float, float, float]] = []
        floors_nogc: list[float] = []
        items = 0
        for _ in range(args.repeat):
            floors.append(floor(paths))
            gc.collect()
            cpu, wall, items, gc_cpu = pipeline(root)
            runs.append((cpu, wall, gc_cpu))
            gc.collect()
            gc.disable()
            floors_nogc.append(floor(paths)[0])
            gc.enable()
            gc.collect()
        f_cpu, f_wall = min(c for c, _ in floors), min(w for _, w in floors)
        p_cpu, p_wall = min(c for c, _, _ in runs), min(w for _, w, _ in runs)
        p_gc = min(runs)[2]
        worst = max(worst, p_cpu / f_cpu)
        med = statistics.median
        print(f"\n{name}: {len(paths)} JSON files, {size / 1e6:.1f} MB, {items} gate items")
        print(f"  floor: read + json.loads   cpu {f_cpu * 1000:7.1f} ms [median {med(c for c, _ in floors) * 1000:.1f}]"
              f"  wall {f_wall * 1000:7.1f} ms")
        print(f"  floor with GC disabled      cpu {min(floors_nogc) * 1000:7.1f} ms")
        p_med = med(c for c, _, _ in runs)
        print(f"  load + all DATA gates       cpu {p_cpu * 1000:7.1f} ms [median {p_med * 1000:.1f}]"
              f"   wall {p_wall * 1000:7.1f} ms")
        print(f"  ratio                       cpu {p_cpu / f_cpu:7.2f} x   wall {p_wall / f_wall:.2f} x"
              f"   (vs GC-disabled floor {p_cpu / min(floors_nogc):.2f} x)")
        split = parts(root, args.repeat)
        for part, seconds in split.items():
            print(f"    of which {part:<22} cpu {seconds * 1000:7.1f} ms")
        print(f"    of which {'gate items + rest':<22} cpu {(p_cpu - sum(split.values())) * 1000:7.1f} ms"
              f"   (GC inside the pipeline: {p_gc * 1000:.1f} ms)")
        bound = f_cpu + split["re-serialise (R1.7)"] + split["sha256"]
        print(f"  lower bound: floor + R1.7 re-serialisation + sha256 = {bound / f_cpu:.2f} x floor")
        scanned = bound + split["credential scan"]
        print(f"  floor + R1.7 + sha256 + credential scan (whole-text, C speed) = {scanned / f_cpu:.2f} x floor")
    print(f"\nworst cpu ratio {worst:.2f} x (target <= 2.0 x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
