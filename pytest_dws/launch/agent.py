"""Launching an agent (``--dws-agent CMD``) on one case: the prompt on stdin, a PATH whose ``dws`` is the
implementation under test behind a recording shim, a private HOME, a time and a calls budget (D1 §8.4, §9).

The agent process runs like a target does (:func:`pytest_dws.launch.process.run_process`): its own process group
and tag, killed with everything it started at the time budget, a scrubbed environment (the minimal PATH with the
shim's folder first, a temporary HOME and TMPDIR, the dead proxy), never the case id. The shim is a small Python
program written next to a ``shim.json`` (the implementation's argv, its scrubbed environment pointing at the case's
fake backend, the log folder, the calls budget): each ``dws`` call runs the implementation with the profile's
offline token before the agent's arguments, passes its output and exit code through, and leaves one JSON record
(argv as the agent wrote it, exit, stdout, stderr, start, duration). A call past the budget is refused before the
implementation runs (``refused: "calls"``). The backend requests of a call are the fake server's records that
arrived while it ran (:func:`split_requests`).

The agent answers on stdout, or in the file ``$DWS_EVAL_ANSWER``: one JSON object ``{"status": ..., "candidates":
[...], "trace_ids": [...], "usage": {...}}`` (on stdout as the line ``DWS-EVAL-ANSWER {...}``); token usage may also
come alone as a line ``DWS-EVAL-USAGE {"input_tokens": N, "output_tokens": M}`` (docs/evaluation.md).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_dws.launch.process import TAG_VAR, run_process

ANSWER_LINE = "DWS-EVAL-ANSWER "
USAGE_LINE = "DWS-EVAL-USAGE "
#: Bytes of a call's stdout / stderr kept in its record (a flood is cut, and says so).
RECORD_CAP = 1 << 20

SHIM = r'''#!{python} -IS
# The recording shim of pytest-dws (pytest_dws/launch/agent.py): runs the implementation under test for an agent.
import json, os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "shim.json"), encoding="utf-8") as fh:
    cfg = json.load(fh)
args, log = sys.argv[1:], cfg["log"]
start = time.time()
mark = os.path.join(log, "%.6f-%d" % (start, os.getpid()))
open(mark + ".started", "w").close()
rec = {"argv": args, "start": start}
if len([n for n in os.listdir(log) if n.endswith(".started")]) > cfg["calls"]:
    err = json.dumps({"error": {"code": 4, "category": "internal", "reason": "call_budget_exceeded",
                                "message": "the evaluation's calls budget for this case is spent"}})
    rec.update(exit=None, stdout="", stderr=err, duration=0.0, refused="calls")
    code, out, errb = 125, b"", (err + "\n").encode()
else:
    env = dict(cfg["env"])
    if os.environ.get(cfg["tag"]):
        env[cfg["tag"]] = os.environ[cfg["tag"]]
    try:
        p = subprocess.run(cfg["prefix"] + args, env=env, cwd=cfg["cwd"], capture_output=True, timeout=cfg["timeout"])
        code, out, errb, timed_out = p.returncode, p.stdout, p.stderr, False
    except subprocess.TimeoutExpired as exc:
        code, out, errb, timed_out = None, exc.stdout or b"", exc.stderr or b"", True
    cap = cfg["cap"]
    rec.update(exit=code, stdout=out[:cap].decode("utf-8", "replace"), stderr=errb[:cap].decode("utf-8", "replace"),
               duration=time.time() - start, timed_out=timed_out)
with open(mark + ".tmp", "w", encoding="utf-8") as fh:
    json.dump(rec, fh, ensure_ascii=False)
os.replace(mark + ".tmp", mark + ".json")
sys.stdout.buffer.write(out)
sys.stderr.buffer.write(errb)
sys.exit(124 if code is None else code)
'''


@dataclass
class AgentRun:
    """What one agent process left: its exit and output, the shim's call records, its answer and usage."""

    exit: int | None
    stdout: str
    stderr: str
    duration: float
    timed_out: bool
    calls: list[dict[str, Any]] = field(default_factory=list)
    answer: dict[str, Any] | None = None
    usage: dict[str, int] | None = None


def run_agent(runner: Any, argv: Sequence[str], prompt: str, backend: Any, *, seconds: float, calls: int,
              tmp: Path, limit: Any = None) -> AgentRun:
    """Run the agent once on a prepared backend; ``runner``: the session's :class:`pytest_dws.launch.Runner`,
    ``limit``: the :class:`~pytest_dws.launch.places.Places` bounding how many agents run at once."""
    from fake_mcp import isolation_env
    from fake_mcp.env import MINIMAL_PATH

    work = Path(tempfile.mkdtemp(prefix="agent-", dir=tmp))
    bindir, log, home, dws_home = work / "bin", work / "calls", work / "home", work / "dws-home"
    for d in (bindir, log, home, dws_home):
        d.mkdir()
    shim_cfg = {"prefix": [*runner.prefix, *runner.global_args("t")], "env": runner.environment(dws_home, backend),
                "cwd": str(dws_home), "log": str(log), "calls": calls, "timeout": runner.timeout, "cap": RECORD_CAP,
                "tag": TAG_VAR}
    (bindir / "shim.json").write_text(json.dumps(shim_cfg), encoding="utf-8")
    shim = bindir / "dws"
    shim.write_text(SHIM.replace("{python}", sys.executable), encoding="utf-8")
    shim.chmod(0o755)
    answer_file = work / "answer.json"
    env = {"PATH": f"{bindir}:{MINIMAL_PATH}", "LANG": "C.UTF-8", **isolation_env(home),
           "DWS_EVAL_PROMPT": prompt, "DWS_EVAL_ANSWER": str(answer_file)}
    inv = run_process(list(argv), env=env, cwd=home, timeout=seconds, stdin=prompt.encode("utf-8"),
                      limit=limit, live=runner.live)
    records = []
    for path in sorted(log.glob("*.json"), key=lambda p: float(p.name.split("-", 1)[0])):
        try:
            records.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    answer, usage = read_answer(inv.stdout or "", answer_file)
    return AgentRun(None if inv.timed_out or inv.crashed else inv.exit_code, inv.stdout or "", inv.stderr or "",
                    inv.duration, bool(inv.timed_out), records, answer, usage)


def read_answer(stdout: str, answer_file: Path | None = None) -> tuple[dict[str, Any] | None, dict[str, int] | None]:
    """The typed answer (file first, else the last ``DWS-EVAL-ANSWER`` line) and the token usage it reports."""
    answer: dict[str, Any] | None = None
    usage: dict[str, int] | None = None
    if answer_file is not None and answer_file.is_file():
        answer = _object(answer_file.read_text(encoding="utf-8", errors="replace"))
    for line in stdout.splitlines():
        if line.startswith(ANSWER_LINE) and answer is None:
            answer = _object(line[len(ANSWER_LINE):])
        elif line.startswith(USAGE_LINE):
            usage = _object(line[len(USAGE_LINE):])
    if answer is not None and isinstance(answer.get("usage"), dict):
        usage = usage or answer.pop("usage")
    answer = answer if answer is not None and answer.get("status") in ("complete", "partial", "stopped",
                                                                           "failed") else None
    usage = {k: int(v) for k, v in (usage or {}).items() if k in ("input_tokens", "output_tokens")
             and isinstance(v, int) and v >= 0} or None
    return answer, usage


def _object(text: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def split_requests(calls: list[dict[str, Any]], records: Sequence[Any]) -> None:
    """Give each call the backend records that arrived while it ran (``requests``); a record between calls (or of
    calls that overlapped) goes to the call that started last before it."""
    for call in calls:
        call["requests"] = []
    timed = sorted(((c["start"], c["start"] + float(c.get("duration") or 0.0), c) for c in calls if
                    c.get("refused") is None), key=lambda t: t[0])
    for rec in records:
        doc = rec.to_dict() if hasattr(rec, "to_dict") else dict(rec)
        at = float(doc.get("time") or 0.0)
        owner = None
        for start, _end, call in timed:
            if start <= at + 0.001:
                owner = call
        if owner is not None:
            owner["requests"].append({k: doc.get(k) for k in ("rpc_method", "product", "tool", "arguments",
                                                              "status", "outcome", "time")})
