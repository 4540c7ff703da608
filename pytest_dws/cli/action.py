"""``python -m pytest_dws action run|publish``: the steps of the suite's GitHub Action (``action.yml``), as a module so
the tests run what the action runs, with a fake ``GITHUB_*`` environment.

- ``action run`` reads the action's inputs from the environment (``INPUT_CLI``, ``INPUT_SOURCE``, ``INPUT_EXPECT``,
  ``INPUT_BASELINE``, ``INPUT_SAMPLE``, ``INPUT_SHARD``, ``INPUT_AGENT``, ``INPUT_RECORD``: each one
  ``--dws-<name>=VALUE`` when set; ``INPUT_ARGS``: more pytest arguments, split like a shell), runs ``pytest
  --dws-contract`` with ``--dws-report`` and ``--dws-summary``, then publishes.
- ``action publish REPORT --exit-code N [--summary FILE]`` publishes a finished run: the closing block appended to
  ``$GITHUB_STEP_SUMMARY``; one ``::error title=<GATE-ID>::<doc>: <rule> — <first failing subject>`` workflow
  command per failing gate (stdout, where the runner reads them); the outputs ``verdict`` (the D1 §10 line),
  ``exit-code``, ``report`` and ``summary`` in ``$GITHUB_OUTPUT``.

The step exits with the run's exit code (0 nothing failed that the baseline does not accept, 1 a gate failed,
4 bad input), so the job fails with the gates; the outputs are written first (``continue-on-error`` keeps them).
Every value is given as ``--dws-X=VALUE``: pytest reads a bare path after an option as a test path when it chooses
its rootdir (docs/running.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

#: The action's inputs that name one option each, in the order they are given to pytest.
OPTION_INPUTS = ("cli", "source", "expect", "baseline", "sample", "shard", "agent", "record")


def add_parser(sub: Any) -> None:
    a = sub.add_parser("action", help="the GitHub Action's step: run the gates, then the step summary, one "
                                      "annotation per failing gate and the outputs verdict and exit-code")
    act = a.add_subparsers(dest="action_command", required=True)
    act.add_parser("run", help="run `pytest --dws-contract` with the action's inputs (INPUT_* variables), then "
                               "publish")
    p = act.add_parser("publish", help="publish a finished run: step summary, annotations, outputs")
    p.add_argument("report", help="the run's --dws-report JSON (absent: the run stopped on bad input)")
    p.add_argument("--exit-code", type=int, required=True, help="the run's exit code")
    p.add_argument("--summary", help="the run's --dws-summary Markdown (default: rendered from the report)")


def run(args: argparse.Namespace) -> int:
    if args.action_command == "publish":
        return publish(Path(args.report), args.exit_code, Path(args.summary) if args.summary else None)
    return run_action(dict(os.environ))


def pytest_argv(env: dict[str, str], report: Path, summary: Path) -> list[str]:
    """The pytest command line of the action's inputs (every value as ``--dws-X=VALUE``)."""
    argv = [sys.executable, "-m", "pytest", "--dws-contract", "-p", "no:cacheprovider"]
    for name in OPTION_INPUTS:
        value = env.get(f"INPUT_{name.upper()}", "").strip()
        if value:
            argv.append(f"--dws-{name}={value}")
    argv += [f"--dws-report={report}", f"--dws-summary={summary}"]
    return argv + shlex.split(env.get("INPUT_ARGS", ""))


def run_action(env: dict[str, str]) -> int:
    """Run the gates with the action's inputs, then publish what a person reads on the run's page."""
    out = Path(env.get("RUNNER_TEMP") or ".") / "dws-contract"
    out.mkdir(parents=True, exist_ok=True)
    report, summary = out / "dws-report.json", out / "dws-summary.md"
    for stale in (report, summary):  # a report left by an earlier run must not stand for this one
        stale.unlink(missing_ok=True)
    argv = pytest_argv(env, report, summary)
    print("dws-contract: " + shlex.join(argv[1:]), flush=True)
    code = subprocess.run(argv, check=False).returncode
    return publish(report, code, summary if summary.is_file() else None, env)


def publish(report: Path, code: int, summary: Path | None, env: dict[str, str] | None = None) -> int:
    """The summary, the annotations and the outputs of a finished run; returns the run's exit code."""
    from pytest_dws.session import summary as closing

    env = dict(os.environ) if env is None else env
    doc = _read(report)
    verdict = ""
    if doc is None:  # bad input (exit 4) or a run that never wrote its report: one annotation says so
        print(_command("error", "dws-contract", f"no report at {report}: the run stopped before judging "
                       f"(exit {code}); its ERROR line is in the log above"))
        text = f"## ❌ dws contract: exit {code}\n\nNo report: the run stopped before judging (see the log).\n"
    else:
        block = closing.build(doc)
        verdict = block.release or ""
        text = summary.read_text(encoding="utf-8") if summary is not None else closing.markdown(block)
        for line in error_commands(doc):
            print(line)
    _append(env.get("GITHUB_STEP_SUMMARY"), text)
    _outputs(env.get("GITHUB_OUTPUT"), {"verdict": verdict, "exit-code": str(code), "report": str(report),
                                        "summary": str(summary or "")})
    sys.stdout.flush()
    return code


def error_commands(doc: dict[str, Any]) -> list[str]:
    """One ``::error`` workflow command per failing gate: titled by its id; its document reference and rule, then
    its first failing subject (and that subject's first reason, when the report has one)."""
    lines = []
    for gate_id, g in sorted((doc.get("gates") or {}).items()):
        if g.get("status") not in ("failed", "error"):
            continue
        subjects = [str(s) for s in g.get("failed_items") or []]
        first = subjects[0] if subjects else gate_id
        reasons = [str(r) for r in g.get("reasons") or []]
        why = reasons[0].splitlines()[0] if reasons else ""
        text = f"{g.get('doc', '')}: {g.get('rule', '')} — {first}" + (f" ({why[:200]})" if why else "")
        if len(subjects) > 1:
            text += f"; {len(subjects) - 1} more failing subject(s) in the report"
        lines.append(_command("error", gate_id, text))
    return lines


def _command(kind: str, title: str, message: str) -> str:
    """A workflow command, with GitHub's escapes (a message keeps one line, a title no ``:`` or ``,``)."""
    def data(s: str) -> str:
        return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    prop = data(title).replace(":", "%3A").replace(",", "%2C")
    return f"::{kind} title={prop}::{data(message)}"


def _read(report: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("gates"), dict) else None


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")


def _outputs(path: str | None, values: dict[str, str]) -> None:
    """``name=value`` lines of ``$GITHUB_OUTPUT`` (a value with a newline in GitHub's delimiter form)."""
    if not path:
        for name, value in values.items():
            print(f"{name}: {value}")
        return
    with open(path, "a", encoding="utf-8") as f:
        for name, value in values.items():
            if "\n" in value:
                mark = f"dws_{uuid.uuid4().hex}"
                f.write(f"{name}<<{mark}\n{value}\n{mark}\n")
            else:
                f.write(f"{name}={value}\n")
