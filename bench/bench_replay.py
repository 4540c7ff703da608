"""What a re-judge costs: the whole ``pytest --dws-contract`` process replaying a recording (``--dws-replay``)
beside the live run it was recorded from (the anchor), A B A B, a ratio per pair, and the recording's size. The
replay is given the recording alone: it takes the recorded run's options back.

    python bench/bench_replay.py [--pairs 3] [--cli "{python} -I -S fixtures/reference/dws"] [--source DIR]

Default target: the embedded reference implementation with its files (the README's main job). Both sides are
whole processes started as a user starts them (interpreter, imports, collection, report), in a scratch folder;
the recording is made once by a first live run with ``--dws-record``. Bytecode caching is left as the user has
it (this workplace sets PYTHONDONTWRITEBYTECODE=1; ``--bytecode`` clears it for both sides, as on a user's
machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    return time.perf_counter() - start, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--cli", default=f"{{python}} -I -S {REPO / 'fixtures' / 'reference' / 'dws'}")
    ap.add_argument("--source", default=str(REPO / "fixtures" / "reference"))
    ap.add_argument("--expect", default=str(REPO / "fixtures" / "reference" / "expectations.toml"))
    ap.add_argument("--generator", default="{python} -I -S tools/generate_catalog.py")
    ap.add_argument("--bytecode", action="store_true", help="let Python cache bytecode (a user's default)")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    files = [f"--dws-source={args.source}", f"--dws-expect={args.expect}", f"--dws-generator={args.generator}"]
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dws-contract", *files]
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        work = Path(tmp)
        (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        rec = work / "rec"
        wall, rc = timed([*base, f"--dws-cli={args.cli}", f"--dws-record={rec}"], work, env)
        size = sum(p.stat().st_size for p in rec.rglob("*") if p.is_file())
        print(f"recording: {size / 1e6:.2f} MB, made in {wall:.2f} s (exit {rc})")
        live_argv = [*base, f"--dws-cli={args.cli}"]
        # The replay alone (issue 37 (1)): the recording carries the run's source, expectations and generator.
        replay_argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dws-contract",
                       f"--dws-replay={rec}"]
        ratios = []
        for i in range(args.pairs):
            live, rc_live = timed(live_argv, work, env)
            replay, rc_replay = timed(replay_argv, work, env)
            ratios.append(replay / live)
            print(f"pair {i + 1}: live {live:6.2f} s (exit {rc_live})  replay {replay:6.2f} s (exit {rc_replay})  "
                  f"ratio {replay / live:.3f}")
        print(f"median ratio replay/live: {statistics.median(ratios):.3f} over {args.pairs} pairs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
