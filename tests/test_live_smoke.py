"""SMK-LIVE (issue 34 (5)): D1 §7.4's real read-only smoke, opt-in with --dws-live-smoke GROUP, judged against a
loopback server standing in for the service. It runs with the user's own environment (here: the test's, which
points at the stand-in and holds a profile with its token), never the suite's scrubbed one; a command the schema
does not mark read-only is refused; the report keeps counts and field names, never the service's data; and the
D1 §10 b5 "real read-only smoke" part is judged only by it."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.observe.runtime.cast import D1_DIR, load_cast
from pytest_dws.verdict import release as release_verdict

REPO = Path(__file__).resolve().parents[1]
CLI = f"{{python}} -I -S {REPO / 'fixtures' / 'reference' / 'dws'}"
TOKEN = "token-of-the-user-0001"


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The loopback stand-in for the service, and the user's own environment pointing at it (with a profile)."""
    from fake_mcp import FakeMCPServer

    cast = load_cast(D1_DIR)
    with FakeMCPServer(scenario={"name": "live-stand-in", "world": cast.world["world"], "overrides": []}) as srv:
        for key, value in srv.env().items():
            monkeypatch.setenv(key, value)
        config = tmp_path / "user-config"
        config.mkdir()
        (config / "profiles.json").write_text(json.dumps({"current": "me", "profiles": {"me": {"token": TOKEN}}}),
                                              encoding="utf-8")
        monkeypatch.setenv("DWS_CONFIG_DIR", str(config))
        yield srv, cast


def test_the_live_smoke_is_judged_against_the_stand_in(run_contract: Callable[..., Any], service: Any) -> None:
    srv, cast = service
    run = run_contract("--dws-cli", CLI, f"--dws-live-smoke={cast.name}", "-k", "SMK-LIVE")
    assert run.status("SMK-LIVE") == "passed", run.output()[-3000:]
    assert run.gates["SMK-LIVE"]["parts"][""]["judged"] == 4
    assert release_verdict.b5(run.gates)["parts"]["real read-only smoke"] == "passed"
    calls = [r for r in srv.transcript.calls()]
    assert calls and all(r.headers.get("x-user-access-token") == TOKEN for r in calls), "not the user's own profile"
    assert {r.tool for r in calls} >= {"list_all_conversations", "get_group_members", "search_messages"}
    # Counts and field names only: nothing the service answered (names, IDs) reaches the report.
    kept = json.dumps({"live_smoke": run.report["live_smoke"], "gate": run.gates["SMK-LIVE"]}, ensure_ascii=False)
    leaked = sorted(v for v in (cast.name, cast.cid, cast.second_name, cast.second_cid) if v in kept)
    assert leaked == [], leaked
    assert run.report["isolation"]["mode"] == "proxy only"


def test_a_command_the_schema_does_not_mark_read_only_is_refused(run_contract: Callable[..., Any], service: Any,
                                                                  pytester: pytest.Pytester) -> None:
    srv, cast = service
    profile = tomllib.loads((REPO / "pytest_dws" / "inputs" / "data" / "profile.toml").read_text(encoding="utf-8"))
    text = (REPO / "pytest_dws" / "inputs" / "data" / "profile.toml").read_text(encoding="utf-8")
    text = text.replace('live_smoke = [\n', 'live_smoke = [\n  ["chat", "group", "dismiss", "--id", "{group}"],\n', 1)
    assert "dismiss" in text and profile["cli"]["live_smoke"]
    pytester.makefile(".toml", profile=text)
    run = run_contract("--dws-cli", CLI, f"--dws-live-smoke={cast.cid}", "--dws-profile", "profile.toml",
                       "-k", "SMK-LIVE")
    section = run.report["live_smoke"]
    assert "refused" in section["chat group dismiss --id {group}"], section
    assert "destructive" in section["chat group dismiss --id {group}"]["refused"]
    assert not [r for r in srv.transcript.calls() if r.tool == "dismiss_group"]
    assert run.status("SMK-LIVE") == "passed", run.output()[-3000:]  # the read-only four still judged


def test_without_the_option_the_live_smoke_is_not_applicable_and_b5_says_so(run_contract: Callable[..., Any]) -> None:
    run = run_contract("--dws-cli", CLI, "-k", "SMK-LIVE or SMK-CONV-LIST")
    assert run.status("SMK-LIVE") == "not_applicable"
    assert "--dws-live-smoke" in " ".join(run.gates["SMK-LIVE"].get("notes") or [])
    assert "(on the fake backend)" in run.gates["SMK-CONV-LIST"]["doc"]
    b5 = release_verdict.b5(run.gates)
    assert b5["ok"] is None and b5["parts"]["real read-only smoke"] == "not judged"


def test_a_live_result_that_claims_more_than_it_has_fails(run_contract: Callable[..., Any], service: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The live smoke judges the output contract: one page of messages that has more never reports complete."""
    _, cast = service
    monkeypatch.setenv("DWS_REF_MUTANT", "single-page-complete")  # the user's own build, deviating
    run = run_contract("--dws-cli", CLI, f"--dws-live-smoke={cast.name}", "-k", "SMK-LIVE")
    assert run.status("SMK-LIVE") == "failed", run.output()[-3000:]
    failed = run.gates["SMK-LIVE"]["cases"][""]["failed"] if "cases" in run.gates["SMK-LIVE"] else None
    assert "+chat-messages" in json.dumps(failed or run.gates["SMK-LIVE"].get("reasons"), ensure_ascii=False)
    assert release_verdict.b5(run.gates)["parts"]["real read-only smoke"] == "failed"
