"""Issue 38 (2): the seeded HOME of a signed-in user, and what the session cannot give a device-bound tool."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

from pytest_dws.inputs.expectations import Expectations
from pytest_dws.observe.binary.home import device_unjudged, signed_in_home

#: upstream's audit.Event field order (internal/audit/event.go at 81f67c8d): how Go marshals a record
EVENT_KEYS = ["ts", "execution_id", "agent_id", "actor", "product", "command", "endpoint", "params_summary", "result",
              "error_category", "error_reason", "duration_ms", "cli_version", "os", "arch", "prev_hash", "hash"]
OMITEMPTY = {"agent_id", "params_summary", "error_category", "error_reason"}


def _verify(text: str) -> bool:
    """upstream's audit.VerifyFile, read from internal/audit/chain.go: each record chains from the previous one's
    hash ("" first), and its hash is sha256(prev_hash + the record re-marshalled with both hashes empty)."""
    prev = ""
    for line in text.splitlines():
        rec = json.loads(line)
        if rec["prev_hash"] != prev:
            return False
        body = {k: ("" if k in ("prev_hash", "hash") else rec.get(k, "")) for k in EVENT_KEYS
                if k in ("prev_hash", "hash") or k not in OMITEMPTY or rec.get(k)}
        if hashlib.sha256((prev + json.dumps(body, separators=(",", ":"), ensure_ascii=False)).encode()).hexdigest() \
                != rec["hash"]:
            return False
        prev = rec["hash"]
    return True


def test_the_audit_log_is_a_verified_chain_per_day() -> None:
    files = signed_in_home()
    assert sorted(files) == [f"config/audit/audit-2026{m:02d}01.jsonl" for m in range(1, 13)]
    for text in files.values():
        assert len(text.splitlines()) == 3 and _verify(text)
    tampered = next(iter(files.values())).replace('"result":"success"', '"result":"error"', 1)
    assert not _verify(tampered)


def test_a_device_bound_tool_is_not_judged_without_a_nic() -> None:
    ctx = SimpleNamespace(expect=Expectations(), settings=SimpleNamespace(replay="rec"))
    assert device_unjudged(ctx, {"canonical_path": "event.status"})  # a replay answers as the recorded namespace
    assert device_unjudged(ctx, {"canonical_path": "event.list"}) is None
    assert device_unjudged(ctx, {"canonical_path": "chat.send_personal_message"}) is None


def test_the_reference_audit_tools_run_on_the_seeded_home_and_fail_without(run_contract, tmp_path) -> None:
    """The reference's `audit tail|export|verify` read the audit log first, as 81f67c8d's do: with the seeded HOME
    their dry runs and examples are judged and pass; a release whose facts seed no HOME for them (an empty HOME,
    the suite before issue 38) has them refused before any request, which the gates report (so they can fail)."""
    from tests.test_schema_mutants import REF

    cli = ["--dws-cli", f"{{python}} -I -S {REF / 'dws'}"]
    select = ["-k", "SCH-REQUIRED-FROM-CLI or SCH-EXAMPLES", "--dws-subject", "audit.*,bin:audit.*"]
    run = run_contract(*cli, "--dws-expect", str(REF / "expectations.toml"), *select)
    assert run.status("SCH-REQUIRED-FROM-CLI") == run.status("SCH-EXAMPLES") == "passed", run.output()[-3000:]
    bare = tmp_path / "no-home.toml"
    bare.write_text((REF / "expectations.toml").read_text(encoding="utf-8").replace(
        "[schema]\n", "[schema]\nsigned_in_state = []\n", 1), encoding="utf-8")
    run = run_contract(*cli, "--dws-expect", str(bare), *select)
    assert run.status("SCH-REQUIRED-FROM-CLI") == "failed", run.output()[-3000:]
    assert {"bin:audit.tail", "bin:audit.verify"} <= set(run.gates["SCH-EXAMPLES"]["failed_items"]), \
        run.output()[-4000:]
    assert {"audit.tail", "audit.verify", "audit.export"} <= set(run.gates["SCH-REQUIRED-FROM-CLI"]["failed_items"])
