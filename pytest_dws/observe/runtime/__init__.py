"""Shared machinery of the D1 runtime gates (ERR, TGT, ALI, SMK, ACC, DS): the D1 world (:mod:`.cast`), the runs
through the one planner (:mod:`.runs`), and the judges several families share: the target contract
(:mod:`.targets`), error classification (:mod:`.classification`), compatibility aliases (:mod:`.aliases`).
No gate lives here; gate modules import from here, never from each other.
"""

from __future__ import annotations

from pytest_dws.observe.runtime.cast import D1_DIR, WORLD, Cast, Sc, cast, expand, load_cast, scenario, scenario_doc
from pytest_dws.observe.runtime.runs import (
    FAMILIES,
    Spec,
    call_of,
    collect,
    ensure,
    everything,
    ids_in,
    looks_like_cid_args,
    planned,
    prefetch,
    profile,
    provider,
    read_probe,
    require,
    require_profile,
    results,
    run,
    spec,
)

__all__ = [
    "D1_DIR",
    "FAMILIES",
    "WORLD",
    "Cast",
    "Sc",
    "Spec",
    "call_of",
    "cast",
    "collect",
    "ensure",
    "everything",
    "expand",
    "ids_in",
    "load_cast",
    "looks_like_cid_args",
    "planned",
    "prefetch",
    "profile",
    "provider",
    "read_probe",
    "require",
    "require_profile",
    "results",
    "run",
    "scenario",
    "scenario_doc",
    "spec",
]
