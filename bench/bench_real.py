"""What a release engineer waits for on the real binary: the whole ``pytest --dws-contract`` process against
81f67c8d, beside the sum of the target's own process times, as ratios in one run.

    python bench/bench_real.py [--bin DIR] [--modes default,all,xdist] [--report-dir DIR]

Modes: ``default`` (the coverage sample), ``all`` (``--dws-sample all``: every tool's help and schema),
``xdist`` (the default under ``-n 2``), ``one`` (the default under ``-n 1``: one worker, one target at a time,
the baseline ``-n 2`` is measured against). Each run writes its JSON report; its ``invocations`` section has
the target's own wall and CPU seconds by call kind (``help``, ``schema``, ``probe``, ``run``), so the ratio
``suite wall ÷ (Σ target CPU ÷ cores)`` says how close the suite runs to what the binary itself costs, and the
first plan line's estimate is compared with the costly calls' real wall. ``costly span`` is the costly calls'
end-to-end wall (the earliest help/schema call's start to the latest one's end, over every worker): the figure
the ``-n 2`` speed-up on the expensive calls is taken on, beside the whole process's. Skips with a message when the
binaries are absent (``../shared/dws-bin`` or ``$DWS_BIN_CACHE``).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
RELEASE = REPO / "fixtures" / "releases" / "81f67c8d"
MODES = {"default": [], "all": ["--dws-sample", "all"], "xdist": ["-n", "2"], "one": ["-n", "1"]}
ESTIMATE = re.compile(r"estimate (?:(\d+)m)?(\d+)s")


def binary(bin_dir: Path | None) -> Path | None:
    """The 81f67c8d binary: given, cached, or decompressed from ../shared/dws-bin into a cache."""
    cache = Path(os.environ.get("DWS_BIN_CACHE", Path.home() / ".cache" / "pytest-dws" / "dws-bin"))
    for d in ([bin_dir] if bin_dir else []) + [cache]:
        if d is not None and (d / "dws-81f67c8d").is_file():
            return d / "dws-81f67c8d"
    packed = SHARED / "dws-bin" / "dws-81f67c8d.xz"
    if not packed.is_file():
        return None
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / "dws-81f67c8d"
    with lzma.open(packed) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    out.chmod(0o755)
    return out


def run(mode: str, dws: Path, report: Path) -> dict[str, object]:
    """One whole pytest process in a neutral folder; wall, its report's invocation totals, the plan estimate."""
    argv = [sys.executable, "-m", "pytest", "--dws-contract", "-p", "no:cacheprovider", "-q",
            f"--dws-cli={dws}", f"--dws-expect={RELEASE / 'expectations.toml'}",
            f"--dws-baseline={RELEASE / 'baseline-binary.toml'}", f"--dws-report={report}", *MODES[mode]]
    source = SHARED / "upstream" / "dws-81f67c8d"
    if source.is_dir():
        argv.append(f"--dws-source={source}")
    with tempfile.TemporaryDirectory() as cwd:
        (Path(cwd) / "pytest.ini").write_text("[pytest]\n")
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
    doc = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    spent = doc.get("invocations", {})
    costly = {k: v for k, v in spent.get("kinds", {}).items() if k in ("help", "schema")}
    found = ESTIMATE.search(proc.stderr)
    estimate = (int(found.group(1) or 0) * 60 + int(found.group(2))) if found else None
    return {"mode": mode, "exit": proc.returncode, "wall": wall, "target_cpu": spent.get("total", {}).get("cpu", 0.0),
            "target_wall": spent.get("total", {}).get("wall", 0.0), "calls": spent.get("total", {}).get("count", 0),
            "costly_calls": sum(v["count"] for v in costly.values()), "estimate": estimate,
            "costly_span": spent.get("costly_span"),
            "tail": proc.stdout.strip().splitlines()[-1:] if proc.stdout.strip() else []}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", type=Path, help="directory holding dws-81f67c8d")
    parser.add_argument("--modes", default="default,all")
    parser.add_argument("--report-dir", type=Path, default=Path(tempfile.gettempdir()) / "bench-real")
    args = parser.parse_args()
    dws = binary(args.bin)
    if dws is None:
        print("bench_real: skipped: no 81f67c8d binary (../shared/dws-bin/dws-81f67c8d.xz or $DWS_BIN_CACHE)")
        return 0
    args.report_dir.mkdir(parents=True, exist_ok=True)
    cores = os.cpu_count() or 1
    print(f"{'mode':<8} {'exit':>4} {'wall':>9} {'calls':>6} {'costly':>6} {'Σ target CPU':>13} "
          f"{'wall ÷ (CPU÷cores)':>19} {'plan estimate':>14} {'costly span':>12}")
    rows = {}
    for mode in args.modes.split(","):
        r = rows[mode] = run(mode, dws, args.report_dir / f"{mode}.json")
        bound = float(r["target_cpu"]) / cores  # type: ignore[arg-type]
        ratio = float(r["wall"]) / bound if bound else float("nan")  # type: ignore[arg-type]
        est = f"{r['estimate']} s" if r["estimate"] is not None else "-"
        span = f"{r['costly_span']:.1f}s" if r["costly_span"] is not None else "-"
        print(f"{mode:<8} {r['exit']:>4} {r['wall']:>8.1f}s {r['calls']:>6} {r['costly_calls']:>6} "
              f"{r['target_cpu']:>12.1f}s {ratio:>19.2f} {est:>14} {span:>12}   "  # type: ignore[str-format]
              f"{' '.join(r['tail'])}")
    if "one" in rows and "xdist" in rows:
        one, two = rows["one"], rows["xdist"]
        print(f"-n 2 speed-up over -n 1: whole process {float(one['wall']) / float(two['wall']):.2f}x")  # type: ignore[arg-type]
        if one["costly_span"] and two["costly_span"]:
            # the costly calls' end-to-end wall: first help/schema call started .. last one ended
            ratio = float(one["costly_span"]) / float(two["costly_span"])  # type: ignore[arg-type]
            print(f"-n 2 speed-up over -n 1: expensive calls {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
