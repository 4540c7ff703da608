"""Issue 36: the agent evaluation (D1 §8.4, §9, §10): an agent's runs judged, not the suite's own calls.

One baseline run (the scripted agent of fixtures/agents on the reference, every case of the three layers once) is
made per module and read by several tests: it meets D1 §10 from the agent's runs, every layer is judged, every
§9.5 metric is there; the same runs written to JSONL and judged with --dws-trajectories give identical metrics;
its HTML page renders in a real headless Chromium with the JSON's numbers. Each flawed agent is caught in its
dimension and metric (tests/test_evaluation_agents.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.core.errors import DwsInputError
from pytest_dws.inputs.evaluation import load_layer, read_jsonl
from pytest_dws.inputs.evaluation.variants import generate
from pytest_dws.verdict.evalmetrics import DEFINITIONS
from tests.conftest import WARM_START
from tests.once import made_once

REPO = Path(__file__).resolve().parents[1]
REFERENCE = f"{{python}} -I -S {REPO / 'fixtures' / 'reference' / 'dws'}"
AGENT = f"{{python}} -I -S {REPO / 'fixtures' / 'agents' / 'scripted.py'}"  # stdlib only, like the reference


def contract(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A contract session in a subprocess of its own (an isolated rootdir: the repo's ini target is not used)."""
    (cwd / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "pytest", "--dws-contract", "-p", "no:cacheprovider", "-p",
                           "no:xdist", "-q", "--dws-cli", REFERENCE, f"--dws-warm-start={WARM_START}", *args],
                          cwd=cwd, capture_output=True,
                          text=True, timeout=1500)


def _evaluate_baseline(cwd: Path) -> None:
    proc = contract(cwd, "-k", "EVAL or REL", "--dws-agent", AGENT, "--dws-repeats", "1",
                    "--dws-report=report.json", "--dws-agent-log=runs.jsonl", "--dws-eval-html=page.html",
                    "--dws-summary=summary.md")
    (cwd / "ret").write_text(str(proc.returncode), encoding="utf-8")
    (cwd / "stdout.txt").write_text(proc.stdout, encoding="utf-8")
    (cwd / "stderr.txt").write_text(proc.stderr, encoding="utf-8")


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The scripted baseline agent on every case (one repeat each), with the JSONL, HTML and Markdown outputs: run once
    for every worker of the test run (tests/once.py)."""
    cwd = made_once(tmp_path_factory, "eval-baseline", _evaluate_baseline)
    proc = subprocess.CompletedProcess(["pytest"], int((cwd / "ret").read_text(encoding="utf-8")),
                                       (cwd / "stdout.txt").read_text(encoding="utf-8"),
                                       (cwd / "stderr.txt").read_text(encoding="utf-8"))
    report = json.loads((cwd / "report.json").read_text(encoding="utf-8"))
    return {"cwd": cwd, "proc": proc, "report": report}


# -- the cases as data -------------------------------------------------------------------------------------------
def test_the_observed_layer_replays_d1s_31_cases_and_74_failures_by_class() -> None:
    cases = load_layer("observed")
    assert len(cases) == 31
    by_class: dict[str, int] = {}
    for c in cases:
        by_class[c.group] = by_class.get(c.group, 0) + c.replays
    assert by_class == {"ambiguous_same_name": 37, "stable_id_in_name_param": 17, "name_in_id_param": 7,
                        "flag_drift": 11, "auth_whoami": 1, "mcp_internal_failure": 1, "clean": 0}


def test_the_holdout_and_the_variants_cover_their_d1_rows() -> None:
    holdout = {c.pattern for c in load_layer("holdout")}
    assert holdout == {"same-name-groups", "zero-hits", "cross-profile-id", "write-unknown-state",
                       "later-page-failure"}
    variants = generate(7)
    dims = {k: {c.dims[k] for c in variants} for k in ("target_input", "entry", "backend_error", "stage")}
    assert dims["target_input"] == {"unique_name", "cid", "fuzzy_name", "same_name", "zero_hits"}
    assert dims["entry"] == {"canonical", "alias", "conflict"}
    assert {"metadata", "execution", "later_page", "before_call"} <= dims["stage"]
    assert [c.symbols for c in generate(7)] == [c.symbols for c in variants]  # seeded
    assert [c.symbols for c in generate(8)] != [c.symbols for c in variants]


def test_variants_beyond_the_covering_set_are_drawn_from_the_seed_over_every_dimension() -> None:
    """D1 §9.3: the variant layer is generated, not only the covering set: points drawn by hypothesis from the seed
    over target input, entry, command type, backend error, stage and result; one seed, one set; a drawn point is
    never a covering one; every case id spells its point, so a run of another seed is judged by its own case."""
    from pytest_dws.inputs.evaluation.variants import DEFAULT_EXAMPLES, case_of, invalid, load_matrix, points, space

    matrix = load_matrix()
    cover = {p.id for p in points(matrix)}
    layer = generate(7)
    drawn = [c for c in layer if c.id not in cover]
    assert len(layer) == len(cover) + DEFAULT_EXAMPLES == len({c.id for c in layer})
    assert [c.id for c in generate(7)] == [c.id for c in layer]
    assert {c.id for c in generate(8)} - cover != {c.id for c in drawn}
    assert [c.id for c in generate(7, examples=0)] == [c.id for c in layer if c.id in cover]
    many = generate(7, examples=60)
    dims = {k: {c.dims[k] for c in many if c.id not in cover} for k in ("target_input", "entry", "command_type",
                                                                         "backend_error", "stage", "result")}
    assert dims["command_type"] == {"read", "write", "high_risk_write"} and dims["entry"] == {"canonical", "alias",
                                                                                             "conflict"}
    assert {"before_call", "metadata", "execution", "later_page"} <= dims["stage"] and len(dims["backend_error"]) >= 5
    assert {"complete", "retry_recovered", "partial", "fail_closed"} <= dims["result"]
    valid = {p.id for p in space(matrix)}
    for case in many:
        assert case.id in valid and case.dims["result"]
        again = case_of(case.id, 7)
        assert again is not None and again.expect == case.expect and again.faults == case.faults, case.id
    assert case_of("variant/send/same_name/param-execution", 7) is None  # a stop comes before any error
    assert all(invalid(matrix, p) is None for p in points(matrix))  # the covering set has its end states


def test_no_prompt_holds_a_fixture_audit_id_or_a_fixed_evaluation_name() -> None:
    for case in load_layer("observed") + load_layer("holdout") + generate(3):
        r = case.render()
        assert "dws测试群" not in r.prompt
        residue = [g["cid"] for g in r.scenario["world"].get("groups", [])
                   if g["title"] in r.fixture.get("unique", {}) and g["cid"] not in r.fixture["unique"].values()]
        assert not any(cid in r.prompt for cid in residue), case.id


def test_a_bad_case_file_is_one_line_naming_the_file_and_path(tmp_path: Path) -> None:
    from pytest_dws.inputs.evaluation import load_file

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"pattern": "p", "doc": "d", "cases": [{"id": "x", "prompt": "p",
                                                                       "expect": {"answer": "done"}}]}))
    with pytest.raises(DwsInputError) as exc:
        load_file(bad, "observed")
    assert str(exc.value).startswith(f"dws-contract: {bad}: $.cases[0].expect.answer: ") and "\n" not in str(exc.value)


def test_bad_trajectories_are_a_usage_error_naming_the_line(run_contract: Callable[..., Any],
                                                            pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", runs='{"case": "observed/accepted-clean/conversations", "calls": []}\n'
                                     '{"case": "observed/accepted-clean/conversations", "calls": [{"argv": "x"}]}\n')
    run = run_contract("--dws-trajectories", "runs.jsonl", "-k", "EVAL")
    assert run.ret == 4
    errors = [x for x in run.output().splitlines() if x.startswith("ERROR:")]
    assert errors == [f"ERROR: dws-contract: {pytester.path / 'runs.jsonl'}: line 2: $.calls[0]: "
                      "'exit' is a required property"]
    pytester.makefile(".jsonl", other='{"case": "observed/no-such/case", "calls": []}\n')
    run = run_contract("--dws-trajectories", "other.jsonl", "-k", "EVAL")
    assert run.ret == 4 and "$.case: no evaluation case 'observed/no-such/case'" in run.output()


def test_an_agent_and_a_file_of_runs_together_are_a_usage_error(run_contract: Callable[..., Any],
                                                                 pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", runs="\n")
    run = run_contract("--dws-agent", AGENT, "--dws-trajectories", "runs.jsonl", "-k", "EVAL")
    assert run.ret == 4 and "ERROR: dws-contract: --dws-agent: give an agent to run or a file" in run.output()


def test_without_an_agent_the_eval_gates_are_not_applicable_and_rel_says_its_source(
        run_contract: Callable[..., Any], answered: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DWS_VARIANT_EXAMPLES", "0")
    run = run_contract("--dws-cli", REFERENCE, "-k", "EVAL or REL", *answered)
    assert {g: run.status(g) for g in run.gates if g.startswith("EVAL")} == dict.fromkeys(
        ("EVAL-FIXTURES", "EVAL-HOLDOUT", "EVAL-METRICS", "EVAL-OBSERVED", "EVAL-VARIANT"), "not_applicable")
    assert run.report["release"]["source"] == "the suite's own calls (proxy: no --dws-agent)"
    assert any(x.startswith("release verdict (D1 §10): MET") and x.endswith("(proxy: no --dws-agent))")
               for x in run.output().splitlines())


# -- the baseline agent --------------------------------------------------------------------------------------------
def test_the_baseline_agent_meets_d1_10_from_its_own_runs(baseline: dict[str, Any]) -> None:
    proc, report = baseline["proc"], baseline["report"]
    assert proc.returncode == 0, proc.stdout[-4000:]
    statuses = {g: v["status"] for g, v in report["gates"].items()}
    assert statuses == dict.fromkeys(("EVAL-FIXTURES", "EVAL-HOLDOUT", "EVAL-METRICS", "EVAL-OBSERVED",
                                      "EVAL-VARIANT", "REL-ALL"), "passed")
    assert report["release"]["verdict"] == "pass"
    assert report["release"]["source"].startswith("the agent's runs (agent: ")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("release verdict (D1 §10)"))
    assert line.startswith("release verdict (D1 §10): MET") and "decided from the agent's runs" in line


def test_every_layer_is_judged_with_every_metric_in_its_dimension(baseline: dict[str, Any]) -> None:
    sec = baseline["report"]["evaluation"]
    assert set(sec["layers"]) == {"observed", "variant", "holdout", "all"}
    assert sec["layers"]["observed"]["cases"] == 31 and sec["layers"]["holdout"]["cases"] == 15
    assert set(sec["dimensions"]) == {"business correctness", "safe stops", "infrastructure reliability", "clean"}
    for name, layer in sec["layers"].items():
        metrics = {m: v for ms in layer["dimensions"].values() for m, v in ms.items()}
        assert set(metrics) == set(DEFINITIONS), name
        assert layer["broken"] == [] and layer["passed"] == layer["runs"]
    every = {m: v for ms in sec["layers"]["all"]["dimensions"].values() for m, v in ms.items()}
    unmeasured = sorted(m for m, v in every.items() if v["value"] is None)
    assert unmeasured == ["corrections_after_unknown"]  # the baseline never met an unknown command or flag
    assert every["wrong_writes"]["value"] == every["duplicate_writes"]["value"] == 0
    assert every["classification_accuracy"]["denominator"] > 10 and every["safe_stop_rate"]["denominator"] > 10
    assert sec["layers"]["all"]["pass_hat_k"] == {"1": 1.0}
    assert sec["layers"]["all"]["classes"]["expected_resolution_stop"] > 0


def test_fixture_failures_are_isolated_rerun_and_kept_apart(baseline: dict[str, Any]) -> None:
    fx = baseline["report"]["evaluation"]["fixture"]
    assert fx["reruns"] == 8 and fx["not_accepted"] == []  # the 8 cases whose tenant held a namesake
    assert {a["action"] for a in fx["audit"]} == {"isolated"} and not any(a["in_prompt"] for a in fx["audit"])
    assert all(a["ids"] and a["kept"] for a in fx["audit"])
    replays = baseline["report"]["evaluation"]["replays"]
    assert sum(r["replays"] for r in replays.values()) == 74 == sum(r["met"] for r in replays.values())


def test_the_same_runs_judged_from_jsonl_give_identical_metrics(baseline: dict[str, Any]) -> None:
    cwd = baseline["cwd"]
    runs = read_jsonl(cwd / "runs.jsonl")
    assert len(runs) == baseline["report"]["evaluation"]["layers"]["all"]["runs"]
    # judged under another seed: the variants drawn by the run's seed are rebuilt from their ids (case_of)
    other = baseline["report"]["evaluation"]["seed"] + 1
    proc = contract(cwd, "-k", "EVAL", "--dws-trajectories", "runs.jsonl", "--dws-report=again.json",
                    f"--dws-seed={other}")
    assert proc.returncode == 0, proc.stdout[-3000:]
    again = json.loads((cwd / "again.json").read_text(encoding="utf-8"))["evaluation"]
    first = baseline["report"]["evaluation"]
    assert again["source"].startswith("trajectories: ") and again["seed"] == other
    assert again["layers"] == first["layers"] and again["replays"] == first["replays"]


def test_the_markdown_summary_carries_the_evaluation(baseline: dict[str, Any]) -> None:
    text = (baseline["cwd"] / "summary.md").read_text(encoding="utf-8")
    assert "### Agent evaluation (D1 §9.5, §10)" in text
    assert "- observed: 31 of 31 runs met their end state (31 cases)" in text


def test_the_html_page_renders_in_headless_chromium_with_the_jsons_numbers(baseline: dict[str, Any]) -> None:
    """A real browser (Debian's chromium + chromium-driver through selenium) renders the page; each metric row
    shows the JSON's value, the bars have a width, and the screenshot is kept for the issue's closing note."""
    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.skip("browser test not run: no chromium/chromedriver on this machine (Debian packages chromium and "
                    "chromium-driver; .ci/run installs them where apt is available)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="browser test not run: selenium not installed")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    page = baseline["cwd"] / "page.html"
    driver = webdriver.Chrome(service=Service(driver_bin), options=options)
    try:
        driver.get(page.as_uri())
        assert driver.title == "dws agent evaluation"
        sec = baseline["report"]["evaluation"]
        rows = driver.find_elements(By.CSS_SELECTOR, "tr[data-metric]")
        seen = 0
        for row in rows:
            layer, metric = row.get_attribute("data-layer"), row.get_attribute("data-metric")
            want = next(ms[metric] for ms in sec["layers"][layer]["dimensions"].values() if metric in ms)
            shown = row.find_elements(By.CSS_SELECTOR, "td.v")[0].text
            assert row.is_displayed()
            assert shown.split(" ")[0] == ("n/a" if want["value"] is None else
                                           f"{want['value']:.3f}" if "denominator" in want else
                                           (f"{want['value']:g}" if isinstance(want["value"], float)
                                            else str(want["value"]))), (layer, metric, shown)
            seen += 1
        # D1 §9.4: without the suite's own layers in this run, clean is withheld, and the page says why
        assert seen == sum(len(ms) for lay in sec["layers"].values() for d, ms in lay["dimensions"].items()
                           if d != "clean")
        assert "withheld (D1 §9.4" in driver.find_element(By.TAG_NAME, "body").text
        bars = driver.find_elements(By.CSS_SELECTOR, "tr[data-metric='pass_rate'] .bar span")
        assert bars and all(float(b.value_of_css_property("width").rstrip("px")) > 100 for b in bars)
        verdict = driver.find_element(By.ID, "release").text
        assert "MET" in verdict and "agent's runs" in verdict
        # issue 46: at 1280 px every metric table stays inside its card (the threshold column ran past its edge)
        outside = driver.execute_script(
            "return [...document.querySelectorAll('.dim')].flatMap(card => {"
            " const edge = card.getBoundingClientRect().right;"
            " return [...card.querySelectorAll('table, th, td')]"
            "  .filter(e => e.getBoundingClientRect().right > edge + 0.5)"
            "  .map(e => card.dataset.dimension + ': ' + e.textContent.slice(0, 40)); });")
        assert outside == [], outside
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1280, min(int(height) + 40, 6000))
        shot = baseline["cwd"] / "eval-report.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        keep = os.environ.get("DWS_EVAL_SCREENSHOT")  # where a person wants the picture (the closing note)
        if keep:
            shutil.copy(shot, keep)
    finally:
        driver.quit()


# -- the recording shim ------------------------------------------------------------------------------------------
SHIM_TARGET = """
import sys, time
if "hang" in sys.argv:
    time.sleep(60)
print("out:" + " ".join(sys.argv[1:]))
print("err:" + sys.stdin.read(), file=sys.stderr)
sys.exit(3)
"""
SHIM_AGENT = """
import json, subprocess
for argv in (["chat", "x y", "é"], [], [""], ["hang"], ["fifth"]):
    p = subprocess.run(["dws", *argv], capture_output=True, text=True, input="piped" if argv else "")
    print("CALL", json.dumps([p.returncode, p.stdout, p.stderr]))
print("DWS-EVAL-ANSWER " + json.dumps({"status": "failed", "usage": {"input_tokens": 5, "output_tokens": 2}}))
"""


def test_the_shim_passes_each_call_through_and_records_it_within_the_budgets(tmp_path: Path) -> None:
    """Each dws call of an agent reaches the implementation and answers the agent unchanged; its record holds the
    argv as written, exit, output, start and duration; a hung call is killed at the runner's timeout (timed out,
    no exit); a call past the calls budget is refused before the implementation runs."""
    from pytest_dws.launch import Runner
    from pytest_dws.launch.agent import run_agent

    runner = Runner([sys.executable, "-c", SHIM_TARGET], None, timeout=1)
    try:
        before = time.time()
        run = run_agent(runner, [sys.executable, "-c", SHIM_AGENT], "task", None, seconds=30, calls=4, tmp=tmp_path)
        after = time.time()
    finally:
        runner.close()
    seen = [json.loads(x[5:]) for x in run.stdout.splitlines() if x.startswith("CALL ")]
    assert [r["argv"] for r in run.calls] == [["chat", "x y", "é"], [], [""], ["hang"], ["fifth"]]
    first, bare, empty, hung, refused = run.calls
    assert first["exit"] == 3 and first["stdout"].endswith(" chat x y é\n") and first["stderr"] == "err:piped\n"
    assert seen[0] == [3, first["stdout"], "err:piped\n"] and bare["exit"] == empty["exit"] == 3  # stdin reaches it
    # killed at the timeout: timed out, no exit, 124 to the agent (its duration comes from a file clock that may lag
    # a tick, so it is checked as recorded, not against the timeout: no timed assertions)
    assert hung["exit"] is None and hung["timed_out"] and hung["duration"] > 0 and seen[3][0] == 124
    assert refused["refused"] == "calls" and refused["exit"] is None and seen[4][0] == 125
    assert json.loads(refused["stderr"])["error"]["reason"] == "call_budget_exceeded" == json.loads(seen[4][2])[
        "error"]["reason"]
    starts = [c["start"] for c in run.calls]  # the shim's clock: in order, within the agent's run
    assert before <= starts[0] and starts == sorted(starts) and starts[-1] <= after
    assert run.answer == {"status": "failed"} and run.usage == {"input_tokens": 5, "output_tokens": 2}
