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
