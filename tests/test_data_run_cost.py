"""A DATA run pays only for what it uses (issue: DATA gates faster than upstream's jq script): it imports
neither the runner, nor the fake backend, nor hypothesis, and it is one pytest item per gate."""

from __future__ import annotations

import pytest
import synth

PROBE = """
import sys

def pytest_unconfigure(config):
    heavy = ["hypothesis", "pytest_dws.launch.runner", "pytest_dws.launch.process", "fake_mcp.server", "fake_mcp.world",
             "deepdiff"]
    print("LOADED=" + ",".join(m for m in heavy if m in sys.modules))
"""


def test_a_data_run_imports_no_runner_backend_or_generator(pytester: pytest.Pytester) -> None:
    root = synth.build("cf").write(pytester.path / "tree")
    pytester.makepyfile(dws_probe=PROBE)
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess("-p", "dws_probe", "--dws-contract", "-p", "no:cacheprovider",
                                           "-m", "dws_data", "--dws-source", str(root), "-v")
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    loaded = next(line for line in out.splitlines() if line.startswith("LOADED="))
    assert loaded == "LOADED=", loaded  # the probe runs in the child at its very end
    items = [line for line in out.splitlines() if line.startswith("dws::")]
    assert 0 < len(items) < 60 and not any("[chat." in line for line in items)  # per gate, not per tool
