"""The DATA gates on the REAL upstream data (read only through the ``upstream`` fixture).

With the shipped expectations and baseline each run exits 0, every baselined item is an xfail, and without
a baseline the failing items are exactly the upstream deviations docs/contract.md R8 documents (confirmed on the
data): cf — the four destructive-safety.json contradictions and the surface alias of
dev.publish_dev_app_version; e81 — the 11 unreviewed Skill references.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import hypothesis.statistics  # noqa: F401 - imported once here, not again in every in-process run
import pytest

import pytest_dws.gates  # noqa: F401 - idem
from pytest_dws.inputs.catalog import hashes, load_release
from pytest_dws.observe.rejudge import data_context, failing, judge

REPO = Path(__file__).resolve().parents[1]
RELEASES = {"cf8cf95": "dws-cf8cf95", "81f67c8d": "dws-81f67c8d"}
DOCUMENTED = {
    "cf8cf95": {
        "SCH-HINT-PRECEDENCE[aitable.advperm_disable]", "SCH-HINT-PRECEDENCE[aitable.workflow_disable]",
        "SCH-HINT-PRECEDENCE[dev.disable_dev_app]", "SCH-HINT-PRECEDENCE[dev.disable_dev_app_robot]",
        "SCH-CANONICAL-SET[dev.publish_dev_app_version]",
    },
    "81f67c8d": {"SCH-REF-REVIEW"},
}


def files(name: str) -> tuple[Path, Path]:
    base = REPO / "fixtures" / "releases" / name
    return base / "expectations.toml", base / "baseline.toml"


@pytest.mark.parametrize("name", list(RELEASES))
def test_upstream_run_with_baseline_exits_zero(upstream, run_contract, name) -> None:
    expect, baseline = files(name)
    run = run_contract("--dws-source", upstream / RELEASES[name], "--dws-expect", expect, "--dws-baseline", baseline,
                       "-m", "dws_sch")
    assert run.ret == 0, run.output()[-3000:]
    assert run.failing() == set()
    xfailed = {g if s == g else f"{g}[{s}]" for g, v in run.gates.items() for s in v["xfailed_items"]}
    assert xfailed == DOCUMENTED[name]
    assert run.report["baseline_problems"] == []
    pinned = tomllib.loads(expect.read_text(encoding="utf-8"))["counts"]
    assert {k: run.report["observed"][k] for k in pinned} == pinned


@pytest.mark.parametrize("name", list(RELEASES))
def test_upstream_failing_set_without_baseline_is_documented(upstream, name) -> None:
    expect, _ = files(name)
    verdicts = judge(data_context(source=upstream / RELEASES[name], expect=expect))
    assert failing(verdicts) == DOCUMENTED[name]
    judged = {g for g, _ in verdicts}
    assert "SCH-NO-LISTTOOLS" in judged and verdicts[("SCH-NO-LISTTOOLS", None)] == "not_applicable"  # no Go code


def test_baseline_files_list_exactly_the_documented_items() -> None:
    for name, documented in DOCUMENTED.items():
        _, baseline = files(name)
        entries = tomllib.loads(baseline.read_text(encoding="utf-8"))["expected_failures"]
        assert set(entries) == documented
        assert all(reason.strip() for reason in entries.values())


@pytest.mark.parametrize("name", list(RELEASES))
def test_upstream_hashes_reproduce(upstream, name) -> None:
    rel = load_release(source=upstream / RELEASES[name])
    doc = rel.doc
    recomputed = hashes.source_hash(doc["version"], doc.get("surface_hash"), doc["catalog"], doc["tools"])
    assert recomputed == doc["source_hash"]
    algo = hashes.surface_hash_cf if rel.generation == "cf" else hashes.surface_hash_e81
    assert algo(rel.surface) == doc["surface_hash"]


def test_layouts_are_detected(upstream) -> None:
    cf = load_release(source=upstream / "dws-cf8cf95")
    e81 = load_release(source=upstream / "dws-81f67c8d")
    assert (cf.layout, cf.generation, len(cf.tools), len(cf.products)) == ("cf", "cf", 504, 21)
    assert (e81.layout, e81.generation, len(e81.tools), len(e81.products)) == ("e81", "e81", 849, 26)
    assert cf.surface_name == "internal/cli/schema_command_surface.json"
    assert e81.surface_name == "internal/cli/schema_command_registry/"


def test_single_upstream_catalog_file(upstream) -> None:
    rel = load_release(catalog=upstream / "dws-cf8cf95" / "internal/cli/schema_catalog.json")
    assert (rel.layout, rel.generation, len(rel.tools)) == ("file", "cf", 504)
    e81 = load_release(catalog=upstream / "dws-81f67c8d" / "internal/cli/schema_catalog/catalog.json")
    assert (e81.layout, e81.generation, len(e81.tools)) == ("file", "e81", 849)
    assert e81.surface is None
