"""The agent contract as data, its diff between builds, and the reviewed snapshot gate (SCH-CONTRACT-SNAPSHOT)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import synth

from pytest_dws.observe.agent_contract import tools_contract
from pytest_dws.observe.contract_diff import counts, diff, render_markdown, render_text


def _contract(tree: synth.Tree) -> dict:
    return {"tools": tools_contract(tree.all_tools())}


def test_the_diff_groups_every_agent_facing_change_by_kind() -> None:
    old, new = synth.build("cf"), synth.build("cf")
    new.tool("chat.recall_message")["risk"] = "medium"  # safety
    new.tool("chat.list_messages")["aliases"] = ["chat message history", "chat message log"]  # aliased
    new.tool("chat.send_personal_message")["parameters"]["user"]["required"] = True  # parameters
    new.tool("doc.update_permission")["availability"] = "unavailable"  # interface
    changes = diff(_contract(old), _contract(new))
    assert counts(changes) == {"added": 0, "removed": 0, "renamed": 1, "safety": 1, "interface": 1, "parameters": 1,
                               "errors": 0, "help": 0, "aliases": 0}
    assert changes["parameters"] == [{"subject": "chat.send_personal_message", "field": "parameters.user.required",
                                      "old": False, "new": True}]
    assert changes["safety"][0] == {"subject": "chat.recall_message", "field": "risk", "old": "high", "new": "medium"}
    text = render_text(changes)
    assert "chat.recall_message risk: \"high\" -> \"medium\"" in text
    assert "| safety changed | 1 |" in render_markdown(changes)


def test_added_removed_and_renamed_tools() -> None:
    old, new = _contract(synth.build("cf")), _contract(synth.build("cf"))
    new["tools"]["chat.recall_message_v2"] = new["tools"].pop("chat.recall_message")  # same CLI path: renamed
    new["tools"]["doc.brand_new"] = dict(new["tools"]["doc.delete_document"], cli_path="doc brand new")
    del new["tools"]["dev.legacy_publish"]
    changes = diff(old, new)
    assert [c["subject"] for c in changes["added"]] == ["doc.brand_new"]
    assert [c["subject"] for c in changes["removed"]] == ["dev.legacy_publish"]
    assert changes["renamed"] == [{"subject": "chat.recall_message", "field": "canonical_path",
                                   "old": "chat.recall_message", "new": "chat.recall_message_v2"}]
    assert diff(old, old) == {k: [] for k in changes}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_dws", *args], capture_output=True, text=True, timeout=120)


def test_diff_command_exit_codes_and_formats(tmp_path: Path) -> None:
    a = synth.build("cf").write(tmp_path / "a")
    changed = synth.build("cf")
    changed.tool("chat.recall_message")["confirmation"] = "not_required"
    b = changed.write(tmp_path / "b")
    same = _cli("diff", str(a), str(a))
    assert same.returncode == 0, same.stderr
    differ = _cli("diff", str(a), str(b), "--format", "json")
    assert differ.returncode == 1, differ.stderr
    assert json.loads(differ.stdout)["counts"]["safety"] == 1
    bad = _cli("diff", str(tmp_path / "nothing"), str(a))
    assert bad.returncode == 4 and bad.stderr.count("\n") == 1 and "nothing" in bad.stderr


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """A synthetic release tree and a release folder (expectations) for its snapshot."""
    folder = tmp_path / "release"
    folder.mkdir()
    (folder / "expectations.toml").write_text("[counts]\n", encoding="utf-8")
    (folder / "baseline.toml").write_text("[expected_failures]\n", encoding="utf-8")
    return folder


def _snapshot_run(run_contract, tree: Path, folder: Path, *extra: str):
    return run_contract("--dws-source", str(tree), "--dws-expect", str(folder / "expectations.toml"),
                        "-m", "dws_data", *extra)


def test_snapshot_gate_update_then_pass_then_fail_naming_the_field(run_contract, release: Path,
                                                                   tmp_path: Path) -> None:
    tree = synth.build("cf").write(tmp_path / "tree")
    first = _snapshot_run(run_contract, tree, release)
    assert first.status("SCH-CONTRACT-SNAPSHOT") == "not_applicable"  # no reviewed snapshot yet: said, not passed
    assert "--snapshot-update" in first.gates["SCH-CONTRACT-SNAPSHOT"]["notes"][0]
    update = _snapshot_run(run_contract, tree, release, "--snapshot-update")
    assert update.ret == 0, update.output()[-2000:]
    stored = release / "__snapshots__" / "SCH-CONTRACT-SNAPSHOT.json"
    assert stored.is_file() and (release / "expectations.toml").is_file() and (release / "baseline.toml").is_file()
    clean = _snapshot_run(run_contract, tree, release)
    assert clean.ret == 0 and clean.status("SCH-CONTRACT-SNAPSHOT") == "passed", clean.output()[-2000:]
    edited = json.loads(stored.read_text(encoding="utf-8"))
    edited["tools"]["chat.send_personal_message"]["parameters"]["text"]["required"] = False
    stored.write_text(json.dumps(edited, ensure_ascii=False, indent=2), encoding="utf-8")
    broken = _snapshot_run(run_contract, tree, release)
    assert broken.ret == 1 and broken.failing() == {"SCH-CONTRACT-SNAPSHOT"}, broken.output()[-2000:]
    assert "chat.send_personal_message parameters.text.required: false -> true" in broken.output()
    assert broken.report["contract_diff"]["counts"]["parameters"] == 1  # the same diff in the JSON report


def test_a_changed_build_fails_only_the_snapshot_gate(run_contract, release: Path, tmp_path: Path) -> None:
    tree = synth.build("cf").write(tmp_path / "tree")
    assert _snapshot_run(run_contract, tree, release, "--snapshot-update").ret == 0
    changed = synth.build("cf")
    changed.tool("chat.list_messages")["parameters"]["format"]["required"] = True
    run = _snapshot_run(run_contract, changed.write(tmp_path / "changed"), release)
    assert run.failing() == {"SCH-CONTRACT-SNAPSHOT"}, run.output()[-2000:]
