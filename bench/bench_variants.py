"""Time a variant run (D1 §9.3 matrix, hypothesis examples) against an implementation, per example.

Run by hand (never in CI)::

    python bench/bench_variants.py                      # 200 examples against the reference
    python bench/bench_variants.py -n 500 --seed 7 --mutant pick-first
    python bench/bench_variants.py --cli "/path/to/dws"  # any implementation (shlex-split, {python} allowed)

Prints the seed (replay with the same --seed / DWS_VARIANT_SEED), generation time, run time, seconds per
example (wall, with the runner's worker pool), failing examples, and the judged class counts.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_dws.inputs import datasets as ds  # noqa: E402
from pytest_dws.inputs.expectations import Expectations  # noqa: E402
from pytest_dws.inputs.settings import Settings  # noqa: E402
from pytest_dws.observe.context import Context  # noqa: E402
from pytest_dws.observe.runtime.datasets import run_cases  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--examples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--cli", default=f"{{python}} -I {REPO / 'fixtures' / 'reference' / 'dws'}")
    parser.add_argument("--mutant", default="", help="DWS_REF_MUTANT for the reference")
    parser.add_argument("--covering", action="store_true", help="also time the deterministic covering set")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    cli = [sys.executable if t == "{python}" else t for t in shlex.split(args.cli)]
    env = {"DWS_REF_MUTANT": args.mutant} if args.mutant else {}
    ctx = Context(Settings(cli=cli, env=env), Expectations(), Path(tempfile.mkdtemp(prefix="bench-variants-")))
    try:
        matrix = ds.Matrix.load()
        t0 = time.perf_counter()
        cases = ds.generate_variants(matrix, args.examples, seed)
        t1 = time.perf_counter()
        results = run_cases(ctx, cases)
        t2 = time.perf_counter()
        failed = [r for r in results if not r.passed]
        print(f"seed={seed} examples={len(cases)} workers={ctx.cli().workers}")
        print(f"generate: {t1 - t0:.2f} s   run: {t2 - t1:.2f} s   per example: {(t2 - t1) / max(1, len(cases)):.4f} s "
              f"(generation {(t1 - t0) / max(1, len(cases)):.4f} s)")
        print("classes:", dict(Counter(r.judgement.klass for r in results)))
        print("results:", dict(Counter(r.case.dims.get("result") for r in results)))
        print(f"failed: {len(failed)}")
        for r in failed[:10]:
            print(f"  {r.case.id}: {'; '.join(r.problems)}")
        if args.covering:
            rng = random.Random(seed)
            keys = dict.fromkeys(matrix.data["symbols"], "")
            cover = [ds.build_case(matrix, p, ds.random_symbols(keys, rng)) for p in ds.covering_points(matrix)]
            t3 = time.perf_counter()
            cres = run_cases(ctx, cover)
            t4 = time.perf_counter()
            print(f"covering set: {len(cover)} cases, {t4 - t3:.2f} s, {(t4 - t3) / len(cover):.4f} s per case, "
                  f"failed {sum(not r.passed for r in cres)}")
        return 1 if failed else 0
    finally:
        ctx.close()


if __name__ == "__main__":
    raise SystemExit(main())
