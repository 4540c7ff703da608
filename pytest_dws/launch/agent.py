"""Launching an agent (``--dws-agent CMD``) on one case: the prompt on stdin, a PATH whose ``dws`` is the
implementation under test behind a recording shim, a private HOME, a time and a calls budget (D1 §8.4, §9).

The agent process runs like a target does (:func:`pytest_dws.launch.process.run_process`): its own process group
and tag, killed with everything it started at the time budget, a scrubbed environment (the minimal PATH with the
shim's folder first, a temporary HOME and TMPDIR, the dead proxy), never the case id. The shim is a POSIX sh
script with its settings written into it (the implementation's argv, its scrubbed environment pointing at the
case's fake backend, the log folder, the calls budget, the runner's timeout): each ``dws`` call runs the
implementation with the profile's offline token before the agent's arguments, passes its output and exit code
through, and leaves its files in the log folder (argv as the agent wrote it, stdout, stderr, exit, start and end),
read as one record per call by :func:`read_calls`. A call past the budget is refused before the implementation runs
(``refused: "calls"``); a call past the timeout is killed (``timed_out``, exit 124 to the agent). The backend
requests of a call are the fake server's records that arrived while it ran (:func:`split_requests`). A Python shim
cost as much as the implementation's own start per call (bench/bench_eval.py).

The agent answers on stdout, or in the file ``$DWS_EVAL_ANSWER``: one JSON object ``{"status": ..., "candidates":
[...], "trace_ids": [...], "usage": {...}}`` (on stdout as the line ``DWS-EVAL-ANSWER {...}``); token usage may also
come alone as a line ``DWS-EVAL-USAGE {"input_tokens": N, "output_tokens": M}`` (docs/evaluation.md).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_dws.inputs.evaluation.cases import ANSWERS
from pytest_dws.launch.process import TAG_VAR, run_process

ANSWER_LINE = "DWS-EVAL-ANSWER "
USAGE_LINE = "DWS-EVAL-USAGE "
#: Bytes of a call's stdout / stderr kept in its record (a flood is cut, and says so).
RECORD_CAP = 1 << 20
#: What the shim prints for a call past the calls budget (before the implementation runs).
REFUSAL = json.dumps({"error": {"code": 4, "category": "internal", "reason": "call_budget_exceeded",
                                "message": "the evaluation's calls budget for this case is spent"}})

SHIM = r"""#!/bin/sh
# The recording shim of pytest-dws (pytest_dws/launch/agent.py): runs the implementation under test for an agent.
# POSIX sh and a few standard utilities, no interpreter: it runs once per dws call of the agent. Its files in the
# log folder become the call's record in the suite (read_calls).
log={log}
m="$log/$$"
while ! {{ set -C; : > "$m.started"; }} 2>/dev/null; do m="$m+"; done
set +C
date +%s.%N > "$m.start" 2>/dev/null
: > "$m.argv"
[ "$#" -eq 0 ] || printf '%s\0' "$@" > "$m.argv"
n=0
for f in "$log"/*.started; do n=$((n + 1)); done
if [ "$n" -gt {calls} ]; then
    printf '%s\n' {refusal} > "$m.err"
    cat "$m.err" >&2
    echo refused > "$m.meta"
    : > "$m.done"
    exit 125
fi
exec 3<&0
cd {cwd} || exit 125
env -i {env} ${{{tag}+"{tag}=${tag}"}} {prefix} "$@" <&3 3<&- > "$m.out" 2> "$m.err" &
p=$!
(trap 'kill "$s" 2>/dev/null; exit 0' TERM; sleep {timeout} & s=$!; wait "$s" && : > "$m.killed" && kill -9 "$p") \
    < /dev/null > /dev/null 2>&1 &
w=$!
wait "$p"
code=$?
kill "$w" 2>/dev/null
cat "$m.out"
cat "$m.err" >&2
if [ -e "$m.killed" ]; then code=124; echo "- 1" > "$m.meta"; else echo "$code 0" > "$m.meta"; fi
: > "$m.done"
exit "$code"
"""


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
    prefix = [*runner.prefix, *runner.global_args("t")]
    target_env = runner.environment(dws_home, backend)
    if os.sep not in prefix[0]:  # a bare name is looked up on the target's PATH now, as the runner does
        prefix[0] = shutil.which(prefix[0], path=target_env.get("PATH")) or prefix[0]
    q = shlex.quote
    shim = bindir / "dws"
    shim.write_text(SHIM.format(log=q(str(log.resolve())), calls=int(calls), refusal=q(REFUSAL), cwd=q(str(dws_home)),
                                env=" ".join(q(f"{k}={v}") for k, v in target_env.items()), tag=TAG_VAR,
                                prefix=" ".join(q(a) for a in prefix), timeout=max(1, math.ceil(runner.timeout))),
                    encoding="utf-8")
    shim.chmod(0o755)
    answer_file = work / "answer.json"
    env = {"PATH": f"{bindir}:{MINIMAL_PATH}", "LANG": "C.UTF-8", **isolation_env(home),
           "DWS_EVAL_PROMPT": prompt, "DWS_EVAL_ANSWER": str(answer_file)}
    inv = run_process(list(argv), env=env, cwd=home, timeout=seconds, stdin=prompt.encode("utf-8"),
                      limit=limit, live=runner.live)
    records = read_calls(log)
    answer, usage = read_answer(inv.stdout or "", answer_file)
    return AgentRun(None if inv.timed_out or inv.crashed else inv.exit_code, inv.stdout or "", inv.stderr or "",
                    inv.duration, bool(inv.timed_out), records, answer, usage)


def read_calls(log: Path) -> list[dict[str, Any]]:
    """The records the shim left in ``log``, in the order the calls started: argv, start, exit, stdout and stderr
    (the first :data:`RECORD_CAP` bytes), duration, timed_out, ``refused``. A call still running when the agent was
    killed left no ``.done``: it has no record. The start is the shim's clock reading (``date +%s.%N``: the order of
    calls and requests, :func:`split_requests`), else, where ``date`` has no nanoseconds, the time of its first
    marker file; the end is the time of its last one."""
    records = []
    for done in log.glob("*.done"):
        mark = str(done)[:-len(".done")]
        meta = Path(mark + ".meta").read_text(encoding="utf-8").split()
        raw = Path(mark + ".argv").read_bytes()
        start = _clock(Path(mark + ".start"), Path(mark + ".started"))
        rec: dict[str, Any] = {"argv": [os.fsdecode(a) for a in raw[:-1].split(b"\0")] if raw else [], "start": start,
                               "stdout": _head(Path(mark + ".out")), "stderr": _head(Path(mark + ".err"))}
        if meta == ["refused"]:
            rec.update(exit=None, duration=0.0, refused="calls")
        else:
            code, timed_out = meta
            end = done.stat().st_mtime_ns / 1e9  # the file clock may lag a tick: a duration, not an order
            rec.update(exit=None if code == "-" else int(code), duration=round(max(0.0, end - start), 6),
                       timed_out=timed_out == "1")
        records.append(rec)
    return sorted(records, key=lambda r: r["start"])


def _clock(reading: Path, marker: Path) -> float:
    try:
        return float(reading.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return marker.stat().st_mtime_ns / 1e9


def _head(path: Path) -> str:
    if not path.is_file():
        return ""
    with path.open("rb") as fh:
        return fh.read(RECORD_CAP).decode("utf-8", "replace")


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
    answer = answer if answer is not None and answer.get("status") in ANSWERS else None
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
