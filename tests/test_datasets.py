"""Dataset files and generators (pytest_dws.inputs.datasets): loading, validation, weights, symbols, variant matrix.

Pure: nothing here launches the implementation (see test_datasets_observed.py for real runs).
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_dws.core.errors import DwsInputError
from pytest_dws.core.outcome import CLASSES, Judgement, looks_like_cid
from pytest_dws.inputs import datasets as ds

ROOT = ds.default_root()


def write_case_file(folder: Path, name: str, **overrides: object) -> Path:
    data = {"pattern": "p", "doc": "D1 §1", "weight": 2,
            "symbols": {"cid_a": "cidTESTa00000001", "name_a": "星河测试组"},
            "world": {"groups": [{"cid": "{{cid_a}}", "title": "{{name_a}}"}]},
            "cases": [{"id": "one", "argv": ["chat", "+chat-members-list", "--group", "{{name_a}}"],
                       "expect": {"class": "clean", "target": "{{cid_a}}"}}]}
    data.update(overrides)
    path = folder / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["observed", "holdout"])
def test_dataset_files_load_and_render(name: str) -> None:
    cases = ds.load_dataset(name)
    assert cases
    for case in cases:
        argv, scenario, expect = case.instantiate()
        assert expect["class"] in CLASSES
        assert "{{" not in json.dumps([argv, scenario, expect], ensure_ascii=False)


def test_observed_weights_match_the_manifest_counts() -> None:
    """The D1 §1 counts live in observed/manifest.toml; the files' weights add up to them per group."""
    cases = ds.load_dataset("observed")
    manifest = ds.load_manifest(ROOT / "observed" / "manifest.toml")
    assert ds.check_weights(cases, manifest) == []
    assert {c.group for c in cases} == set(manifest["weights"]["groups"])


def test_case_weights_are_whole_numbers_of_calls() -> None:
    """D1 counts calls: a file's weight splits into whole numbers (first cases take the remainder), so the
    metrics read 1/74, not 1.5/74; the observed dataset adds up to D1's 74 failed calls."""
    case = {"id": "c", "argv": ["a"], "expect": {"class": "clean"}}
    split = ds.case_weights(Path("f.json"), {"weight": 37, "cases": [case] * 5})
    assert split == [8, 8, 7, 7, 7]
    assert ds.case_weights(Path("f.json"), {"weight": 1, "cases": [case] * 2}) == [1, 0]
    assert ds.case_weights(Path("f.json"), {"cases": [case] * 3}) == [1, 1, 1]
    own = [{**case, "weight": 2}, {**case, "weight": 1}]
    assert ds.case_weights(Path("f.json"), {"weight": 3, "cases": own}) == [2, 1]
    observed = ds.load_dataset("observed")
    assert all(isinstance(c.weight, int) for c in observed) and sum(c.weight for c in observed) == 74


def test_weight_mismatch_is_one_line_naming_the_manifest(tmp_path: Path) -> None:
    folder = tmp_path / "observed"
    folder.mkdir()
    write_case_file(folder, "a.json")
    (folder / "manifest.toml").write_text("[weights]\ntotal = 3\n[weights.groups]\np = 3\n", encoding="utf-8")
    with pytest.raises(DwsInputError, match=r"manifest\.toml: \$\.weights: group 'p': files weigh 2, manifest pins 3"):
        ds.load_dataset("observed", tmp_path)


@pytest.mark.parametrize(("change", "where"), [
    ({"cases": [{"id": "x", "argv": ["chat"], "expect": {"class": "bogus"}}]}, r"\$\.cases\[0\]\.expect\.class"),
    ({"cases": [{"id": "x", "argv": [], "expect": {"class": "clean"}}]}, r"\$\.cases\[0\]\.argv"),
    ({"cases": [{"id": "x", "argv": ["a"], "expect": {"class": "clean", "colour": 1}}]}, r"expect\.colour"),
    ({"symbols": {"cid_a": "cid-test-a"}}, r"\$\.symbols\.cid_a: expected a synthetic CID"),
    ({"symbols": {"name_a": "cidNotAName"}}, r"\$\.symbols\.name_a: a natural name must not start with 'cid'"),
    ({"symbols": {"name_a": "dws测试群01"}}, r"\$\.symbols\.name_a"),
    ({"symbols": {"group_a": "x"}}, r"\$\.symbols\.group_a: symbol 'group_a'"),
    ({"weight": -1}, r"\$\.weight"),
    ({"weight": 1.5}, r"\$\.weight: expected a whole number"),
    ({"cases": [{"id": "x", "argv": ["a"], "expect": {"class": "clean"}, "weight": 0.5}]}, r"\$\.cases\[0\]\.weight"),
    ({"cases": [{"id": "x", "argv": ["a"], "expect": {"class": "clean"}, "weight": 3}]}, r"the cases weigh 3"),
    ({"profiles": "holdout-a"}, r"\$\.profiles: expected a list of distinct profile names"),
    ({"profiles": ["a", "a"]}, r"\$\.profiles: expected a list of distinct profile names"),
])
def test_bad_case_files_are_one_line_errors(tmp_path: Path, change: dict, where: str) -> None:
    path = write_case_file(tmp_path, "bad.json", **change)
    with pytest.raises(DwsInputError, match=where) as info:
        ds.load_cases(path, "observed")
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_unknown_placeholder_and_bad_scenario_name_the_case(tmp_path: Path) -> None:
    bad = [{"id": "x", "argv": ["{{name_q}}"], "expect": {"class": "clean"}}]
    path = write_case_file(tmp_path, "p.json", cases=bad)
    with pytest.raises(DwsInputError, match=r"\$\.cases\[0\]: placeholder \{\{name_q\}\} has no symbol"):
        ds.load_cases(path, "observed")
    path = write_case_file(tmp_path, "q.json", world={"groups": [{"cid": "short", "title": "t"}]})
    with pytest.raises(DwsInputError, match=r"q\.json: \$\.cases\[0\].*groups\[0\]\.cid"):
        ds.load_cases(path, "observed")


def test_randomised_cases_keep_kinds_and_change_every_value() -> None:
    rng = random.Random(5)
    for case in ds.load_dataset("observed") + ds.load_dataset("holdout"):
        fresh = case.randomised(rng).symbols
        assert fresh.keys() == case.symbols.keys()
        for key, value in fresh.items():
            assert value != case.symbols[key]
            kind = ds.symbol_kind(key)
            assert looks_like_cid(value) == (kind == "cid")
            assert not value.lower().startswith("cid") or kind == "cid"
        names = [v for k, v in fresh.items() if ds.symbol_kind(k) in ("name", "kw")]
        assert not [(a, b) for a in names for b in names if a != b and a in b]


@settings(max_examples=60, deadline=None)
@given(ds.symbol_strategy(["cid_a", "cid_b", "name_a", "name_b", "name_z", "kw_a", "trace_a", "text_a"]))
def test_symbol_strategy_values_are_synthetic_and_unrelated(symbols: dict[str, str]) -> None:
    assert looks_like_cid(symbols["cid_a"]) and looks_like_cid(symbols["cid_b"])
    assert symbols["cid_a"] != symbols["cid_b"]
    names = [symbols[k] for k in ("name_a", "name_b", "name_z", "kw_a")]
    assert all(not n.lower().startswith("cid") for n in names)
    assert not [(a, b) for a in names for b in names if a != b and a in b]
    assert not any(lit in v for v in symbols.values() for lit in ds.FORBIDDEN_LITERALS)


def test_generated_variants_replay_with_the_same_seed() -> None:
    matrix = ds.Matrix.load()
    first, again = ds.generate_variants(matrix, 15, 99), ds.generate_variants(matrix, 15, 99)
    assert [(c.id, c.argv, c.symbols) for c in first] == [(c.id, c.argv, c.symbols) for c in again]
    other = ds.generate_variants(matrix, 15, 100)
    assert [c.symbols for c in other] != [c.symbols for c in first]


@given(st.data())
@settings(max_examples=40, deadline=None)
def test_every_generated_point_is_valid_and_renders(data: st.DataObject) -> None:
    matrix = ds.Matrix.load()
    case = data.draw(ds.variant_case_strategy(matrix))
    argv, scenario, expect = case.instantiate()
    assert expect["class"] in CLASSES
    assert "{{" not in json.dumps([argv, scenario, expect], ensure_ascii=False)
    from fake_mcp import validate

    validate(scenario, case.id)


def _fake_result(case: ds.Case) -> ds.CaseResult:
    return ds.CaseResult(case, list(case.argv), case.expect, Judgement(case.expect["class"]))


def test_covering_set_covers_every_dimension_value_of_every_command() -> None:
    matrix = ds.Matrix.load()
    cases = [ds.build_case(matrix, p, dict.fromkeys(matrix.data["symbols"], "x")) for p in ds.covering_points(matrix)]
    cover = ds.coverage([_fake_result(c) for c in cases], matrix)
    assert cover["missing"] == {}
    assert set(cover["commands"]) == set(matrix.commands)
    assert len({c.id for c in cases}) == len(cases)


@pytest.mark.parametrize(("point", "klass", "extra"), [
    (ds.Point("chat-members-list", "cid", "conflict", 0, "param", "execution"), "request_contract_error",
     {"business_calls": 0}),
    (ds.Point("chat-update", "same_name", "canonical", 0, "none", "none"), "expected_resolution_stop",
     {"reason": "resolution_ambiguous", "writes": 0}),
    (ds.Point("send-to-group", "zero_hits", "canonical", 0, "none", "none"), "expected_resolution_stop",
     {"reason": "resolution_not_found"}),
    (ds.Point("chat-messages", "unique_name", "canonical", 0, "internal_dependency", "metadata"),
     "infrastructure_error", {"stage": "tool_metadata_lookup", "trace_id": "{{trace_a}}"}),
    (ds.Point("at-me", "cid", "canonical", 0, "rate_limit", "execution", transient=True),
     "recovered_infrastructure_error", {"result": "complete"}),
    (ds.Point("chat-update", "cid", "canonical", 0, "rate_limit", "execution", transient=True),
     "infrastructure_error", {"writes": 1}),
    (ds.Point("search-msg", "fuzzy_name", "canonical", 0, "permission", "later_page"), "business_error",
     {"result": "partial"}),
    (ds.Point("chat-invite-url", "unique_name", "canonical", 0, "param", "metadata"), "request_contract_error",
     {"reason": "invalid_request", "stage": "tool_validation"}),
])
def test_oracle_of_the_variant_matrix(point: ds.Point, klass: str, extra: dict) -> None:
    matrix = ds.Matrix.load()
    assert matrix.valid(point)
    expect, dims = ds.expected_for(matrix, point)
    assert expect["class"] == klass
    assert {k: expect.get(k) for k in extra} == extra
    assert set(ds.DIMS) <= set(dims)


def test_flag_order_is_part_of_the_point() -> None:
    matrix = ds.Matrix.load()
    p = ds.Point("search-msg", "unique_name", "canonical", 0, "none", "none")
    n = len(ds.arg_groups(matrix, p)[1])
    forward = ds.build_case(matrix, p, {}).argv
    backward = ds.build_case(matrix, replace(p, order=tuple(reversed(range(n)))), {}).argv
    assert forward[:2] == backward[:2] and sorted(forward) == sorted(backward) and forward != backward


def test_seed_and_variant_count_are_run_facts_not_pinnable_counts(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """The seed and the variant case count go to the report's `datasets` section, never to the "observed
    counts, ready to pin" list; the seed stays in every failure message (replay)."""
    from pytest_dws.inputs.expectations import Expectations
    from pytest_dws.inputs.settings import Settings
    from pytest_dws.observe.context import Context
    from pytest_dws.observe.runtime import datasets as ds_gates

    ran: list[int] = []
    monkeypatch.setattr(ds_gates, "run_cases", lambda ctx, cases: ran.append(len(cases)) or [])
    monkeypatch.setattr(ds_gates, "require_profile", lambda ctx: None)  # no implementation runs here
    ctx = Context(Settings(cli=["dws"], seed=4242, variant_examples=0), Expectations(), tmp_path)
    run = ds_gates.variant(ctx)
    assert (run.seed, run.examples, ran) == (4242, 0, [run.covering])
    assert ctx.observed == {}
    assert ctx.sections["datasets"] == {"seed": 4242, "replay": "--dws-seed 4242", "variant_cases": 0,
                                        "variant_covering": run.covering, "variant_examples": 0}
    assert "--dws-seed 4242" in ds_gates.replay(ctx)
