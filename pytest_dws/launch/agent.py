"""Launching an agent (``--dws-agent CMD``) on one case: the prompt on stdin, a PATH whose ``dws`` is the
implementation under test behind a recording shim, a private HOME, a time and a calls budget (D1 §8.4, §9).

The agent process runs like a target does (:func:`pytest_dws.launch.process.run_process`): its own process group
and tag, killed with everything it started at the time budget, a scrubbed environment (the minimal PATH with the
shim's folder first, a temporary HOME and TMPDIR, the dead proxy), never the case id. The shim is a small Python
program with its settings written into it (the implementation's argv, its scrubbed environment pointing at the
case's fake backend, the log folder, the calls budget): each ``dws`` call runs the implementation with the profile's
offline token before the agent's arguments, passes its output and exit code through, and leaves its files in the
log folder (argv as the agent wrote it, stdout, stderr, exit, start, duration), read as one record per call by
:func:`read_calls`. A call past the budget is refused before the implementation runs (``refused: "calls"``). The
backend requests of a call are the fake server's records that arrived while it ran (:func:`split_requests`).

The agent answers on stdout, or in the file ``$DWS_EVAL_ANSWER``: one JSON object ``{"status": ..., "candidates":
[...], "trace_ids": [...], "usage": {...}}`` (on stdout as the line ``DWS-EVAL-ANSWER {...}``); token usage may also
come alone as a line ``DWS-EVAL-USAGE {"input_tokens": N, "output_tokens": M}`` (docs/evaluation.md).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
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

SHIM = r"""#!{python} -IS
# The recording shim of pytest-dws (pytest_dws/launch/agent.py): runs the implementation under test for an agent.
# It runs once per dws call of the agent, so it imports only what loads at once (no json, no subprocess: about
# half of a Python start each); the suite turns its files into the call's record after the agent ends.
import os, sys, time
CFG = {cfg}
start = time.time()
mark = os.path.join(CFG["log"], "%.6f-%d" % (start, os.getpid()))
open(mark + ".started", "w").close()
with open(mark + ".argv", "wb") as fh:
    fh.write(b"\0".join(os.fsencode(a) for a in sys.argv[1:]))
timed_out = False
if sum(1 for n in os.listdir(CFG["log"]) if n.endswith(".started")) > CFG["calls"]:
    code, meta = 125, "refused"
    with open(mark + ".err", "w", encoding="utf-8") as fh:
        fh.write(CFG["refusal"] + "\n")
else:
    env = dict(CFG["env"])
    if os.environ.get(CFG["tag"]):
        env[CFG["tag"]] = os.environ[CFG["tag"]]
    new = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    os.chdir(CFG["cwd"])
    pid = os.posix_spawn(CFG["prefix"][0], CFG["prefix"] + sys.argv[1:], env, file_actions=[
        (os.POSIX_SPAWN_OPEN, 1, mark + ".out", new, 0o600), (os.POSIX_SPAWN_OPEN, 2, mark + ".err", new, 0o600)])
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    reaped = None
    if fd is not None:
        import select
        timed_out = not select.select([fd], [], [], CFG["timeout"])[0]
    else:  # no pidfd (not Linux): poll, waking up at most every 50 ms
        deadline, pause = time.monotonic() + CFG["timeout"], 0.001
        while reaped is None and not timed_out:
            got, st = os.waitpid(pid, os.WNOHANG)
            if got:
                reaped = st
            else:
                timed_out = time.monotonic() > deadline
                time.sleep(pause)
                pause = min(2 * pause, 0.05)
    if timed_out:
        os.kill(pid, 9)
    status = os.waitpid(pid, 0)[1] if reaped is None else reaped
    code = None if timed_out else os.waitstatus_to_exitcode(status)
    meta = "%s %r %d" % ("-" if code is None else code, time.time() - start, timed_out)
for name, stream in ((".out", sys.stdout), (".err", sys.stderr)):
    if os.path.exists(mark + name):
        with open(mark + name, "rb") as fh:
            while chunk := fh.read(1 << 16):
                stream.buffer.write(chunk)
        stream.flush()
with open(mark + ".tmp", "w", encoding="utf-8") as fh:
    fh.write(meta)
os.replace(mark + ".tmp", mark + ".done")
sys.exit(124 if code is None else code)
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
    if os.sep not in prefix[0]:  # the shim spawns a path: a bare name is looked up on the target's PATH now
        prefix[0] = shutil.which(prefix[0], path=target_env.get("PATH")) or prefix[0]
    shim_cfg = {"prefix": prefix, "env": target_env, "cwd": str(dws_home), "log": str(log.resolve()),
                "calls": calls, "timeout": float(runner.timeout), "tag": TAG_VAR, "refusal": REFUSAL}
    shim = bindir / "dws"
    shim.write_text(SHIM.replace("{python}", sys.executable).replace("{cfg}", repr(shim_cfg)), encoding="utf-8")
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
    killed left no ``.done``: it has no record."""
    records = []
    for done in log.glob("*.done"):
        mark = str(done)[:-len(".done")]
        meta = done.read_text(encoding="utf-8").split()
        raw = Path(mark + ".argv").read_bytes()
        rec: dict[str, Any] = {"argv": [os.fsdecode(a) for a in raw.split(b"\0")] if raw else [],
                               "start": float(Path(mark).name.split("-", 1)[0]),
                               "stdout": _head(Path(mark + ".out")), "stderr": _head(Path(mark + ".err"))}
        if meta == ["refused"]:
            rec.update(exit=None, duration=0.0, refused="calls")
        else:
            code, duration, timed_out = meta
            rec.update(exit=None if code == "-" else int(code), duration=float(duration), timed_out=timed_out == "1")
        records.append(rec)
    return sorted(records, key=lambda r: r["start"])


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
