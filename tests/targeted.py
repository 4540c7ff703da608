"""Coverage-targeted contract runs of the reference's mutants and variants (issue 44; pytest_dws.launch.targeting).

Why: each mutant of a matrix gets its own whole contract session, and most of a session's few hundred invocations
never reach that mutant's switch point. One recorded conforming run per matrix (the *pristine* run: every invocation
with the switch points it consulted, refdws.mutants.CONSULTED_ENV) answers those; only the invocations that reached
the switch run live (``--dws-replay-unconsulted``). The pristine run is also the matrix's conforming verdict, so it
costs nothing extra. Under pytest-xdist the workers share it (tests/once.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.launch.recording import Recording
from tests.conftest import ContractRun
from tests.once import made_once, shared_root

MUTANT_ENV = "DWS_REF_MUTANT"
VARIANT_ENV = "DWS_REF_VARIANT"
#: The environment's dataset knobs (pytest_dws.inputs.settings): a recording pins them, so a pristine run has none.
DATASET_KNOBS = ("DWS_VARIANT_EXAMPLES", "DWS_VARIANT_SEED")


class SavedRun(ContractRun):
    """A contract run read back from its saved exit code, JSON report and output (another worker may have made it)."""

    def __init__(self, ret: int, report: dict[str, Any] | None, output: str) -> None:
        self.ret = ret
        self.report = report or {}
        self.gates = self.report.get("gates", {})
        self._output = output

    def output(self) -> str:
        return self._output


@dataclass(frozen=True)
class Pristine:
    """The recorded conforming run of one matrix: its folder, its verdict, the switch points it reached."""

    recording: Path
    run: SavedRun
    reached: frozenset[str]

    def reaches(self, variable: str, name: str) -> bool:
        return f"{variable}={name}" in self.reached


#: The pristine runs this process has read (a folder is never written again once done).
_READ: dict[Path, Pristine] = {}


def pristine(run_contract: Callable[..., ContractRun], tmp_path_factory: pytest.TempPathFactory, name: str,
             args: Sequence[str]) -> Pristine:
    """The matrix ``name``'s pristine run of the contract options ``args``: recorded once per test run."""
    key = shared_root(tmp_path_factory) / f"pristine-{name}"
    if key in _READ:
        return _READ[key]

    def record(folder: Path) -> None:
        # The pristine run is the matrix's own job, whichever test makes it first: a test that sets the dataset knobs
        # for its own runs (fewer generated cases, a seed of its own) would otherwise pin them into the recording,
        # and every later run of the matrix would draw other cases and run them live.
        knobs = {k: os.environ.pop(k) for k in DATASET_KNOBS if k in os.environ}
        try:
            run = run_contract(*args, "--dws-record", str(folder / "recording"))
        finally:
            os.environ.update(knobs)
        (folder / "report.json").write_text(json.dumps(run.report), encoding="utf-8")
        (folder / "output.txt").write_text(run.output(), encoding="utf-8")
        (folder / "ret").write_text(str(run.ret), encoding="utf-8")

    folder = made_once(tmp_path_factory, key.name, record)
    ret = int((folder / "ret").read_text(encoding="utf-8"))
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    saved = SavedRun(ret, report, (folder / "output.txt").read_text(encoding="utf-8"))
    recording = Recording.load(folder / "recording")
    reached = frozenset(line for docs in recording.outcomes.values() for doc in docs
                        for line in (doc["outcome"].get("consulted") or []) if "=" in line)
    _READ[key] = Pristine(folder / "recording", saved, reached)
    return _READ[key]


def targeted(pristine_run: Pristine) -> list[str]:
    """The contract options that answer a run from the pristine recording wherever it never reached a switch this
    run turns on (the rest runs live)."""
    return ["--dws-replay-unconsulted", str(pristine_run.recording)]


def unreached(pristine_run: Pristine, variable: str, name: str) -> str:
    """The finding's words when ``name``'s switch point is never reached by the pristine run, else ''."""
    if pristine_run.reaches(variable, name):
        return ""
    return (f"{variable}={name}: no invocation of the conforming run reaches its switch point, so no gate can see it "
            "through them (a finding: the mutant cannot be killed by this matrix's recorded invocations)\n")


def verdicts(run: ContractRun) -> dict[str, Any]:
    """Per gate, what a run concluded item by item (status, failing items, outcome per subject and part)."""
    keep = ("status", "failed_items", "outcomes", "parts", "cases")
    return {g: {k: v for k, v in entry.items() if k in keep} for g, entry in sorted(run.gates.items())}
