"""What an evaluation runner waits for (issue 36, must-show 3): the whole 31×5 observed replay with the scripted
baseline agent beside the suite's own dataset run on the same reference (the anchor), A B A B, a ratio per pair.

    python bench/bench_eval.py [--pairs 1] [--repeats 5] [--cli "{python} -I -S fixtures/reference/dws"]
                               [--agent "{python} -I -S fixtures/agents/scripted.py"]

- eval (A): ``pytest --dws-contract -k EVAL --dws-agent AGENT --dws-repeats 5 --dws-subject 'observed/*'``: D1
  §9.4's 31 replayed cases, 5 runs each, every run an agent process whose ``dws`` calls go through the recording
  shim to the implementation, judged by EVAL-OBSERVED and EVAL-METRICS;
- anchor (B): ``pytest --dws-contract -m "dws_ds or dws_met or dws_rel"``: the suite's own dataset run (observed,
  holdout, the variant matrix, observed and holdout again with random values), judged by DS, MET and REL.

Both are whole processes started as a user starts them (interpreter, imports, collection, report), in a scratch
folder with an empty ``pytest.ini`` and the same target, timed with ``perf_counter`` around ``wait4``; the CPU
seconds are the process's and every descendant it reaped (agents, shims, targets). In-process figures only explain
where the time goes: from each side's JSON report, the anchor's target invocations and the eval's agent runs,
``dws`` calls per run and seconds per run. The machine's load average is printed beside each pair: on a shared
machine the walls grow with the load, the ratio much less. Exit status 1 when the median ratio misses 3×.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from _probe import session_env, whole_process

REPO = Path(__file__).resolve().parents[1]
TARGET = 3.0
ANCHOR = ["-m", "dws_ds or dws_met or dws_rel"]


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its reaped descendants) of one whole process."""
    wall, _, usage = whole_process(argv, cwd, env)
    return wall, usage.ru_utime + usage.ru_stime


def explain_eval(report: dict[str, Any]) -> str:
    layer = report["evaluation"]["layers"]["observed"]
    clean = layer["dimensions"]["clean"]
    return (f"{layer['runs']} agent runs of {layer['cases']} cases ({layer['passed']} met their end state), "
            f"{clean['calls_per_case']['value']} dws calls per run, {clean['duration_per_case']['value']} s per run")


def explain_anchor(report: dict[str, Any]) -> str:
    total = (report.get("invocations") or {}).get("total") or {}
    ds = report.get("datasets") or {}
    return (f"{total.get('count')} target invocations ({total.get('cpu', 0):.1f} s of target CPU), "
            f"{ds.get('variant_cases')} variant cases")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1, help="A B pairs (each pair is minutes on 2 cores)")
    ap.add_argument("--repeats", type=int, default=5, help="runs of each observed case (D1 §9.4: 5)")
    ap.add_argument("--cli", default=f"{{python}} -I -S {REPO / 'fixtures' / 'reference' / 'dws'}")
    ap.add_argument("--agent", default=f"{{python}} -I -S {REPO / 'fixtures' / 'agents' / 'scripted.py'}")
    args = ap.parse_args()
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dws-contract", f"--dws-cli={args.cli}"]
    ratios = []
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
        work = Path(tmp)
        (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        env = session_env(work)
        eval_argv = [*base, "-k", "EVAL", f"--dws-agent={args.agent}", f"--dws-repeats={args.repeats}",
                     "--dws-subject=observed/*", "--dws-report=eval.json"]
        anchor_argv = [*base, *ANCHOR, "--dws-report=anchor.json"]
        print(f"eval:   pytest --dws-contract -k EVAL --dws-agent '{args.agent}' --dws-repeats {args.repeats} "
              "--dws-subject 'observed/*'")
        print(f"anchor: pytest --dws-contract {ANCHOR[0]} '{ANCHOR[1]}'   (target: {args.cli})")
        for i in range(args.pairs):
            load = os.getloadavg()[0]
            ev_wall, ev_cpu = run(eval_argv, work, env)
            an_wall, an_cpu = run(anchor_argv, work, env)
            load = (load + os.getloadavg()[0]) / 2
            ratios.append(ev_wall / an_wall)
            ev = json.loads((work / "eval.json").read_text(encoding="utf-8"))
            an = json.loads((work / "anchor.json").read_text(encoding="utf-8"))
            print(f"pair {i + 1}: eval {ev_wall:.1f} s wall ({ev_cpu:.1f} s CPU), anchor {an_wall:.1f} s wall "
                  f"({an_cpu:.1f} s CPU): ratio {ratios[-1]:.2f}x wall, {ev_cpu / an_cpu:.2f}x CPU "
                  f"(load average {load:.1f} on {os.cpu_count()} cores)")
            print(f"  eval:   {explain_eval(ev)}")
            print(f"  anchor: {explain_anchor(an)}")
    ratio = statistics.median(ratios)
    print(f"median ratio {ratio:.2f}x (target <= {TARGET:g}x): {'OK' if ratio <= TARGET else 'MISSED'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
