"""Cost-aware planning (issue 11): call kinds, the coverage sample, shards, the ledger, the merge of shards."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_dws.cli import merge
from pytest_dws.core.errors import DwsInputError
from pytest_dws.launch import plan

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "fixtures" / "reference"
PY = sys.executable
#: A launcher that logs every argv it is given, then runs the reference: what the suite asked, black-box. Its log
#: is outside the target's own folders, which the file jail refuses (issue 45): its runs are proxy-only (``NOJAIL``).
#: The reference runs in the launcher's own interpreter, as ``python -I -S DWS_REF ARGS`` would run it (its folder
#: first on the path, its name as argv[0]): one interpreter a call, not two (issue 44: 23 -> ~13 ms a call).
NOJAIL = "--dws-isolation=proxy"
LOGGER = """
import json, os, runpy, sys
with open(os.environ["DWS_ARGV_LOG"], "a", encoding="utf-8") as f:
    f.write(json.dumps(sys.argv[1:], ensure_ascii=False) + "\\n")
ref = os.environ["DWS_REF"]
sys.argv[0], sys.path[0] = ref, os.path.dirname(ref)
runpy.run_path(ref, run_name="__main__")
"""


@pytest.mark.parametrize(("args", "kind"), [
    (["chat", "message", "send", "--help"], "help"),
    (["schema", "chat.send_message"], "schema"),
    (["schema", "--cli-path", "chat", "message", "send"], "schema"),
    (["schema", "--all"], "schema --all"),
    (["chat", "message", "send", "--dws-contract-probe-flag"], "probe"),
    (["chat", "message", "send", "--group", "cid", "--dry-run"], "run"),
])
def test_call_kinds(args: list[str], kind: str) -> None:
    assert plan.kind_of(args) == kind
    assert (kind in plan.EXPENSIVE) == (kind in ("help", "schema"))


TOOL = st.fixed_dictionaries({
    "product_id": st.sampled_from(["a", "b", "c", "d"]),
    "constraints": st.dictionaries(st.sampled_from(["require_one_of", "mutually_exclusive"]),
                                   st.just([["x", "y"]]), max_size=2),
    "parameters": st.dictionaries(st.sampled_from(["p", "q", "r"]), st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "boolean"])},
        optional={"default": st.just("1"), "enum": st.just(["1"]), "format": st.sampled_from(["date", "json"])}),
        max_size=3),
    "risk": st.sampled_from(["low", "high"]),
})


@given(st.dictionaries(st.text("abcdefgh.", min_size=1, max_size=6), TOOL, min_size=1, max_size=30),
       st.sets(st.text("abc", min_size=1, max_size=3), max_size=3))
def test_coverage_sample_covers_every_feature_and_keeps_the_forced(tools, forced) -> None:
    picked = plan.coverage_sample(tools, forced)
    assert picked == plan.coverage_sample(tools, forced)  # deterministic
    assert set(forced) & set(tools) <= set(picked) <= set(tools)
    wanted = set().union(*(plan.features(t) for t in tools.values()))
    assert set().union(*(plan.features(tools[k]) for k in picked)) == wanted


@given(st.sets(st.text(min_size=1, max_size=8), max_size=40), st.integers(1, 6))
def test_shards_are_disjoint_and_make_the_whole(keys, n) -> None:
    parts = [plan.shard(keys, (k, n)) for k in range(1, n + 1)]
    assert sorted(k for p in parts for k in p) == sorted(keys)
    assert plan.shard(keys, None) == sorted(keys)


@pytest.mark.parametrize("bad", ["0/2", "3/2", "2", "a/b", "1/0"])
def test_a_malformed_shard_is_a_usage_error(run_contract, bad: str) -> None:
    run = run_contract("--dws-catalog", str(REF / "internal" / "cli" / "schema_catalog" / "catalog.json"),
                       "--dws-shard", bad)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert "--dws-shard" in run.output() and "Traceback" not in run.output()


def test_the_ledger_drains_per_item_and_keeps_the_session_means() -> None:
    ledger = plan.Ledger()
    ledger.record("help", ["dws", "x", "--help"], 5.0, 4.0, end=1005.0)
    ledger.record("run", ["dws", "x", "--dry-run"], 0.1, 0.05, end=1005.1, warm=True)
    first = ledger.drain()
    assert first is not None and first["kinds"]["help"] == {"count": 1, "wall": 5.0, "cpu": 4.0, "reused": 0,
                                                             "warm": 0, "first": 1000.0, "last": 1005.0, "span": 5.0}
    assert first["kinds"]["run"]["warm"] == 1 and plan.merge_ledgers([first, first])["total"]["warm"] == 2
    assert first["slowest"][0]["argv"] == ["dws", "x", "--help"]
    assert ledger.drain() is None
    assert ledger.mean_cpu({"help"}) == 4.0  # the estimate still knows the first measured calls
    second = {"kinds": {"help": {"count": 1, "wall": 3.0, "cpu": 2.0, "first": 1002.0, "last": 1008.0}}}
    merged = plan.merge_ledgers([first, second])  # e.g. two pytest-xdist workers side by side
    assert merged["kinds"]["help"]["count"] == 2 and merged["total"]["count"] == 3
    assert merged["costly_span"] == 8.0  # the costly calls' end-to-end wall: 1000.0 .. 1008.0
    assert plan.merge_ledgers([{"kinds": {"run": {"count": 1, "wall": 0.1, "cpu": 0.1}}}])["costly_span"] is None


def test_the_plan_line_estimates_from_the_measured_cpu() -> None:
    line = plan.plan_line({"help": 30, "schema": 10, "run": 100}, mean_cpu=4.5, places=2)
    assert "40 expensive calls (30 help, 10 schema) and 100 cheap ones" in line
    assert "estimate 1m30s" in line  # 40 x 4.5 s / 2


def _logged(log: Path) -> list[tuple[str, ...]]:
    return [tuple(json.loads(line)) for line in log.read_text(encoding="utf-8").splitlines()]


def _logging_run(launcher: Path, log: Path, *extra: str) -> list[str]:
    """The contract options of a schema run through the logging launcher (every argv it is given goes to ``log``)."""
    return ["--dws-cli", f"{{python}} -I -S {launcher}", "--dws-seed", "7", "-m", "dws_sch or dws_schcli",
            "--dws-env", f"DWS_ARGV_LOG={log}", "--dws-env", f"DWS_REF={REF / 'dws'}", NOJAIL, *extra]


def _unsharded(run_contract: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Path]:
    """(launcher, report, argv log) of the run in one process, unsharded, that both the shard and the xdist test
    compare with: made once per test run (tests/once.py; issue 44: one whole schema run fewer)."""
    from tests.once import made_once

    def make(folder: Path) -> None:
        (folder / "log.py").write_text(LOGGER, encoding="utf-8")
        run = run_contract(*_logging_run(folder / "log.py", folder / "whole.log"))
        assert run.ret == 0, run.output()[-3000:]
        (folder / "whole.json").write_text(json.dumps(run.report), encoding="utf-8")

    folder = made_once(tmp_path_factory, "plan-unsharded", make)
    return folder / "log.py", json.loads((folder / "whole.json").read_text(encoding="utf-8")), folder / "whole.log"


def test_shards_judge_exactly_the_subjects_of_one_run_and_split_its_costly_calls(
        run_contract: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Two shards, merged, give every gate the subject outcomes of the unsharded run; their costly per-tool
    calls (help and schema of a tool) are disjoint and together those of the unsharded run."""
    launcher, whole_report, whole_log = _unsharded(run_contract, tmp_path_factory)
    logs = {"whole": whole_log}
    for name in ("1", "2"):
        logs[name] = tmp_path / f"{name}.log"
        run = run_contract(*_logging_run(launcher, logs[name], "--dws-shard", f"{name}/2"))
        assert run.ret == 0, run.output()[-3000:]
        (tmp_path / f"{name}.json").write_text(json.dumps(run.report), encoding="utf-8")
    merged = merge.merge([(tmp_path / f"{k}.json", merge.load(tmp_path / f"{k}.json")) for k in ("2", "1")])
    assert merge.verdict(merged) == 0
    whole = whole_report["gates"]
    assert {g: v["outcomes"] for g, v in merged["gates"].items()} == {g: v["outcomes"] for g, v in whole.items()}
    assert merged["gates"]["SCH-HELP-EQ-SCHEMA"]["items"] == whole["SCH-HELP-EQ-SCHEMA"]["items"]

    def costly(name: str) -> set[tuple[str, ...]]:
        return {a for a in _logged(logs[name]) if plan.kind_of(a) in plan.EXPENSIVE and len(a) >= 2
                and a[0] == "schema" and "." in a[1]}  # `schema <tool>`: one per sampled tool

    # Disjoint, but for the one representative tool the fixed gates of shard 1 (--compact, the offline runs)
    # read whatever shard owns it.
    assert len(costly("1") & costly("2")) <= 1, costly("1") & costly("2")
    assert costly("1") | costly("2") == costly("whole")
    assert costly("1") and costly("2")


def test_the_merge_refuses_what_is_not_one_sharded_run(tmp_path: Path) -> None:
    good = {"suite": "pytest-dws", "target": {"cli": ["dws"]}, "gates": {}, "baseline_problems": [],
            "baseline_use": {"failed": [], "deferred_stale": []}, "sampling": {"shard": "1/2"}}
    first = tmp_path / "1.json"
    first.write_text(json.dumps(good), encoding="utf-8")
    with pytest.raises(DwsInputError, match="2/2 missing"):
        merge.merge([(first, merge.load(first))])
    with pytest.raises(DwsInputError, match="also"):
        merge.merge([(first, merge.load(first)), (first, merge.load(first))])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**good, "gates": {"X": {"status": "maybe", "family": "X", "outcomes": {}}}}))
    with pytest.raises(DwsInputError, match=r"bad\.json.*\$\.gates\.X\.status"):
        merge.load(bad)


def test_merge_cli_exit_codes(tmp_path: Path) -> None:
    import subprocess

    out = subprocess.run([PY, "-m", "pytest_dws", "merge", str(tmp_path / "none.json")], capture_output=True,
                         text=True, check=False)
    assert out.returncode == 4 and out.stderr.count("\n") == 1 and "none.json" in out.stderr


def test_xdist_workers_make_each_planned_call_once(run_contract: Any, tmp_path: Path,
                                                  tmp_path_factory: pytest.TempPathFactory) -> None:
    """Under ``-n 2`` the workers share the planned calls (pytest_dws.launch.xshare): no costly call is made twice,
    and every gate's subject outcomes are those of a run in one process."""
    launcher, one, one_log = _unsharded(run_contract, tmp_path_factory)
    logs = {"one": one_log, "xdist": tmp_path / "xdist.log"}
    xdist = run_contract(*_logging_run(launcher, logs["xdist"], "-n", "2"), inprocess=False)
    assert xdist.ret == 0, xdist.output()[-3000:]
    assert {g: v["outcomes"] for g, v in xdist.gates.items()} == {g: v["outcomes"] for g, v in one["gates"].items()}

    def costly(name: str) -> Counter[tuple[str, ...]]:
        return Counter(a for a in _logged(logs[name]) if plan.kind_of(a) in plan.EXPENSIVE)

    # The same costly calls, none more often than one process makes it (two calls may share an argv: the
    # offline runs' `dws --help` has another environment than a parse check's).
    assert costly("xdist") - costly("one") == Counter(), costly("xdist") - costly("one")
    assert set(costly("xdist")) == set(costly("one"))
    # Issue 37 (6): under xdist the progress of a big batch has its total and an ETA, as in one process.
    import re

    assert re.search(r"dws-contract: calls \d+/\d+, ETA ", xdist.output()), xdist.output()[-2000:]
