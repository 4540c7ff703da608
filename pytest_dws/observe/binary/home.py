"""The HOME of a signed-in user, for the commands that read their own local state (issue 38 item 2).

Why: `dws audit tail|export|verify` read the local audit log before anything else; in the suite's fresh, empty
HOME they can only refuse (81f67c8d: '无审计记录: open <HOME>/config/audit: no such file'), so their dry runs and
examples were never judged. A signed-in user's HOME holds that log, so the runs of the commands that read it get
one, written in the binary's documented file format (never real data, never credentials): one file
``audit-YYYYMMDD.jsonl`` per month of 2026 under ``$DWS_CONFIG_DIR/audit``, three records each, chained as
upstream's ``audit.VerifyFile`` checks it (``hash = sha256(prev_hash + the record marshalled with both hashes
empty)``, the first record of a file chaining from ""; internal/audit/chain.go, event.go at 81f67c8d).

The commands that load the signed-in user's stored OAuth token instead of ``--token`` (81f67c8d `event consume|
status|+listen-im`) find it where `dws auth login` keeps it on Linux: the file keychain (:func:`stored_token`).

The files travel as the invocation's input files (relative to its HOME), so a recording keys them by content: a
run with the seeded HOME is a new invocation, never answered by a recorded run that had the empty one. Only the
products the release facts name (``[schema] signed_in_state``) get it, so every other recorded run stays valid.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from typing import Any

from fake_mcp.world_state import SELF
from pytest_dws.core.protocols import GateContext

#: The audit records of one day's file: (time of day, product, command, result).
_RECORDS = (("09:00:00", "chat", "chat message send", "success"),
            ("09:30:00", "calendar", "calendar event list", "success"),
            ("10:00:00", "aitable", "aitable record query", "error"))


def signed_in_home() -> dict[str, str | bytes]:
    """HOME-relative path -> content of the signed-in user's local state: the audit log and the stored token."""
    audit: dict[str, str | bytes] = {f"config/audit/audit-2026{month:02d}01.jsonl": _audit_file(f"2026-{month:02d}-01")
                                     for month in range(1, 13)}
    return {**audit, **stored_token()}


def _audit_file(day: str) -> str:
    prev, lines = "", []
    for n, (clock, product, command, result) in enumerate(_RECORDS, 1):
        event = _event(day, clock, n, product, command, result)
        body = _marshal({**event, "prev_hash": "", "hash": ""})
        digest = hashlib.sha256((prev + body).encode("utf-8")).hexdigest()
        lines.append(_marshal({**event, "prev_hash": prev, "hash": digest}))
        prev = digest
    return "".join(line + "\n" for line in lines)


def _event(day: str, clock: str, n: int, product: str, command: str, result: str) -> dict[str, Any]:
    """One record, its keys in the order of upstream's ``audit.Event`` (Go marshals struct fields in order; the
    omitempty ones this record leaves out are absent)."""
    out: dict[str, Any] = {
        "ts": f"{day}T{clock}+08:00",
        "execution_id": f"exec-synthetic-{day.replace('-', '')}-{n}",
        "actor": {"user_id": "user-fake-self", "name": "synthetic", "corp_id": "corp-fake"},
        "product": product,
        "command": command,
        "endpoint": "http://127.0.0.1/synthetic",
        "result": result,
    }
    if result == "error":
        out.update({"error_category": "api", "error_reason": "synthetic"})
    return {**out, "duration_ms": 12 * n, "cli_version": "synthetic", "os": "linux", "arch": "amd64"}


def _marshal(record: dict[str, Any]) -> str:
    """Go's ``json.Marshal`` of such a record: compact, the keys in order (the values are plain ASCII, so Go's
    HTML escaping of <, > and & changes nothing)."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


#: Where 81f67c8d keeps secrets on Linux, below $DWS_KEYCHAIN_DIR (the run's HOME/keychain, fake_mcp.isolation_env):
#: internal/keychain/keychain_linux.go StorageDir(service "dws-cli"), the data key ``dek`` (file_dek.go: exactly 32
#: bytes) and one ``<account>.enc`` per entry; the signed-in user's token is account ``auth-token`` (keychain.go).
KEYCHAIN = "keychain/dws-cli"
#: A visibly synthetic data key and nonce, fixed: the HOME is part of a recording's key, so it is reproducible.
_DEK = b"pytest-dws: synthetic data key!!"
_NONCE = b"synthetic-iv"


def stored_token() -> dict[str, bytes]:
    """HOME-relative path -> content of the signed-in user's stored token, in the keychain 81f67c8d reads first.

    Why the keychain and not ``config/.data``: LoadTokenData (internal/auth/token.go,
    ``loadTokenDataForProfileLocked``) reads the keychain's ``auth-token`` slot and falls back to the legacy
    ``.data`` only when the keychain holds no token; ``.data`` alone is keyed by a NIC's MAC address
    (internal/auth/secure_store.go resolvePassword -> internal/security/fingerprint.go selectMAC), which a
    loopback-only network namespace does not have: that fallback is what the recorded event runs met ('no NIC MAC
    address found'). The keychain needs no device identity: an entry is nonce(12) || AES-256-GCM(dek) sealed
    TokenData JSON (keychain_linux.go encryptData; json.MarshalIndent of auth.TokenData, keychain_store.go). The
    binary's first read migrates the slot into its profile registry (internal/auth/profiles.go
    ensureProfilesMigrationLocked), its own code in the run's temporary HOME. The identity is fake_mcp's signed-in
    user; the token never expires, since an expired one would be refreshed over the network."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    sealed = AESGCM(_DEK).encrypt(_NONCE, token_json().encode("utf-8"), None)
    return {f"{KEYCHAIN}/dek": _DEK, f"{KEYCHAIN}/auth-token.enc": _NONCE + sealed}


def token_json() -> str:
    """auth.TokenData of the fake identity as Go's json.MarshalIndent(data, "", "  ") writes it: the struct's
    field order, omitempty fields left out when empty (internal/auth/token.go at 81f67c8d)."""
    data = {"access_token": "synthetic-access-token", "refresh_token": "synthetic-refresh-token",
            "persistent_code": "", "expires_at": "2099-01-01T00:00:00Z", "refresh_expires_at": "2099-01-01T00:00:00Z",
            "corp_id": SELF["corpId"], "user_id": SELF["userId"], "user_name": SELF["name"],
            "corp_name": "synthetic corp", "client_id": "synthetic-client-id", "updated_at": "2026-01-01T00:00:00Z"}
    return json.dumps(data, indent=2, ensure_ascii=False)


def device_unjudged(ctx: GateContext, leaf: dict[str, Any]) -> str | None:
    """Why the runs of this tool cannot be judged in this session, or None: the release facts say the tool needs
    the device's identity before anything else (``[schema] device_bound``, canonical keys: a command whose only
    credential store is keyed by a NIC's MAC address, as upstream's legacy ``.data`` is) and the session has no
    NIC (the loopback-only network namespace), where no black-box input can give it one. None of 81f67c8d's tools
    is listed: its `event` commands read the keychain first, which the seeded HOME fills (:func:`stored_token`)."""
    from pytest_dws.inputs.release_facts import schema_facts
    from pytest_dws.launch.contain.sandbox import interfaces

    key = str(leaf.get("canonical_path") or "")
    if not any(fnmatch.fnmatchcase(key, p) for p in schema_facts(ctx.expect).get("device_bound") or ()):
        return None
    # A replay answers as the recorded session did: the recordings are made in the loopback-only namespace (the
    # default isolation), whatever NICs are here.
    nics = [] if ctx.settings.replay is not None else [n for n in interfaces() if n != "lo"]
    if nics:
        return None
    return ("needs a NIC's MAC address (its token key is derived from it) and this session's loopback-only "
            "network namespace has no NIC: not judgeable here ([schema] device_bound)")
