"""Trajectories: what one agent run of a case did (D1 §8.4, §9), as data and as a JSONL file.

The same record comes from two places: the suite's own runner (``--dws-agent CMD``: the recording shim writes
each ``dws`` call, the fake backend's transcript gives its requests) and a file of runs made by another harness
(``--dws-trajectories FILE``). Both are judged by the same judge (:mod:`pytest_dws.verdict.evaluation`), so an
evaluation run elsewhere is scored the same way. The file format is ``schemas/trajectory.json``, one object a
line, documented in docs/evaluation.md; a bad line is one input error naming the file, the line and the JSON path.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError
from pytest_dws.inputs.evaluation.cases import first_error

FORMAT = "dws-trajectory/1"


@dataclass
class Call:
    """One ``dws`` call of the agent: its argv (as the agent wrote it), exit, output and backend requests."""

    argv: list[str]
    exit: int | None
    stdout: str = ""
    stderr: str = ""
    start: float = 0.0
    duration: float = 0.0
    timed_out: bool = False
    refused: str | None = None  # the harness refused the call (the calls budget), before the implementation ran
    requests: list[dict[str, Any]] | None = None  # fake_mcp records of this call; None = not known


@dataclass
class Trajectory:
    """One run of a case by the agent (``repeat`` counts from 1)."""

    case: str
    repeat: int = 1
    calls: list[Call] = field(default_factory=list)
    symbols: dict[str, str] = field(default_factory=dict)
    prompt: str = ""
    answer: dict[str, Any] | None = None  # the typed final answer: status, candidates, trace_ids
    usage: dict[str, int] | None = None  # tokens the agent reported
    duration: float = 0.0
    exit: int | None = 0
    timed_out: bool = False
    budget_exceeded: str | None = None  # "calls" or "seconds"
    fixture: dict[str, Any] = field(default_factory=dict)  # attempts, failures and audit records of the fixture

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Trajectory:
        calls = [Call(**{k: c[k] for k in Call.__dataclass_fields__ if k in c}) for c in doc.get("calls", [])]
        rest = {k: doc[k] for k in cls.__dataclass_fields__ if k in doc and k != "calls"}
        return cls(calls=calls, **rest)


def write_jsonl(trajectories: list[Trajectory], path: Path) -> None:
    """The runs as a ``--dws-trajectories`` file (one JSON object a line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for t in trajectories:
            fh.write(json.dumps(t.to_json(), ensure_ascii=False, sort_keys=True) + "\n")


def read_jsonl(path: Path) -> list[Trajectory]:
    """Every run of a trajectories file; the first defect is one input error (exit 4): file, line, JSON path."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DwsInputError(path, "", f"cannot read the trajectories file ({exc})") from None
    out: list[Trajectory] = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DwsInputError(path, f"line {no}", f"not JSON ({exc.msg})") from None
        found = first_error(doc, "trajectory")
        if found:
            raise DwsInputError(path, f"line {no}: {found[0]}", found[1])
        out.append(Trajectory.from_json(doc))
    if not out:
        raise DwsInputError(path, "", "no trajectory in the file: nothing to judge")
    return out
