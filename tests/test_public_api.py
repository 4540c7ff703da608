"""Issue 7: the public fixtures and assertions, as a third party uses them against the reference implementation.

A third-party test module that uses nothing but the public pieces passes; one that breaks fails with a
readable deepdiff and without our frames; the examples of docs/writing-tests.md run as written; the helper
names of the issue exist with an example and a hidden frame; the catalog loader and ``dws_tool`` fail with one
clear line.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REFERENCE_CLI, REPO

CLI = " ".join(REFERENCE_CLI)
DOC = REPO / "docs" / "writing-tests.md"
ISSUE_HELPERS = ("assert_alias_equivalent", "assert_conflict_rejected", "assert_destructive_requires_confirmation",
                 "assert_no_list_tools", "assert_byte_identical_regeneration", "assert_error_classified",
                 "assert_no_business_calls", "assert_name_never_in_id_args", "assert_complete_is_truthful")

THIRD_PARTY = '''
from fake_mcp import Scenario
from pytest_dws import load_catalog
from pytest_dws.assertions import (
    assert_alias_equivalent, assert_complete_is_truthful, assert_conflict_rejected,
    assert_destructive_requires_confirmation, assert_error_classified, assert_name_never_in_id_args,
    assert_no_business_calls, assert_no_list_tools,
)

WORLD = Scenario.build("third-party", groups=[{"cid": "cidTESTthird000001", "title": "甲群"},
                                              {"cid": "cidTESTthird000002", "title": "乙群"},
                                              {"cid": "cidTESTthird000003", "title": "乙群"}],
                       conversations=[{"openConversationId": "cidTESTthird000001", "title": "甲群"}])
WINDOW = ("--start", "2026-01-01T00:00:00+08:00", "--end", "2026-01-02T00:00:00+08:00")


def test_resolution_and_results(fake_mcp, dws_run):
    fake_mcp.load(WORLD)
    inv = dws_run("chat", "+chat-members-list", "--group", "甲群")
    assert inv.exit_code == 0, inv.describe()
    assert_name_never_in_id_args(inv, {"甲群", "乙群"}, {"openconversation_id", "openConversationIds"})
    assert_complete_is_truthful(inv.stdout_json, complete=True)
    assert_no_list_tools(inv)
    assert inv.call_tuples()[0][1] == "search_groups"


def test_ambiguity_stops(fake_mcp, dws_run):
    fake_mcp.load(WORLD)
    inv = dws_run("chat", "+chat-members-list", "--group", "乙群")
    assert_no_business_calls(inv)
    assert_error_classified(inv, exit_code=3, reason="resolution_ambiguous", execution_started=False)


def test_alias_and_conflict(fake_mcp, dws_run):
    fake_mcp.load(WORLD)
    assert_alias_equivalent(dws_run("chat", "+search-msg", "--text", "k", "--chat-query", "甲群", *WINDOW),
                            dws_run("chat", "+search-msg", "--query", "k", "--chat-query", "甲群", *WINDOW))
    assert_conflict_rejected(dws_run("chat", "+search-msg", "--query", "k", "--text", "k"))


def test_catalog(dws_catalog, dws_tool, dws_run):
    assert dws_tool("chat.shortcut_search_msg")["canonical_path"] == "chat.shortcut_search_msg"
    for leaf in dws_catalog.tools.values():
        assert_destructive_requires_confirmation(leaf)
    out = dws_run("schema", "--all", token=None, globals_=False).stdout
    assert set(load_catalog(out).tools) == set(dws_catalog.tools)
'''

BROKEN = '''
from pytest_dws.assertions import assert_alias_equivalent, assert_destructive_requires_confirmation

WINDOW = ("--start", "2026-01-01T00:00:00+08:00", "--end", "2026-01-02T00:00:00+08:00")
ONE = {"name": "one", "world": {"groups": [{"cid": "cidTESTthird000001", "title": "甲群"}]}}


def test_not_an_alias(fake_mcp, dws_run):
    fake_mcp.load(ONE)
    assert_alias_equivalent(dws_run("chat", "+search-msg", "--text", "other", "--chat-query", "甲群", *WINDOW),
                            dws_run("chat", "+search-msg", "--query", "k", "--chat-query", "甲群", *WINDOW))


def test_destructive_downgraded():
    assert_destructive_requires_confirmation({"canonical_path": "chat.recall_message", "effect": "destructive",
                                              "risk": "medium", "confirmation": "user_required"})


def test_plain_assert_on_calls(fake_mcp, dws_run):
    inv = dws_run("chat", "+conversation-list")
    assert inv.call_tuples() == [("/mcp/im", "list_all_conversations", {"limit": 50})]
'''


def run_user_suite(pytester: pytest.Pytester, *args: str, **modules: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\n")  # never the repo's ini: the target comes from the command line only
    pytester.makepyfile(**modules)
    return pytester.runpytest("--dws-cli", CLI, "-p", "no:cacheprovider", *args)


def test_third_party_module_with_only_public_pieces_passes(pytester: pytest.Pytester) -> None:
    result = run_user_suite(pytester, test_third_party=THIRD_PARTY)
    result.assert_outcomes(passed=4)


def test_broken_module_fails_with_a_readable_deepdiff(pytester: pytest.Pytester) -> None:
    result = run_user_suite(pytester, "-vv", test_broken=BROKEN)
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    lines = [line.strip() for line in out.splitlines()]
    for head, change in [
        ("the alias yields another invocation than the canonical spelling (canonical -> alias):",
         "values_changed: root['backend calls'][1][2]['keyword']: 'k' -> 'other'"),
        ("safety of destructive tool chat.recall_message differs (expected -> actual):",
         "values_changed: root['risk']: 'high' -> 'medium'"),
        ("left -> right:", "values_changed: root[0][2]['limit']: 100 -> 50"),
    ]:
        at = [i for i, line in enumerate(lines) if line.endswith(head)]
        assert at and lines[at[0] + 1].endswith(change), f"{head!r} then {change!r} not in:\n{out}"
    assert "Traceback" not in out
    assert "pytest_dws/assertions.py" not in out and "pytest_dws/core/compare.py" not in out  # our frames are hidden
    assert "__tracebackhide__" not in out


def doc_modules() -> dict[str, str]:
    """The ```python blocks of docs/writing-tests.md that start with ``# test_<name>.py``, by module name."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    out = {}
    for block in blocks:
        first, _, body = block.partition("\n")
        name = re.fullmatch(r"# (test_\w+)\.py", first.strip())
        if name:
            out[name.group(1)] = body
    return out


def test_the_documented_examples_run(pytester: pytest.Pytester) -> None:
    modules = doc_modules()
    assert len(modules) >= 5, sorted(modules)
    tests = sum(len(re.findall(r"^def test_", body, re.MULTILINE)) for body in modules.values())
    result = run_user_suite(pytester, **modules)
    result.assert_outcomes(passed=tests)


def test_the_issue_helpers_have_an_example_and_hide_their_frame() -> None:
    import pytest_dws.assertions as assertions

    for name in ISSUE_HELPERS:
        func = getattr(assertions, name)
        assert name in assertions.__all__
        assert "Example" in (func.__doc__ or ""), f"{name}: no docstring example"
        assert "__tracebackhide__ = True" in inspect.getsource(func), f"{name}: its frame is not hidden"
    assert not hasattr(assertions, "assert_destructive_confirmed")  # renamed, no alias kept


def test_helpers_read_the_same_outside_pytest() -> None:
    code = ("from pytest_dws.assertions import assert_equal\n"
            "try:\n    assert_equal({'a': [1, 2]}, {'a': [1, 3]}, 'the list')\n"
            "except AssertionError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.splitlines() == ["the list differs (expected -> actual):", "  values_changed: root['a'][1]: 2 -> 3"]


def test_plain_user_dicts_keep_pytests_rendering() -> None:
    from pytest_dws.core.compare import Expected, explain
    from pytest_dws.launch import CallList

    assert explain("==", {"a": 1}, {"a": 2}) is None
    assert explain("!=", Expected(1), 2) is None
    assert explain("==", CallList([1]), [2])[1:] == ["left -> right:", "  values_changed: root[0]: 1 -> 2"]
    assert explain("==", {"a": 2}, Expected({"a": 1}, "x"))[1] == "x differs (expected -> actual):"


def test_assertion_module_is_rewritten_by_the_plugin() -> None:
    import pytest_dws.assertions as assertions

    assert assertions._REWRITTEN  # registered in pytest_dws.plugin before anything imported it


def test_load_catalog_reads_every_form_and_fails_with_one_line(tmp_path: Path) -> None:
    from pytest_dws import load_catalog
    from pytest_dws.core.errors import DwsInputError

    tree = load_catalog(REPO / "fixtures" / "reference")
    out = subprocess.run([sys.executable, "-I", "-S", str(REPO / "fixtures" / "reference" / "dws"), "schema",
                          "--all"], capture_output=True, text=True, check=True).stdout
    saved = tmp_path / "schema-all.json"
    saved.write_text(out, encoding="utf-8")
    for release in (load_catalog(saved), load_catalog(out), load_catalog(out.encode()),
                    load_catalog(__import__("json").loads(out), "parsed")):
        assert set(release.tools) == set(tree.tools) and release.full_leaves
    assert load_catalog(out).origin == "<schema --all output>"
    with pytest.raises(DwsInputError, match=r"schema-all.json: \$: not valid JSON"):
        load_catalog("{not json", "schema-all.json")
    with pytest.raises(DwsInputError, match="no such file"):
        load_catalog(tmp_path / "missing.json")


def test_dws_tool_names_the_closest_paths_and_catalog_skips_without_a_target(pytester: pytest.Pytester) -> None:
    result = run_user_suite(pytester, "-rs", test_tool=(
        "def test_unknown(dws_tool):\n    dws_tool('chat.shortcut_search_mgs')\n"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no tool 'chat.shortcut_search_mgs' in dws schema --all (* tools); did you mean "
                                 "chat.shortcut_search_msg*"])
    assert "Traceback" not in result.stdout.str()
    bare = pytester.runpytest("-rs", "-p", "no:cacheprovider",
                              pytester.makepyfile(test_bare="def test_it(dws_catalog):\n    pass\n"))
    bare.assert_outcomes(skipped=1)
    bare.stdout.fnmatch_lines(["*not applicable: no catalog configured*"])
