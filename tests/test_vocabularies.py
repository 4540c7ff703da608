"""Release vocabularies are data (issue 27 (2)): a value no list classifies is one line of the closing block and
leaves the tools that carry it unjudged by the gate that reads the field, never a failure of each; classifying it
in the release's [vocabularies] makes the right gate judge it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.core.errors import DwsInputError
from pytest_dws.inputs.vocabularies import default_vocabulary, load_vocabulary
from tests.conftest import reference_copy

REF = Path(__file__).resolve().parents[1] / "fixtures" / "reference"


def _tree_with_new_word(tmp_path: Path) -> tuple[Path, str]:
    tree = reference_copy(tmp_path / "tree")
    shard = tree / "internal" / "cli" / "schema_catalog" / "tools" / "chat.json"
    doc = json.loads(shard.read_text(encoding="utf-8"))
    tools = doc["tools"] if isinstance(doc.get("tools"), dict) else doc
    key = next(k for k, t in sorted(tools.items()) if isinstance(t, dict) and t.get("effect_source"))
    tools[key]["effect_source"] = "llm-guess"
    shard.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return tree, key


def test_an_unclassified_word_is_one_line_not_a_failure_and_classifying_it_judges_it(run_contract: Any,
                                                                                   tmp_path: Path) -> None:
    tree, key = _tree_with_new_word(tmp_path)
    run = run_contract("--dws-source", str(tree), "-k", "SCH-INTERFACE-FACTS-BOUNDED")
    assert run.status("SCH-INTERFACE-FACTS-BOUNDED") == "passed", run.output()[-2000:]
    assert run.report["unclassified"] == {f"effect_source=llm-guess @ {key}": "%s" % (
        Path(__file__).resolve().parents[1] / "pytest_dws" / "inputs" / "data" / "vocabularies.toml")}
    lines = [x for x in run.output().splitlines() if "unclassified value 'llm-guess'" in x]
    assert len(lines) == 1 and "in 1 tool(s)" in lines[0], run.output()[-2000:]
    expect = tmp_path / "expectations.toml"
    expect.write_text('[vocabularies.effect_source]\ninterface = ["llm-guess"]\n', encoding="utf-8")
    run = run_contract("--dws-source", str(tree), "-k", "SCH-INTERFACE-FACTS-BOUNDED", f"--dws-expect={expect}")
    assert run.status("SCH-INTERFACE-FACTS-BOUNDED") == "failed", run.output()[-2000:]
    assert run.gates["SCH-INTERFACE-FACTS-BOUNDED"]["failed_items"] == [key]
    assert not run.report.get("unclassified")


def test_the_defaults_classify_every_value_of_the_shipped_reference() -> None:
    vocab = default_vocabulary()
    for shard in sorted((REF / "internal" / "cli" / "schema_catalog" / "tools").glob("*.json")):
        doc = json.loads(shard.read_text(encoding="utf-8"))
        tools = doc["tools"] if isinstance(doc.get("tools"), dict) else doc
        for key, tool in tools.items():
            if isinstance(tool, dict):
                assert vocab.unclassified(tool) == [], key


def test_a_malformed_vocabulary_is_one_line_naming_the_path() -> None:
    with pytest.raises(DwsInputError) as info:
        load_vocabulary({"precedence": {"interface": "mcp_fallback"}}, "rel/expectations.toml")
    assert "rel/expectations.toml" in str(info.value) and "$.vocabularies.precedence.interface" in str(info.value)
