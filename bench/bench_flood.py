"""Peak memory and wall of a whole ``pytest --dws-contract`` run against a target that prints 200 MB per call,
beside the README's main job on the reference implementation (the anchor), in one run, as ratios (issue 29 (3):
a flooded capture keeps only its head, so the run stays far under 1 GB).

    python bench/bench_flood.py [--mb 200] [--marker dws_err]

Each side is its own process (``resource.getrusage(RUSAGE_CHILDREN)`` after each gives that child's peak RSS: the
runs go one at a time, so the maximum so far is the run's own when it grows, which the flood run does).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FLOOD = """#!{python}
import sys
if "--help" in sys.argv:
    print("Usage: dws [command]")
    sys.exit(0)
chunk = (b"x" * 1023 + b"\\n") * 1024
try:
    for _ in range({mb}):
        sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()
except BrokenPipeError:
    pass
"""


def run(argv: list[str], cwd: Path) -> tuple[float, int, int]:
    """(wall seconds, exit code, peak RSS in MB of the biggest child so far)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    return wall, proc.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=200, help="MB the flooding target prints per call")
    ap.add_argument("--marker", default="", help="only these gates (-m), e.g. dws_err; default: all")
    args = ap.parse_args()
    pick = ["-m", args.marker] if args.marker else []
    with tempfile.TemporaryDirectory(prefix="bench-flood-") as tmp:
        work = Path(tmp)
        target = work / "flood.py"
        target.write_text(FLOOD.format(python=sys.executable, mb=args.mb), encoding="utf-8")
        target.chmod(0o755)
        anchor = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dws-contract", *pick],
                     REPO)
        (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        flood = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dws-contract",
                     f"--dws-cli={target}", *pick], work)
    print(f"anchor (reference, README main job): {anchor[0]:6.1f} s, exit {anchor[1]}, peak RSS {anchor[2]} MB")
    print(f"flood ({args.mb} MB per call):          {flood[0]:6.1f} s, exit {flood[1]}, peak RSS {flood[2]} MB")
    print(f"ratio flood/anchor: wall {flood[0] / anchor[0]:.2f}x, peak RSS {flood[2] / max(anchor[2], 1):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
