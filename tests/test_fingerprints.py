"""Baseline entries bind their cause (issue 24 (4)): an entry may carry the fingerprint of the failure it accepts
(typed facts: exit code, error reason and category, the failing fields, the backend tools called); the same item
or case failing with other facts is a new failure that names both. ``release init`` writes the fingerprints a run
observed (the migration of an old baseline)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_dws.cli.release import plan
from pytest_dws.verdict.baseline import load_baseline

REF = Path(__file__).resolve().parents[1] / "fixtures" / "reference"
CLI = f"{{python}} -I -S {REF / 'dws'}"


def _run(run_contract: Any, tmp_path: Path, fingerprint: str, *, mutant: str = "no-permission") -> Any:
    base = tmp_path / "baseline.toml"
    base.write_text('[expected_failures]\n"ERR-PERMISSION" = {reason = "D1 §3.1 row 3: business_error observed", '
                    f'fingerprint = {{{fingerprint}}}}}\n', encoding="utf-8")
    return run_contract("--dws-cli", CLI, "-k", "ERR-PERMISSION", f"--dws-env=DWS_REF_MUTANT={mutant}",
                        f"--dws-baseline={base}")


def test_the_same_cause_is_accepted(run_contract: Any, tmp_path: Path) -> None:
    run = _run(run_contract, tmp_path, 'exit = 1, reason = "business_error"')
    assert run.ret == 0 and run.status("ERR-PERMISSION") == "xfailed", run.output()[-1500:]


def test_another_cause_is_a_new_failure_naming_both(run_contract: Any, tmp_path: Path) -> None:
    run = _run(run_contract, tmp_path, 'exit = 1, reason = "mcp_tool_error"')
    assert run.ret == 1 and run.status("ERR-PERMISSION") == "failed", run.output()[-1500:]
    assert "fails for another cause" in run.output()
    assert "'mcp_tool_error' -> 'business_error'" in run.output()


def test_release_init_writes_the_observed_fingerprints(run_contract: Any) -> None:
    run = run_contract("--dws-cli", CLI, "-k", "ERR-PERMISSION", "--dws-env=DWS_REF_MUTANT=no-permission")
    _, _, triage = plan(run.report, {})
    assert triage["ERR-PERMISSION"]["fingerprint"]["reason"] == "business_error"
    carried, _, _ = plan({**run.report, "baseline_use": {"failed": ["ERR-PERMISSION"]}},
                         {"ERR-PERMISSION": "D1 §3.1 row 3"})
    assert carried["ERR-PERMISSION"] == {"reason": "D1 §3.1 row 3", "fingerprint": triage["ERR-PERMISSION"][
        "fingerprint"]}


def test_a_malformed_fingerprint_is_one_line(tmp_path: Path) -> None:
    import pytest

    from pytest_dws.core.errors import DwsInputError

    base = tmp_path / "b.toml"
    base.write_text('[expected_failures]\n"ERR-PERMISSION" = {reason = "r", fingerprint = "exit 1"}\n',
                    encoding="utf-8")
    with pytest.raises(DwsInputError, match=r"ERR-PERMISSION'\.fingerprint"):
        load_baseline(base, ["ERR-PERMISSION"])


# -- SCH-REQUIRED-FROM-CLI: cases per flag, each bound to its cause ----------------------------------------------------
TOOL = "chat.shortcut_conversation_list"


def _required_run(run_contract: Any, tmp_path: Path, entry: str) -> Any:
    """The reference with `schema-mcp-required` (the schema calls --limit required, the CLI runs without it)."""
    base = tmp_path / "baseline.toml"
    base.write_text(f'[expected_failures]\n"SCH-REQUIRED-FROM-CLI[{TOOL}/{entry}\n', encoding="utf-8")
    return run_contract("--dws-cli", CLI, "--dws-sample", "all", "-k", "SCH-REQUIRED-FROM-CLI",
                        "--dws-env=DWS_REF_MUTANT=schema-mcp-required", f"--dws-baseline={base}")


def test_a_required_flag_the_cli_does_not_require_is_its_own_case(run_contract: Any, tmp_path: Path) -> None:
    run = _required_run(run_contract, tmp_path, 'without --limit]" = {reason = "D2 §3: runs without it", '
                        'fingerprint = {exit = 0, outcome = "ran"}}')
    assert run.ret == 0 and run.status("SCH-REQUIRED-FROM-CLI") == "xfailed", run.output()[-1500:]
    cases = run.report["gates"]["SCH-REQUIRED-FROM-CLI"]["cases"][TOOL]
    assert list(cases["accepted"]) == ["without --limit"]
    assert cases["facts"]["without --limit"]["outcome"] == "ran"


def test_the_same_flag_failing_for_another_cause_is_new(run_contract: Any, tmp_path: Path) -> None:
    run = _required_run(run_contract, tmp_path, 'without --limit]" = {reason = "D2 §3: refused", '
                        'fingerprint = {exit = 5, outcome = "refused"}}')
    assert run.ret == 1 and run.status("SCH-REQUIRED-FROM-CLI") == "failed", run.output()[-1500:]
    assert "fails for another cause" in run.output() and "'refused' -> 'ran'" in run.output()
    # it failed: a new failure naming both causes, never a stale entry that "passes now" (issue 42)
    assert not any("stale" in p for p in run.report.get("baseline_problems", [])), run.report["baseline_problems"]


def test_an_entry_the_release_fixed_is_reported_stale_not_as_a_new_failure(run_contract: Any, tmp_path: Path) -> None:
    """Issue 42: a baseline entry whose case passes now (the release fixed it) shrinks the baseline: the run names it
    stale (a listed item that passes fails the run, as stale), never as a new failing case."""
    base = tmp_path / "baseline.toml"
    base.write_text(f'[expected_failures]\n"SCH-REQUIRED-FROM-CLI[{TOOL}/schema-required only]" = {{reason = "D2 §3: '
                    'refused", fingerprint = {exit = 5, outcome = "refused"}}\n', encoding="utf-8")
    run = run_contract("--dws-cli", CLI, "--dws-sample", "all", "-k", "SCH-REQUIRED-FROM-CLI", f"--dws-baseline={base}")
    assert run.ret == 1, run.output()[-1500:]
    assert any("stale" in p and "schema-required only" in p for p in run.report["baseline_problems"])
    gate = run.report["gates"]["SCH-REQUIRED-FROM-CLI"]
    assert gate["reasons"] and all("stale baseline entry" in r for r in gate["reasons"]), gate["reasons"]
    assert not (gate.get("cases") or {}).get(TOOL, {}).get("failed")


def test_a_per_tool_required_entry_is_a_usage_error_naming_the_flag_cases(run_contract: Any, tmp_path: Path) -> None:
    """The old per-tool `required` case accepted any future problem of the tool: it names no case now."""
    run = _required_run(run_contract, tmp_path, 'required]" = "D2 §3: any problem"')
    assert run.ret == 4, run.output()[-1500:]
    assert "without --limit" in run.output()


# -- the fingerprints of the real-binary baselines ---------------------------------------------------------------------
RELEASES = Path(__file__).resolve().parents[1] / "fixtures" / "releases"
#: Reference mutants that behave as 81f67c8d does where its baseline says so (GATES.md R8.2, R8.3, R8.5: a name
#: reaches --conversation-id verbatim, the detail outranks the code, no permission / not-found rows, writes retried).
E81_LIKE = "conversation-id-verbatim,retry-writes,detail-first,no-permission,no-not-found,name-as-id"


def test_the_81f67c8d_fingerprints_accept_the_same_causes_on_the_reference(run_contract: Any,
                                                                           answered: list[str]) -> None:
    """The fingerprints of the 81f67c8d baseline (taken from the observed reports) name facts the gates record: on
    the reference made to fail as 81f67c8d does, every such entry is accepted, none fails for another cause."""
    base = RELEASES / "81f67c8d" / "baseline-binary.toml"
    run = run_contract("--dws-cli", CLI, "-m", "dws_err or dws_tgt", f"--dws-env=DWS_REF_MUTANT={E81_LIKE}",
                       f"--dws-baseline={base}", *answered)
    bound = {e for e in load_baseline(base).fingerprints if e.startswith(("ERR-", "TGT-"))}
    accepted = set(run.report["baseline_use"]["failed"])
    changed = {f"{g}[{s}]": c["changed"] for g, v in run.report["gates"].items()
               for s, c in (v.get("cases") or {}).items() if c.get("changed")}
    assert not changed and "fails for another cause" not in run.output(), changed or run.output()[-3000:]
    # every bound entry but those whose behaviour these mutants do not reproduce: the 503/429 hints, a typed
    # target_type_mismatch for a CID given to +group-members, and a multi-profile run that gives no aggregate at all
    # (81f67c8d: one untyped error, exit 1 / 3; the reference's multi-profile-thin keeps an aggregate that loses
    # fields, a fact of another kind, so its entries would rightly fail 'for another cause')
    assert bound - accepted == {"ERR-NO-MISLEADING-HINT[http-503]", "ERR-NO-MISLEADING-HINT[http-429]",
                                "TGT-SAME-SEMANTICS[+group-members/--group <cid>]",
                                "ERR-JSON-CONSISTENT[multi-profile/backend-dep-meta]",
                                "ERR-JSON-CONSISTENT[multi-profile/+chat-members-list candidates]"}


def test_a_run_that_crashes_without_a_flag_fails_that_flag_s_case(run_contract: Any, tmp_path: Path) -> None:
    """A crashed execution is its own case's failure, with the crash as its fingerprint: never a pass, never a
    failure of the tool as a whole."""
    import sys

    wrapper = tmp_path / "crashing-dws"
    wrapper.write_text("#!/bin/sh\n"
                       "case \" $* \" in *' --dry-run '*|*' --help '*|*' schema'*) ;; *) kill -SEGV $$ ;; esac\n"
                       f"exec {sys.executable} -I -S {REF / 'dws'} \"$@\"\n", encoding="utf-8")
    wrapper.chmod(0o755)
    run = run_contract("--dws-cli", str(wrapper), "--dws-sample", "all", "-k", "SCH-REQUIRED-FROM-CLI")
    assert run.ret == 1, run.output()[-1500:]
    cases = run.report["gates"]["SCH-REQUIRED-FROM-CLI"]["cases"]
    crashed = {(tool, case) for tool, c in cases.items() for case in c.get("failed") or []}
    assert crashed and all(case.startswith("without --") for _, case in crashed), crashed
    assert all(cases[t]["facts"][c]["outcome"] == "crashed" for t, c in crashed)


# -- issue 35 rule 8: a fingerprint names the breached fact, not the exact call list ---------------------------------
def test_an_added_read_only_call_keeps_an_accepted_cause_accepted_and_its_aggregate_follows(
        run_contract: Any, tmp_path: Path, answered: list[str]) -> None:
    """`pick-first` sends the business call for an ambiguous name; each subject's entry binds the calls its breach
    showed. The same deviation in a release that also verifies the picked ID first (the `validate-first` variant
    adds a read-only chat/get_conversation_info) is the same cause: still accepted, and ACC-AMBIG-37, the
    aggregate of that rule gate, follows it. A bound call that is no longer made is another cause."""
    gate, base = "TGT-MULTI-ZERO-CALLS", tmp_path / "baseline.toml"
    args = ("--dws-cli", CLI, "-k", f"{gate} or ACC-AMBIG-37", "--dws-env=DWS_REF_MUTANT=pick-first", *answered)
    seen = run_contract(*args).report["gates"][gate]["cases"]
    calls = {k: v["facts"][""]["calls"] for k, v in seen.items()}
    assert len(calls) >= 3 and all("im/search_groups" in c for c in calls.values()), calls

    def judged(bound: dict[str, str], *env: str) -> Any:
        base.write_text("[expected_failures]\n" + "".join(
            f'"{gate}[{k}]" = {{reason = "D1 §4 rule 4: the first candidate is used", fingerprint = '
            f'{{calls = "{c}"}}}}\n' for k, c in bound.items()), encoding="utf-8")
        return run_contract(*args, f"--dws-baseline={base}", *env)

    validated = judged(calls, "--dws-env=DWS_REF_VARIANT=validate-first")
    assert validated.ret == 0, validated.output()[-1500:]
    assert validated.status(gate) == "xfailed" and validated.status("ACC-AMBIG-37") == "xfailed"
    key = sorted(calls)[0]
    moved = judged({**calls, key: calls[key] + ",chat/update_group_name"})
    assert moved.ret == 1 and "fails for another cause" in moved.output(), moved.output()[-1500:]
