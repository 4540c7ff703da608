"""SCHCLI-PLUGINS-LAZY beyond the mutation matrix: how a bad `[schema.plugin]` table is reported, and the
reference's manifest handling (a bad manifest never breaks `dws --help`; built-in commands win)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.jsondoc import first_json
from pytest_dws.gates.schcli.plugins import _plugin_spec
from pytest_dws.inputs.expectations import Expectations, load_expectations
from pytest_dws.inputs.settings import Settings
from pytest_dws.observe.context import Context

REF = Path(__file__).resolve().parents[1] / "fixtures" / "reference"


def _ctx(plugin: object) -> Context:
    expect = Expectations(Path("expect.toml"), data={"schema": {"plugin": plugin}} if plugin else {})
    return Context(Settings(cli=["dws"]), expect, Path("."))


def test_no_plugin_table_is_not_applicable_with_the_reason() -> None:
    with pytest.raises(NotApplicable, match=r"\[schema\.plugin\]"):
        _plugin_spec(_ctx(None))


@pytest.mark.parametrize(("table", "where"), [
    ({"exec_http": "http-echo echo"}, "$.schema.plugin.exec_http: expected a list"),
    ({"files": ["a"], "exec_stdio": ["x"]}, "$.schema.plugin.files: expected a dict"),
    ({"env": {}}, "$.schema.plugin: names neither exec_http nor exec_stdio"),
])
def test_bad_plugin_table_is_one_line_naming_the_file_and_path(table: dict, where: str) -> None:
    with pytest.raises(NotApplicable) as info:
        _plugin_spec(_ctx(table))
    assert str(info.value).startswith("expect.toml: " + where)
    assert "\n" not in str(info.value)


def test_a_release_that_runs_no_plugin_tool_is_not_applicable_for_its_stated_reason() -> None:
    """`unsupported` (cf8cf95: manifests loaded, no command built from them) wins over any other key: the gate
    is not applicable for the tree's reason, never run half-way."""
    with pytest.raises(NotApplicable) as info:
        _plugin_spec(_ctx({"unsupported": "no plugin command is built", "exec_stdio": ["x"]}))
    assert str(info.value) == "expect.toml: $.schema.plugin.unsupported: no plugin command is built"
    assert info.value.wants == "an implementation that runs a plugin's tool as a command"


@pytest.mark.parametrize("commit", ["81f67c8d", "cf8cf95"])
def test_the_real_releases_say_how_plugins_are_installed_or_why_not(commit: str) -> None:
    """Issue 43: 81f67c8d hosts the test plugins (its manifests, a tool of each run); cf8cf95 says why it cannot."""
    path = REF.parent / "releases" / commit / "expectations.toml"
    ctx = Context(Settings(cli=["dws"]), load_expectations(path), Path("."))
    if commit == "cf8cf95":
        with pytest.raises(NotApplicable, match=r"\.unsupported: .*loadPlugins"):
            _plugin_spec(ctx)
        return
    spec = _plugin_spec(ctx)
    assert spec["commands"] == ["http-echo", "stdio-echo"] and spec["exec_http"][0] == "http-echo"
    manifests = {rel: json.loads(text.replace("{url}", "http://127.0.0.1:1").replace("{stdio}", "[]"))
                 for rel, text in spec["files"].items()}
    assert {m["name"] for m in manifests.values()} == {"http-echo", "stdio-echo"}
    assert all(rel.startswith("dws/plugins/user/") for rel in manifests)


def _dws(plugin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "DWS_PLUGIN_DIR": str(plugin_dir)}
    return subprocess.run([sys.executable, "-I", "-S", str(REF / "dws"), *args], capture_output=True, text=True,
                          env=env, timeout=30, check=False)


def test_reference_skips_bad_manifests_and_never_shadows_a_builtin(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "chat.json").write_text(json.dumps({"name": "chat", "transport": "http",
                                                    "endpoint": "http://127.0.0.1:1/mcp/x",
                                                    "tools": [{"name": "x"}]}), encoding="utf-8")
    (tmp_path / "ok.json").write_text(json.dumps({"name": "echo-plugin", "transport": "stdio",
                                                  "command": ["/nonexistent/plugin"],
                                                  "tools": [{"name": "echo"}]}), encoding="utf-8")
    out = _dws(tmp_path, "--help")
    assert out.returncode == 0, out.stderr
    assert "echo-plugin" in out.stdout
    warnings = out.stderr.splitlines()  # one line per skipped manifest, naming its file
    assert len(warnings) == 2 and [str(tmp_path / n) in w for w, n in zip(warnings, ("broken.json", "chat.json"),
                                                                          strict=True)] == [True, True]
    chat = _dws(tmp_path, "chat", "--help")
    assert "+conversation-list" in chat.stdout  # the built-in group, not the plugin
    failed = _dws(tmp_path, "echo-plugin", "echo")  # only execution starts the (missing) process
    assert failed.returncode == 5
    assert first_json(failed.stderr)["error"]["reason"] == "plugin_start_failed"
