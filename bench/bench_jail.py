"""The cost of the per-invocation jail (issue 45: a mount and a user namespace, limits, a pids cgroup), as ratios
against the same work without it, in one run:

1. ``N`` invocations of the reference (``python -I -S fixtures/reference/dws --help``) through the runner's own
   process code (:func:`pytest_dws.launch.process.run_process`), interleaved with and without a jail, each
   side's median wall per invocation and the CPU the suite's process spent starting them (fork instead of vfork:
   a ``preexec_fn`` makes ``subprocess`` fork);
2. the main job (``pytest --dws-contract``, whole processes) with ``--dws-isolation=auto`` (jail) and
   ``--dws-isolation=proxy`` (no jail, no network namespace: the network namespace costs nothing per invocation).

    python bench/bench_jail.py [--n 200] [--skip-main]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_dws.launch.contain.containment import Containment, probe  # noqa: E402
from pytest_dws.launch.process import run_process  # noqa: E402


def invocations(n: int) -> None:
    argv = [sys.executable, "-I", "-S", str(REPO / "fixtures" / "reference" / "dws"), "--help"]
    contained, why = probe()
    print(f"jail available: {contained} {why}".rstrip())
    containment = Containment(argv[:4], workspace=REPO)
    walls: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, float] = {True: 0.0, False: 0.0}
    child: dict[bool, float] = {True: 0.0, False: 0.0}  # the target's own CPU (with its namespaces' set-up)
    with tempfile.TemporaryDirectory(prefix="bench-jail-") as tmp:
        home = Path(tmp)
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8"}
        for i in range(2 * n):
            jailed = i % 2 == 0
            jail = containment.jail([home], argv[:4]) if jailed else None
            before = resource.getrusage(resource.RUSAGE_SELF)
            inv = run_process(argv, env=env, cwd=home, timeout=30, jail=jail)
            after = resource.getrusage(resource.RUSAGE_SELF)
            assert inv.exit_code == 0, inv.describe()
            walls[jailed].append(inv.duration)
            cpu[jailed] += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            child[jailed] += inv.cpu
    containment.close()
    for side in (False, True):
        print(f"{'jail   ' if side else 'no jail'}: median {statistics.median(walls[side]) * 1000:.1f} ms per "
              f"invocation, suite CPU {cpu[side] / n * 1000:.2f} ms + target CPU {child[side] / n * 1000:.2f} ms "
              f"per invocation ({n} invocations)")
    print(f"ratio (jail / none), median wall per invocation: "
          f"{statistics.median(walls[True]) / statistics.median(walls[False]):.3f}; CPU (suite + target): "
          f"{(cpu[True] + child[True]) / (cpu[False] + child[False]):.3f}")


def main_job() -> None:
    sides = {}
    for mode in ("proxy", "auto", "proxy", "auto"):  # interleaved: a busy machine drifts over minutes
        start = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with tempfile.TemporaryDirectory(prefix="bench-jail-main-") as tmp:
            proc = subprocess.run([sys.executable, "-m", "pytest", "--dws-contract", "-q", "-p", "no:cacheprovider",
                                   f"--dws-isolation={mode}", "--dws-report", str(Path(tmp) / "r.json")],
                                  cwd=REPO, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter() - start
        cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
        print(f"main job --dws-isolation={mode}: exit {proc.returncode}, wall {wall:.1f} s, CPU {cpu_s:.1f} s: {tail}")
        sides.setdefault(mode, []).append((wall, cpu_s))
    for i, what in ((0, "wall"), (1, "CPU")):
        jail = min(s[i] for s in sides["auto"])
        none = min(s[i] for s in sides["proxy"])
        print(f"ratio (jail / none), main job {what} (best of 2 each): {jail / none:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--skip-main", action="store_true")
    parser.add_argument("--ballast", type=int, default=0,
                        help="MB this process holds (touched) while it spawns: an xdist worker holds 100-150")
    args = parser.parse_args()
    ballast = bytearray(b"x" * (args.ballast << 20))  # noqa: F841 (held, so the spawning process has this size)
    invocations(args.n)
    if not args.skip_main:
        main_job()
