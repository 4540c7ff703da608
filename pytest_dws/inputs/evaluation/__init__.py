"""The agent evaluation of D1 §8.4 and §9 as data: cases (prompt, world, faults by stage, fixture, expected end
state) in three layers, the generated variant layer, trajectories (what one run did) and the thresholds of the
metrics. Nothing here runs anything: the runner is :mod:`pytest_dws.observe.evaluation`, the judge
:mod:`pytest_dws.verdict.evaluation`.

The package: :mod:`.cases` (case files, rendering, the manifest), :mod:`.variants` (the seeded variant layer),
:mod:`.trajectories` (the run record and its JSONL file), :mod:`.thresholds` (release data of the metrics).
"""

from __future__ import annotations

from pytest_dws.inputs.evaluation.cases import (
    ANSWERS,
    LAYERS,
    STAGES,
    AgentCase,
    Rendered,
    agent_root,
    load_file,
    load_layer,
)
from pytest_dws.inputs.evaluation.trajectories import Call, Trajectory, read_jsonl, write_jsonl

__all__ = ["ANSWERS", "LAYERS", "STAGES", "AgentCase", "Call", "Rendered", "Trajectory", "agent_root", "load_file",
           "load_layer", "read_jsonl", "write_jsonl"]
