"""Issue 38 (2): the seeded HOME of a signed-in user (its audit log, its stored token), and what the session cannot
give a device-bound tool."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from pytest_dws.inputs.expectations import Expectations
from pytest_dws.launch.homes import write_files
from pytest_dws.launch.recording import Keyer
from pytest_dws.observe.binary.home import device_unjudged, signed_in_home, stored_token
from pytest_dws.observe.binary.worlds import EMPTY, SYNTHETIC

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
    files = {name: text for name, text in signed_in_home().items() if name.startswith("config/")}
    assert sorted(files) == [f"config/audit/audit-2026{m:02d}01.jsonl" for m in range(1, 13)]
    for text in files.values():
        assert isinstance(text, str) and len(text.splitlines()) == 3 and _verify(text)
    first = next(iter(files.values()))
    assert isinstance(first, str) and not _verify(first.replace('"result":"success"', '"result":"error"', 1))


#: auth.TokenData's JSON names in its field order (internal/auth/token.go at 81f67c8d)
TOKEN_KEYS = ["access_token", "refresh_token", "persistent_code", "expires_at", "refresh_expires_at", "corp_id",
              "user_id", "user_name", "corp_name", "client_id", "updated_at", "source"]


def _keychain_read(files: dict[str, str | bytes], account: str) -> dict[str, object]:
    """An entry of the Linux file keychain read as internal/keychain/keychain_linux.go platformGet does, written
    out again from the upstream source: the data key is ``<dir>/dek`` (exactly 32 bytes, file_dek.go
    fileDEKReadOnly), the entry ``<dir>/<account>.enc`` is nonce(12) || AES-256-GCM ciphertext+tag, no associated
    data (decryptData), the plaintext TokenData JSON (keychain_store.go loadTokenDataKeychainAccount)."""
    dek, sealed = files["keychain/dws-cli/dek"], files[f"keychain/dws-cli/{account}.enc"]
    assert isinstance(dek, bytes) and isinstance(sealed, bytes) and len(dek) == 32
    doc = json.loads(AESGCM(dek).decrypt(sealed[:12], sealed[12:], None))
    assert isinstance(doc, dict)
    return doc


def test_the_stored_token_opens_as_the_binary_reads_it() -> None:
    """The keychain entry decrypts with upstream's algorithm into TokenData of the fake identity (fake_mcp's
    signed-in user), valid for the binary (a future expiry: an expired token would be refreshed over the
    network), the same bytes every time (the HOME is part of a recording's key); a tampered byte fails the tag."""
    files: dict[str, str | bytes] = dict(stored_token())
    token = _keychain_read(files, "auth-token")
    assert list(token) == [k for k in TOKEN_KEYS if k in token] and set(TOKEN_KEYS) - set(token) <= {"source"}
    assert (token["corp_id"], token["user_id"]) == ("corp-fake", "user-fake-self")
    assert str(token["expires_at"]) > "2098" and token["access_token"] and token["client_id"]
    assert stored_token() == files
    sealed = files["keychain/dws-cli/auth-token.enc"]
    assert isinstance(sealed, bytes)
    files["keychain/dws-cli/auth-token.enc"] = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(InvalidTag):
        _keychain_read(files, "auth-token")


def test_the_signed_in_products_runs_start_signed_in() -> None:
    """The release facts decide (``[schema] signed_in_state``): the audit and event products' runs start with the
    whole signed-in HOME (the audit log and the stored token), no other product's, and no run of the empty world
    (help, schema views)."""
    ctx = SimpleNamespace(expect=Expectations())
    home = signed_in_home()
    assert {"keychain/dws-cli/dek", "keychain/dws-cli/auth-token.enc"} < set(home)
    for args in (("event", "consume", "user_im_message_receive_at", "--max-events", "1"), ("event", "status"),
                 ("event", "+listen-im", "--kind", "at-me"), ("audit", "tail")):
        assert SYNTHETIC.home(ctx, args) == home, args
    assert SYNTHETIC.home(ctx, ("chat", "message", "send")) == {}
    assert EMPTY.home(ctx, ("event", "status")) == {}


def test_binary_input_files_are_written_and_keyed_by_content(tmp_path: Path) -> None:
    """A binary input file lands byte for byte in the HOME, and a recording keys it by its content."""
    files = stored_token()
    write_files(tmp_path, files)
    assert all((tmp_path / name).read_bytes() == data for name, data in files.items())
    keyer = Keyer(["dws"], tmp_path)
    key, material = keyer.key(["dws", "event", "status"], None, {}, b"", files)
    other = {**files, "keychain/dws-cli/dek": bytes(32)}
    assert keyer.key(["dws", "event", "status"], None, {}, b"", other)[0] != key
    assert keyer.key(["dws", "event", "status"], None, {}, b"", dict(files))[0] == key
    assert set(material["files"]) == set(files)


def test_a_device_bound_tool_is_not_judged_without_a_nic() -> None:
    """A tool the release facts call device-bound is not judged where there is no NIC: a replay answers as the
    recorded (loopback-only) session; 81f67c8d's facts name none (its event commands read the keychain first)."""
    bound = Expectations(data={"schema": {"device_bound": ["event.*"]}})
    ctx = SimpleNamespace(expect=bound, settings=SimpleNamespace(replay="rec"))
    assert device_unjudged(ctx, {"canonical_path": "event.status"})  # a replay answers as the recorded namespace
    assert device_unjudged(ctx, {"canonical_path": "chat.send_personal_message"}) is None
    ctx = SimpleNamespace(expect=Expectations(), settings=SimpleNamespace(replay="rec"))
    assert device_unjudged(ctx, {"canonical_path": "event.status"}) is None


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
