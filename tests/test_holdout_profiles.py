"""The cross-profile holdout (D1 §9.2 跨 profile ID) runs on the profiles the release's ``[profiles]`` configure:
the file's profile names mapped onto the release's, installed as ERR-JSON-CONSISTENT[multi-profile] installs them;
without ``[profiles]`` it is not applicable, naming what is missing; a silent success is never put down to an
accepted classifier deviation (issue 43)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_dws.core.errors import DwsInputError
from pytest_dws.core.outcome import Judgement
from pytest_dws.inputs import datasets as ds
from pytest_dws.observe.runtime.datasets import with_profiles
from pytest_dws.verdict.attribution import silent_success

REPO = Path(__file__).resolve().parents[1]
REF = REPO / "fixtures" / "reference"
CLI = f"{{python}} -I -S {REF / 'dws'}"
HOLDOUT = REPO / "fixtures" / "scenarios" / "holdout" / "cross_profile.json"


def _ctx(profiles: dict[str, Any]) -> Any:
    """The little of a GateContext that :func:`with_profiles` reads: the expectations' ``[profiles]``."""
    expect = SimpleNamespace(path="expect.toml", section=lambda name: profiles if name == "profiles" else {})
    return SimpleNamespace(expect=expect)


def _case() -> ds.Case:
    (case,) = ds.load_cases(HOLDOUT, "holdout")
    return case


def test_the_files_second_profile_runs_as_the_releases_second() -> None:
    case = _case()
    spec = {"env": "DWS_CONFIG_DIR", "selector": "alpha,beta", "files": {"profiles.json": "{}"}}
    argv, options, missing = with_profiles(_ctx(spec), case, case.instantiate()[0])
    assert missing is None
    assert argv[:2] == ["--profile", "beta"] and "holdout-b" not in argv
    assert options == {"env": {"DWS_CONFIG_DIR": "profiles-config"},
                       "files": {"profiles-config/profiles.json": "{}"}, "token": None}
    _, shared, _ = with_profiles(_ctx({**spec, "token": True}), case, case.instantiate()[0])
    assert "token" not in shared  # the run's global --token serves every profile (81f67c8d)


def test_a_release_with_one_profile_cannot_run_the_second() -> None:
    spec = {"env": "E", "selector": "solo", "files": {}}
    _, _, missing = with_profiles(_ctx(spec), _case(), _case().instantiate()[0])
    assert missing is not None and "1 profile(s)" in missing


def test_a_case_selecting_a_profile_its_file_does_not_name_is_a_one_line_error(tmp_path: Path) -> None:
    text = re.sub(r'"holdout-b"\n(\s*)\]', r'"elsewhere"\n\1]', HOLDOUT.read_text(encoding="utf-8"), count=1)
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DwsInputError, match=r"\$\.cases\[0\]\.argv: --profile 'holdout-b' is not one of"):
        ds.load_cases(path, "holdout")


def test_a_silent_success_is_no_classifier_deviation() -> None:
    """81f67c8d's baseline accepts ERR-NOT-FOUND (not-found judged business_error): a cross-profile write that
    reports success must still fail the cross-profile case, not be accounted to that entry."""
    case = _case()
    clean = SimpleNamespace(judgement=Judgement("clean", {}), expect={"class": "business_error"})
    failed = SimpleNamespace(judgement=Judgement("business_error", {}), expect={"class": "business_error"})
    assert silent_success(clean) and not silent_success(failed)
    assert case.expect["class"] == "business_error"


def test_without_profiles_the_case_is_not_applicable_naming_them(run_contract: Any, tmp_path: Path) -> None:
    text = (REF / "expectations.toml").read_text(encoding="utf-8")
    short = re.sub(r"\n\[profiles\]\n.*?\n\[profiles\.files\]\n\"profiles\.json\" = '''.*?'''\n", "\n", text,
                   flags=re.S)
    assert "[profiles]" not in short.replace("`[profiles]`", "")
    expect = tmp_path / "expect.toml"
    expect.write_text(short, encoding="utf-8")
    run = run_contract("--dws-cli", CLI, "--dws-expect", str(expect), "-k", "DS-SAFETY-HOLDOUT")
    part = run.report["gates"]["DS-SAFETY-HOLDOUT"]["parts"]["cross-profile"]
    assert part["outcome"] == "not_applicable", part
    notes = " ".join(run.report["gates"]["DS-SAFETY-HOLDOUT"].get("notes", []))
    assert "configure profiles ([profiles] env, files, selector): the cross-profile holdout" in notes, notes
