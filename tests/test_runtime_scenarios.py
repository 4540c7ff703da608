"""The D1 scenario data (fixtures/scenarios/d1): the cast agrees with the world, every composed scenario is a
valid fake_mcp scenario, and the data is synthetic (CIDs CID-shaped, names never starting with ``cid``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_mcp import validate
from pytest_dws.assertions import looks_like_cid
from pytest_dws.inputs.expectations import load_expectations
from pytest_dws.inputs.settings import Settings
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.context import Context


@pytest.fixture
def ctx(tmp_path: Path) -> Context:
    return Context(Settings(), load_expectations(None), tmp_path)


def test_cast_agrees_with_the_world(ctx: Context) -> None:
    c = rt.cast(ctx)
    groups = c.world["world"]["groups"]
    titles = [g["title"] for g in groups]
    by_cid = {g["cid"]: g["title"] for g in groups}
    assert by_cid[c.cid] == c.name and sum(c.name in t for t in titles) == 1  # unique even by substring
    assert by_cid[c.second_cid] == c.second_name and sum(c.second_name in t for t in titles) == 1
    assert [by_cid[x] for x in c.twin_cids] == [c.twin_name, c.twin_name] and titles.count(c.twin_name) == 2
    assert not any(c.missing_name in t for t in titles)
    assert len(c.world["world"]["conversations"]) == c.conversations > c.conversation_page_cap > 0
    messages = next(g for g in groups if g["cid"] == c.cid)["messages"]
    assert len(messages) == c.messages


def test_data_is_synthetic(ctx: Context) -> None:
    c = rt.cast(ctx)
    text = json.dumps(c.world, ensure_ascii=False)
    cids = {c.cid, c.second_cid, *c.twin_cids} | {g["cid"] for g in c.world["world"]["groups"]}
    assert all(looks_like_cid(x) and x.startswith("cidTEST") for x in cids)
    assert all(not n.lower().startswith("cid") for n in c.names)
    assert "dws测试群" not in text  # D1 §9.1: no fitting to the evaluation's literals


def test_every_composed_scenario_is_valid(ctx: Context, monkeypatch: pytest.MonkeyPatch) -> None:
    specs = [s for family in sorted(rt.FAMILIES) for s in rt.planned(ctx, family)]
    scenarios = {s.scenario for s in specs if isinstance(s.scenario, rt.Sc)}
    assert len(scenarios) >= 10
    for sc in scenarios:
        validate(rt.scenario_doc(ctx, sc), sc.label)


def test_full_page_case_fills_the_resolver_page(ctx: Context) -> None:
    doc = rt.scenario_doc(ctx, rt.Sc(resolver="full-page-no-metadata"))
    rows = doc["overrides"][0]["reply"]["payload"]["result"]
    assert len(rows) == rt.profile(ctx).resolver_page_size and "hasMore" not in doc["overrides"][0]["reply"]["payload"]


def test_unreadable_cast_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "cast.toml").write_text("world = 'nope.json'\n", encoding="utf-8")
    with pytest.raises(Exception) as info:
        rt.load_cast(tmp_path)
    assert "cast.toml" in str(info.value) and "\n" not in str(info.value)
