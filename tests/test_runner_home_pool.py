"""The runner's cheap per-invocation state (target.py): recycled HOME directories that are still clean and private
for every invocation, the bound on target processes shared by side-by-side batches, validated scenarios built
once, and servers lent for runs that must know their URL up front."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from fake_mcp import ScenarioError
from pytest_dws.inputs.expectations import Expectations
from pytest_dws.inputs.settings import Settings
from pytest_dws.launch import HomePool, Job, Runner
from pytest_dws.observe.context import Context

PY = sys.executable
#: Lists HOME (recursively) before writing into it when asked to: what a later invocation would inherit.
HOME_PROBE = """
import json, os, sys
home = os.environ["HOME"]
seen = sorted(os.path.relpath(os.path.join(d, n), home) for d, dirs, files in os.walk(home) for n in dirs + files)
mode = oct(os.stat(home).st_mode & 0o777)
if sys.argv[-1] == "dirty":
    open(os.path.join(home, "config", "token.json"), "w").write("secret")
    open(os.path.join(home, ".dws_history"), "w").write("x")
elif sys.argv[-1] == "chmod":
    os.chmod(os.path.join(home, "keychain"), 0o700)
print(json.dumps({"home": home, "cwd": os.getcwd(), "seen": seen, "mode": mode,
                  "config": os.environ["DWS_CONFIG_DIR"]}))
"""
#: Counts the target processes alive at once through marker files in a shared directory (no clock involved).
OVERLAP = """
import os, sys, time
d = sys.argv[-1]
me = os.path.join(d, f"run-{os.getpid()}")
open(me, "w").close()
alive = len([n for n in os.listdir(d) if n.startswith("run-")])
with open(os.path.join(d, f"seen-{os.getpid()}"), "w") as fh:
    fh.write(str(alive))
time.sleep(0.05)
os.unlink(me)
"""
#: One tools/call through the endpoint variable (argv[-1] is the keyword).
CALL = """
import json, os, sys, urllib.request
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "search_groups", "arguments": {"keyword": sys.argv[-1], "limit": 10}}})
req = urllib.request.Request(os.environ["DINGTALK_IM_MCP_URL"], body.encode(), {"Content-Type": "application/json"})
print(urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=5).read().decode())
"""
FRESH = ["config", "keychain", "tmp"]


def ctx_stub(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(settings=SimpleNamespace(timeout=10.0, env={}, profile=None), tmp_root=tmp_path)


def probe(inv) -> dict:
    assert inv.exit_code == 0, inv.describe()
    return inv.stdout_json


def test_every_invocation_gets_a_fresh_private_home_even_after_a_dirty_one(tmp_path: Path) -> None:
    runner = Runner([PY, "-c", HOME_PROBE], ctx_stub(tmp_path))
    try:
        runs = [probe(runner.run(word, globals_=False)) for word in ("clean", "dirty", "after", "chmod", "after")]
        for run in runs:  # what every invocation found: exactly the layout fake_mcp.isolation_env makes
            assert run["seen"] == FRESH and run["mode"] == "0o700" and run["cwd"] == run["home"]
            assert run["config"] == os.path.join(run["home"], "config")
            assert run["home"].startswith(str(tmp_path))
            assert not Path(run["home"]).exists()  # gone once the invocation returned
        assert len({run["home"] for run in runs}) == len(runs)  # a new path every time
    finally:
        runner.close()
    assert not any(tmp_path.iterdir())  # close() removes the pool


def test_concurrent_invocations_never_share_a_home(tmp_path: Path) -> None:
    runner = Runner([PY, "-c", HOME_PROBE], ctx_stub(tmp_path), workers=3)
    try:
        for _ in range(2):
            out = [probe(inv) for inv in runner.run_many([[f"w{i}"] for i in range(6)], globals_=False)]
            assert all(run["seen"] == FRESH for run in out)
            assert len({run["home"] for run in out}) == 6
    finally:
        runner.close()


def test_a_recycled_home_is_checked_again_before_reuse(tmp_path: Path) -> None:
    pool = HomePool(tmp_path)
    home = pool.take()
    pool.give(home)
    assert not home.exists()
    (recycled,) = list(next(tmp_path.iterdir()).iterdir())
    (recycled / "config" / "late-write").write_text("a straggler wrote here after the check")
    fresh = pool.take()
    assert sorted(p.name for p in fresh.rglob("*")) == FRESH
    assert not recycled.exists()  # the dirty one was deleted, not handed out
    pool.close()
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("workers", [1, 2])
def test_side_by_side_batches_share_the_bound_on_target_processes(tmp_path: Path, workers: int) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    runner = Runner([PY, "-c", OVERLAP], ctx_stub(tmp_path), workers=workers, writable=[marks])
    try:
        batches = [[Job((str(marks),), None, {"globals_": False}) for _ in range(4)] for _ in range(2)]
        threads = [threading.Thread(target=runner.run_jobs, args=(b,)) for b in batches]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        runner.close()
    seen = [int(p.read_text()) for p in marks.glob("seen-*")]
    assert len(seen) == 8 and max(seen) <= workers


def test_progress_is_reported_for_every_finished_job(tmp_path: Path) -> None:
    runner = Runner([PY, "-c", "pass"], ctx_stub(tmp_path), workers=2)
    done: list[tuple[int, int]] = []
    jobs = [Job((), None, {"globals_": False}) for _ in range(5)]
    runner.run_jobs(jobs, progress=lambda d, t, job: done.append((d, t)))
    runner.close()
    assert sorted(done) == [(i, 5) for i in range(1, 6)]


def test_a_scenario_is_validated_once_and_every_run_still_gets_a_fresh_world(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fake_mcp.scenario as scenario_mod

    calls: list[str] = []
    real = scenario_mod.validate
    monkeypatch.setattr(scenario_mod, "validate", lambda data, source="<s>": (calls.append(source), real(data, source)))
    world = {"name": "once", "world": {"groups": [{"cid": "cidTESTpool00000001", "title": "pooled"}]}}
    runner = Runner([PY, "-c", CALL], ctx_stub(tmp_path), workers=2)
    try:
        out = runner.run_many([[f"k{i}"] for i in range(5)], scenario=dict(world), globals_=False)
        assert [[r.arguments["keyword"] for r in inv.transcript] for inv in out] == [[f"k{i}"] for i in range(5)]
        assert len(calls) == 1
        bad = {"name": "bad", "world": {"groups": [{"title": "no cid"}]}}
        for _ in range(2):  # an invalid scenario fails every time, as an unvalidated load would
            with pytest.raises(ScenarioError):
                runner.run_jobs([Job(("x",), bad, {"globals_": False})])
    finally:
        runner.close()


def test_lent_servers_each_record_only_their_own_run(tmp_path: Path) -> None:
    runner = Runner([PY, "-c", CALL], ctx_stub(tmp_path), workers=2)
    try:
        with runner.backends({"name": "lent", "world": {}, "overrides": []}, 3) as servers:
            assert len({s.url for s in servers}) == 3
            jobs = [Job((f"s{i}",), None, {"backend": s, "globals_": False}) for i, s in enumerate(servers)]
            out = runner.run_jobs(jobs)
        assert [[r.arguments["keyword"] for r in inv.transcript] for inv in out] == [["s0"], ["s1"], ["s2"]]
    finally:
        runner.close()


def test_a_run_can_name_another_build_of_the_implementation(tmp_path: Path) -> None:
    other = tmp_path / "other.py"
    other.write_text("import json, sys; print(json.dumps(sys.argv[1:]))", encoding="utf-8")
    runner = Runner([PY, "-c", "print('main build')"], ctx_stub(tmp_path))
    inv = runner.run("schema", globals_=False, prefix=[PY, str(other)])
    runner.close()
    assert inv.argv == [PY, str(other), "schema"] and inv.stdout_json == ["schema"]


def test_context_close_runs_every_closer_even_when_one_fails(tmp_path: Path) -> None:
    ctx = Context(Settings(), Expectations(Path("e.toml"), data={}), tmp_path)
    done: list[str] = []

    def boom() -> None:
        raise RuntimeError("closer failed")

    for name in ("a", "b"):
        ctx.on_close(lambda name=name: done.append(name))
    ctx.on_close(boom)
    ctx.close()
    assert sorted(done) == ["a", "b"]
    ctx.close()  # idempotent
    assert sorted(done) == ["a", "b"]


def test_the_suite_built_worlds_are_valid_scenarios(tmp_path: Path) -> None:
    """The schema gates hand their own worlds to the fake server without re-validating them every session
    (pytest_dws.observe.binary.worlds.prebuilt): this is where they are validated, with the reference's example literals
    in them."""
    from fake_mcp import Scenario
    from fake_mcp.scenario import validate
    from pytest_dws.gates.schcli.corrupt import CORRUPT_WORLD
    from pytest_dws.gates.schcli.plugins import PLUGIN_WORLD
    from pytest_dws.observe.binary.examples import worlds
    from pytest_dws.observe.binary.worlds import prebuilt

    ref = Path(__file__).resolve().parents[1] / "fixtures" / "reference"
    ctx = Context(Settings(cli=[PY, "-I", "-S", str(ref / "dws")]), Expectations(Path("e.toml"), data={}), tmp_path)
    try:
        built = worlds(ctx)
        assert len(built["examples"]["world"]["groups"]) > 1  # the reference's example literals are in it
        for data in [*built.values(), CORRUPT_WORLD, PLUGIN_WORLD]:
            validate(data, data["name"])
            checked = Scenario.from_dict(data)
            fast = prebuilt(data)
            assert (fast.name, fast.world, fast.overrides) == (checked.name, checked.world, checked.overrides)
    finally:
        ctx.close()
