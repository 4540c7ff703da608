"""The profile's ``[errors]`` section: where the release puts its typed error on stderr and the key of each typed
field (issue 42: a release may report the reason and the category under other keys). The names are data; the
reading (:class:`pytest_dws.core.envelope.Envelope`) is the one every gate and the judge go through."""

from __future__ import annotations

from typing import Any

from pytest_dws.core.envelope import FIELDS, Envelope
from pytest_dws.inputs.tomlcheck import TomlValidator

_SECTION_KEYS = ("object", "keys")


def parse_errors(v: TomlValidator, raw: Any) -> Envelope:
    """Validate ``[errors]``: ``object`` is a key or a key path (a list; empty: the whole stderr document), each
    ``[errors.keys]`` entry maps a canonical field of :data:`FIELDS` to a distinct key of the release."""
    if not isinstance(raw, dict):
        v.fail("$.errors", "expected a table")
    unknown = sorted(set(raw) - set(_SECTION_KEYS))
    if unknown:
        v.fail(f"$.errors.{unknown[0]}", f"unknown key (the section has {', '.join(_SECTION_KEYS)})")
    at = raw.get("object", "error")
    if isinstance(at, str) and at:
        path: tuple[str, ...] = (at,)
    elif isinstance(at, list) and all(isinstance(k, str) and k for k in at):
        path = tuple(at)
    else:
        v.fail("$.errors.object", "expected a key or a list of keys (the path of the error object)")
    keys = raw.get("keys", {})
    if not isinstance(keys, dict):
        v.fail("$.errors.keys", "expected a table")
    seen: dict[str, str] = {}
    for canonical, key in keys.items():
        where = f"$.errors.keys.{canonical}"
        if canonical not in FIELDS:
            v.fail(where, f"not a typed error field the suite reads (one of {', '.join(FIELDS)})")
        if not isinstance(key, str) or not key:
            v.fail(where, "expected the release's key (a non-empty string)")
        if key in seen:
            v.fail(where, f"the key {key!r} already names the field {seen[key]!r}")
        seen[key] = canonical
    return Envelope(path, dict(keys))
