"""Nothing judged is never a pass (issues 24, 28): every registered gate, run against implementations that give
it nothing to read, ends failed or not applicable, never passed.

Two hollow targets walk the whole registry: one prints something that is not JSON and exits 0 for everything
(a gate that reads only the exit code would pass it), one prints nothing and exits 0 (a gate that judges only
what failed would pass it). A gate that passes either of them is a gate that can pass without judging."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.registry import gate_ids

pytestmark = pytest.mark.slow

HOLLOW = {
    "garbage": '#!/bin/sh\necho \'{"this is": not json\'\nexit 0\n',
    # Answers --help (a dws at first sight, issue 28's identity probe), then nothing at all.
    "silent": '#!/bin/sh\ncase " $* " in *" --help "*) echo "Usage: dws [command]";; esac\nexit 0\n',
}


@pytest.mark.parametrize("kind", sorted(HOLLOW))
def test_a_hollow_target_passes_no_gate(kind: str, run_contract: Callable[..., Any], tmp_path: Path) -> None:
    script = tmp_path / f"{kind}.sh"
    script.write_text(HOLLOW[kind], encoding="utf-8")
    script.chmod(0o755)
    run = run_contract("--dws-cli", str(script))
    assert run.ret == 1, run.output()[-2000:]
    statuses = {g: v["status"] for g, v in run.report["gates"].items()}
    binary_gates = {g for g, v in run.report["gates"].items() if v["status"] != "not_applicable"}
    assert binary_gates, "nothing was judged at all"
    passed = sorted(g for g, s in statuses.items() if s == "passed")
    assert not passed, f"gates that passed a target that gave them nothing to judge: {passed}"
    assert set(statuses) <= set(gate_ids())
