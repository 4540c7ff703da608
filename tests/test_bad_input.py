"""Bad input is exit 4 with one line naming the option or the file and JSON path, before anything is judged
(issue 29): non-finite or non-positive timeouts, negative or unknown pinned counts, an unwritable report, and
the helper commands' input errors. Never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.inputs.expectations import count_names

REPO = Path(__file__).resolve().parents[1]
CLI = f"{{python}} -I -S {REPO / 'fixtures' / 'reference' / 'dws'}"


def _usage_error(run: Any, *words: str) -> None:
    out = run.output()
    assert run.ret == 4, out[-2000:]
    assert "Traceback" not in out
    line = next(x for x in out.splitlines() if x.startswith("ERROR: dws-contract:"))
    assert all(w in line for w in words), line
    assert run.report is None or not run.report.get("gates"), "gates were judged despite the bad input"


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "soon"])
def test_a_timeout_that_is_not_a_positive_finite_number(value: str, run_contract: Callable[..., Any]) -> None:
    _usage_error(run_contract("--dws-cli", CLI, f"--dws-timeout={value}"), "--dws-timeout", value)


def test_an_unknown_strict_reading_is_refused_naming_the_known_ones(run_contract: Callable[..., Any]) -> None:
    _usage_error(run_contract("--dws-cli", CLI, "--dws-strict=scope-argument,lenient"), "--dws-strict",
                 "'lenient'", "scope-argument", "alias-absent")


@pytest.mark.parametrize(("counts", "words"), [
    ("toolz = 13", ("$.counts.toolz", "'tools'")),
    ("tools = -3", ("$.counts.tools", "negative")),
    # a count a gate only reports (the size of a scan) is never a silent pin: the gates that report it are named
    ("skill_commands = 16", ("$.counts.skill_commands", "no gate compares", "FIN-SKILL-COMMANDS")),
])
def test_a_pinned_count_that_no_gate_observes_or_that_is_negative(counts: str, words: tuple[str, ...],
                                                                  run_contract: Callable[..., Any],
                                                                  pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", expect=f"[counts]\n{counts}\n")
    _usage_error(run_contract("--dws-cli", CLI, "--dws-expect", "expect.toml"), "expect.toml", *words)


def test_an_unwritable_report_is_refused_before_judging(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    blocker = pytester.path / "file"
    blocker.write_text("", encoding="utf-8")
    result = pytester.runpytest("--dws-contract", "--dws-cli", CLI, f"--dws-report={blocker}/sub/r.json",
                                "-p", "no:cacheprovider")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 4 and "--dws-report" in out and "Traceback" not in out, out[-2000:]
    assert "passed" not in out and "failed" not in out


def test_every_count_the_reference_run_observes_is_a_known_name(run_contract: Callable[..., Any],
                                                               answered: list[str]) -> None:
    run = run_contract("--dws-cli", CLI, "--dws-source", str(REPO / "fixtures" / "reference"), "-m", "dws_data",
                       *answered)
    observed = {k for k, v in run.report["observed"].items() if isinstance(v, int)}
    assert observed and observed <= count_names(), sorted(observed - count_names())


@pytest.mark.parametrize("argv", [
    ["diff", "{empty}", "{empty}"],
    ["merge", "{empty}"],
    ["merge", "{report}", "-o", "{blocked}/out.json"],
    ["recording", "show", "{empty}"],
    ["merge", "{deep}"],
    ["diff", "{deep}", "{deep}"],
])
def test_the_helper_commands_refuse_bad_input_in_one_line(argv: list[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"suite": "pytest-dws"}), encoding="utf-8")
    blocked = tmp_path / "blocked"
    blocked.write_text("", encoding="utf-8")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    args = [a.format(empty=empty, report=report, blocked=blocked, deep=deep) for a in argv]
    proc = subprocess.run([sys.executable, "-m", "pytest_dws", *args], capture_output=True, text=True, check=False)
    assert proc.returncode == 4, (proc.returncode, proc.stderr[-1500:])
    assert proc.stderr.startswith("ERROR:") and "Traceback" not in proc.stderr, proc.stderr[-1500:]


@pytest.mark.parametrize("body", ["", "#!/bin/sh\nexit 0\n"], ids=["python-on-a-missing-file", "silent"])
def test_a_target_that_is_not_a_dws_is_refused_before_judging(body: str, run_contract: Callable[..., Any],
                                                              tmp_path: Path) -> None:
    """Issue 28 (4): `--dws-cli "python3 nothere.py"` was judged (93 failures); a dws answers --help with its usage
    and exit 0, anything else is bad input."""
    target = tmp_path / "nothere.py"
    if body:
        target.write_text(body, encoding="utf-8")
        target.chmod(0o755)
        cli = str(target)
    else:
        cli = f"{sys.executable} {target}"
    run = run_contract("--dws-cli", cli, "-m", "dws_err")
    out = run.output()
    assert run.ret == 4 and "Traceback" not in out, out[-2000:]
    line = next(x for x in out.splitlines() if "dws-contract: --dws-cli:" in x)  # one line, stopping the run
    assert "not a dws" in line and "--help" in line, line
    assert not any(v["status"] == "passed" for v in run.gates.values())


def test_under_xdist_the_controller_refuses_a_target_that_is_not_a_dws(run_contract: Callable[..., Any],
                                                                       tmp_path: Path) -> None:
    """The workers never probe the target's identity (each would ask --help): the controller does, once, before
    any worker starts; under xdist a foreign target was judged gate by gate."""
    run = run_contract("--dws-cli", f"{sys.executable} {tmp_path / 'nothere.py'}", "-m", "dws_err", "-n", "2",
                       inprocess=False)
    out = run.output()
    assert run.ret == 4 and "not a dws" in out and "Traceback" not in out, out[-2000:]


def test_a_misspelled_baseline_case_is_bad_input_naming_the_closest(run_contract: Callable[..., Any],
                                                                   tmp_path: Path) -> None:
    """Issue 24 (4): a case label that matches no case the gate produced was silently ignored; it is exit 4 with
    the closest labels (the correctly spelled entry of a passing case is stale: exit 1)."""
    base = tmp_path / "baseline.toml"
    base.write_text('[expected_failures]\n"ERR-PARAM[param-cod]" = "a typo"\n', encoding="utf-8")
    run = run_contract("--dws-cli", CLI, "-k", "ERR-PARAM", f"--dws-baseline={base}")
    line = next((x for x in run.result.stderr.lines if "param-cod" in x and x.startswith("ERROR:")), "")
    assert run.ret == 4 and "'param-code'" in line, run.output()[-2000:]
    base.write_text('[expected_failures]\n"ERR-PARAM[param-code]" = "passes: stale"\n', encoding="utf-8")
    run = run_contract("--dws-cli", CLI, "-k", "ERR-PARAM", f"--dws-baseline={base}")
    assert run.ret == 1 and "stale baseline entry" in run.output(), run.output()[-2000:]
