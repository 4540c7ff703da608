"""The cost of the per-invocation jail (issue 45: a mount and a user namespace, limits, a pids cgroup), as ratios
against the same work without it, in one run:

1. ``N`` invocations of the reference (``python -I -S fixtures/reference/dws --help``) through the runner's own
   process code (:func:`pytest_dws.launch.process.run_process`), interleaved: without a jail, jailed by a fork of
   this process (a ``preexec_fn`` makes ``subprocess`` fork instead of vfork), jailed by the spawner
   (launch.contain.spawner); each side's median wall per invocation and the CPU the suite's process spent
   starting them. ``--ballast MB`` makes this process as big as an xdist worker late in a run;
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
from pytest_dws.launch.process import LiveGroups, run_process  # noqa: E402


def invocations(n: int) -> None:
    """Three sides, interleaved: no jail; the jail entered by a fork of this process (``preexec_fn``: what every
    jailed start did before issue 44); the jail entered by the spawner (a small process of its own)."""
    argv = [sys.executable, "-I", "-S", str(REPO / "fixtures" / "reference" / "dws"), "--help"]
    contained, why = probe()
    print(f"jail available: {contained} {why}".rstrip())
    containment = Containment(argv[:4], workspace=REPO)
    live = LiveGroups()
    sides = ("no jail", "jail, fork", "jail, spawner")
    walls: dict[str, list[float]] = {s: [] for s in sides}
    cpu: dict[str, float] = dict.fromkeys(sides, 0.0)
    child: dict[str, float] = dict.fromkeys(sides, 0.0)  # the target's own CPU (with its namespaces' set-up)
    with tempfile.TemporaryDirectory(prefix="bench-jail-") as tmp:
        home = Path(tmp)
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8"}
        for i in range(3 * n):
            side = sides[i % 3]
            jail = containment.jail([home], argv[:4]) if side != "no jail" else None
            before = resource.getrusage(resource.RUSAGE_SELF)
            inv = run_process(argv, env=env, cwd=home, timeout=30, jail=jail,
                              live=live if side == "jail, spawner" else None)
            after = resource.getrusage(resource.RUSAGE_SELF)
            assert inv.exit_code == 0, inv.describe()
            walls[side].append(inv.duration)
            cpu[side] += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            child[side] += inv.cpu
    live.close()
    containment.close()
    for side in sides:
        print(f"{side:13}: median {statistics.median(walls[side]) * 1000:.1f} ms per invocation, suite CPU "
              f"{cpu[side] / n * 1000:.2f} ms + target CPU {child[side] / n * 1000:.2f} ms per invocation "
              f"({n} invocations)")
    for side in sides[1:]:
        print(f"ratio ({side} / no jail), median wall per invocation: "
              f"{statistics.median(walls[side]) / statistics.median(walls['no jail']):.3f}; CPU (suite + target): "
              f"{(cpu[side] + child[side]) / (cpu['no jail'] + child['no jail']):.3f}")


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
                        help="MB this process holds while it spawns (a late xdist worker: 300-400)")
    args = parser.parse_args()
    ballast = bytearray(b"x" * (args.ballast << 20))  # held, so that the spawning process has this size
    invocations(args.n)
    del ballast
    if not args.skip_main:
        main_job()
