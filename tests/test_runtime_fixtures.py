"""The public fixtures of issue 3 item 6 (`fake_mcp`, `dws_run`) as an implementer's own test suite uses them."""

from __future__ import annotations

from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "reference" / "dws"

USER_TESTS = '''
import pytest

WORLD = {"name": "user", "world": {
    "groups": [{"cid": "cidTESTfixture00001", "title": "fixture group"}],
    "conversations": [{"openConversationId": "cidTESTfixture00001", "title": "fixture group"}]}}


def test_env_points_at_the_server_and_isolates(fake_mcp):
    env = fake_mcp.env
    assert env["DINGTALK_IM_MCP_URL"] == fake_mcp.server.product_url("im")
    assert env["DWS_ALLOW_HTTP_ENDPOINTS"] == "1" and "127.0.0.1" in env["DWS_TRUSTED_DOMAINS"]
    assert env["HTTPS_PROXY"] == "http://127.0.0.1:1" and env["DWS_DISABLE_KEYCHAIN"] == "1"
    assert env["HOME"].startswith(str(fake_mcp.home))


@pytest.mark.parametrize("round", [1, 2])
def test_runs_the_implementation_on_a_clean_backend(fake_mcp, dws_run, round):
    assert len(fake_mcp.transcript) == 0  # clean state per test
    fake_mcp.load(WORLD)
    inv = dws_run("chat", "+conversation-list", "--page-all")
    assert inv.exit_code == 0, inv.describe()
    assert inv.stdout_json["count"] == 1 and len(inv.transcript) == 1
    assert [r.tool for r in fake_mcp.transcript.calls()] == ["list_all_conversations"]


def test_faults_reach_the_implementation(fake_mcp, dws_run):
    from pytest_dws.assertions import assert_error_classified

    fake_mcp.load({**WORLD, "overrides": [{"tool": "list_all_conversations",
                   "reply": {"kind": "business", "preset": "NETWORK_ERROR_QUERYTOOLMETA"}}]})
    assert_error_classified(dws_run("chat", "+conversation-list"), exit_code=1,
                            reason="backend_dependency_unavailable", stage="tool_metadata_lookup")
'''


def test_fixtures_in_a_user_suite(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest("--dws-cli", f"{{python}} -I -S {REFERENCE}", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_fixtures_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-n", "2", "--dws-cli", f"{{python}} -I -S {REFERENCE}",
                                           "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_dws_run_without_an_implementation_is_skipped_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile("def test_it(dws_run):\n    dws_run('chat', '+conversation-list')\n")
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*not applicable: no implementation binary configured (--dws-cli CMD)*"])
