"""SCH-NO-CREDENTIALS scans: no endpoint/credential keys in any object, no credential-looking text.

Both checks are the cf policy script's (docs/contract.md §1E): the jq key test over every object and the ``rg``
regex over the raw text of the catalog, MCP metadata, service review, agent metadata, bindings and hints.

Speed: a regex over 30 MB costs as much as parsing it, so the raw bytes are first searched for short
literals every hit must contain (C speed); only the neighbourhood of a literal hit is matched with the
exact regexes. The neighbourhood reaches 64 bytes to the left (the longest bounded prefix of a match is
7) and to the right either 64 bytes or, for the unbounded tails ``Authorization[^A-Za-z0-9]*:`` and
``"key"\\s*:``, to the end of the run of non-alphanumeric bytes after the literal, so no match is cut off.
A key hit (``"endpoint":``), or text that writes ASCII letters as ``\\u00XX`` escapes (which could spell a
key the text search cannot see), makes the parsed document be walked to report exact paths; the
re-serialised catalog (``canonical=True``) never escapes a letter, so that check is skipped there.
"""

from __future__ import annotations

import re
from typing import Any

#: Object keys that must never appear (jq ``has(...)`` in check-schema-catalog.sh), compared exactly.
CREDENTIAL_KEYS = ("endpoint", "auth_headers", "authorization", "access_token", "client_secret")
#: The ``rg`` pattern of check-schema-catalog.sh (case-sensitive, as rg is by default).
TEXT_PATTERN = re.compile(
    rb"mcp-gw\.dingtalk\.com|mcp\.dingtalk\.com/server|Authorization[^A-Za-z0-9]*:|Bearer [A-Za-z0-9]"
    rb"|access[_-]?token|client[_-]?secret"
)
#: Every TEXT_PATTERN or key match contains one of these literals ("uthorization" covers both spellings).
_TRIGGERS = (b"dingtalk.com", b"uthorization", b"Bearer ", b"token", b"secret", b"endpoint", b"auth_headers")
_KEY_PATTERN = re.compile(rb'"(' + b"|".join(k.encode() for k in CREDENTIAL_KEYS) + rb')"\s*:')
_WINDOW = 64
#: The run a match may continue with after its literal, unbounded: ``[^A-Za-z0-9]*:`` and ``"\s*:``.
_TAIL = re.compile(rb"[^A-Za-z0-9]*")


def _windows(raw: bytes) -> list[tuple[int, int]]:
    """Merged byte ranges around every trigger literal (wide enough to hold every match through it)."""
    found = []

    def tail(raw: bytes, pos: int) -> re.Match[bytes]:
        m = _TAIL.match(raw, pos)
        assert m is not None  # `[^A-Za-z0-9]*` matches everywhere, if only the empty string
        return m

    for literal in _TRIGGERS:
        start = raw.find(literal)
        while start != -1:
            end = start + len(literal)
            found.append((max(0, start - _WINDOW), max(end + _WINDOW, tail(raw, end).end() + 1)))
            start = raw.find(literal, start + 1)
    found.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in found:
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


_LETTER_ESCAPE = re.compile(rb"\\u00[4-7][0-9a-fA-F]")


def _letter_escapes(raw: bytes) -> bool:
    """Whether an ASCII letter is written as a ``\\u00XX`` escape (which could hide a key from the text scan)."""
    return b"\\u00" in raw and _LETTER_ESCAPE.search(raw) is not None


def scan(raw: bytes, data: Any, *, canonical: bool = False) -> list[str]:
    """Credential keys (by JSON path) and credential-looking text (with context) in one artifact.

    ``canonical``: ``raw`` is the compact re-serialisation of ``data`` (:attr:`Release.canonical`), which
    writes every key literally, so the escaped-letter check that guards the key search is not needed.
    """
    text: set[tuple[int, int]] = set()
    keys = False
    for lo, hi in _windows(raw):
        text.update(m.span() for m in TEXT_PATTERN.finditer(raw, lo, hi))
        keys = keys or _KEY_PATTERN.search(raw, lo, hi) is not None
    out = _walk_keys(data) if keys or (not canonical and _letter_escapes(raw)) else []
    for lo, hi in sorted(text):
        context = raw[max(0, lo - 30): hi + 30].decode("utf-8", "replace").replace("\n", " ")
        out.append(f"text {raw[lo:hi].decode('utf-8', 'replace')!r} in ...{context}...")
    return out


def _walk_keys(data: Any) -> list[str]:
    from pytest_dws.inputs.catalog.jsonio import jpath

    out = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    bad = set(CREDENTIAL_KEYS)
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for key in sorted(bad.intersection(value)):
                out.append(f"key {key!r} at {jpath(*path, key)}")
            stack.extend((v, (*path, k)) for k, v in value.items() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value) if isinstance(v, (dict, list)))
    return sorted(out)
