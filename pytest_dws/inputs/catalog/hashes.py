"""The two catalog hashes, recomputed exactly as upstream computes them (docs/contract.md R1.7).

``source_hash`` = ``sha256`` of Go's ``json.Marshal(struct{version, surface_hash(omitempty), catalog, tools})``:
struct field order, sorted map keys, no spaces, raw UTF-8, HTML-escaped ``< > &`` and escaped U+2028/2029.
orjson (or Python's C encoder, the reference) with sorted keys produces the same bytes once those escapes are
applied and floats are spelled as Go spells them (:func:`go_float`).

``surface_hash`` = ``sha256`` over the sorted, newline-joined rows of the reviewed surface:
- cf (``cmd_schema_catalog/main.go: loadSurface``): ``product\\0canonical\\0source_product\\0cli_path\\0aliases``;
- e81 (``schema_command_registry.go: hashCommandSpecs``): the product is the canonical prefix, the source
  product is blank when it equals the product, aliases are sorted and de-duplicated, and the row ends with
  ``\\0visibility`` (default ``public``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

_SEP = (",", ":")


def go_json(value: Any, *, floats: bool | None = None) -> bytes:
    """Go ``json.Marshal`` bytes of a parsed JSON value (maps sorted, HTML-safe escapes).

    ``floats``: whether ``value`` holds floats (``False`` when the loader saw no float token; ``None``: not
    known, so look). orjson writes exactly the bytes of the stdlib encoder below for strings, ints, bools,
    null and sorted maps (a property test holds the two together) at a tenth of its cost: on the e81
    catalog this is 190 of the ~500 ms of a whole DATA pass. Floats are the one place where Python and Go
    disagree (``1.0`` vs ``1``, ``1e-07`` vs ``1e-7``), so they are written by :func:`go_float` as orjson
    fragments. Values orjson refuses (integers beyond 64 bits, lone surrogates) take the stdlib path.
    """
    try:
        data = orjson.dumps(value if floats is False else _go_floats(value, orjson.Fragment),
                            option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        return _go_json_stdlib(value)  # (floats there keep Python's spelling: a corner of a corner)
    return _go_escapes(data)


def _go_json_stdlib(value: Any) -> bytes:
    """The same bytes with the stdlib C encoder (reference for the property test, fallback for orjson)."""
    # check_circular=False: parsed JSON cannot be circular, and the cycle check costs a dict insert + delete
    # per container. The bytes are the same.
    text = json.dumps(value, sort_keys=True, separators=_SEP, ensure_ascii=False, check_circular=False)
    return _go_escapes(text.encode("utf-8", "surrogatepass"))


#: The characters Go escapes inside strings that neither encoder escapes (outside strings they never occur
#: in JSON, so a plain replace is exact). ``<``, ``>``, ``&`` are single bytes: ``in`` is a memchr.
_HTML = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"))
#: U+2028 / U+2029 in UTF-8: one regex pass (literal prefix) instead of a slow 3-byte search for each.
_LINE_SEPARATORS = re.compile(rb"\xe2\x80[\xa8\xa9]")


def _go_escapes(data: bytes) -> bytes:
    for char, escape in _HTML:
        if char in data:
            data = data.replace(char, escape)
    if _LINE_SEPARATORS.search(data) is not None:
        data = _LINE_SEPARATORS.sub(lambda m: f"\\u{ord(m.group().decode()):04x}".encode(), data)
    return data


def go_float(number: float) -> str:
    """Go's ``encoding/json`` text of a float64: shortest round-trip digits, fixed notation for
    1e-6 <= |x| < 1e21 (no ``.0``), else exponent notation with ``e-7`` rather than ``e-07``."""
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"Go cannot marshal {number!r}")
    if number == 0 or 1e-6 <= abs(number) < 1e21:
        from decimal import Decimal

        return format(Decimal(repr(number)).normalize(), "f")
    text = repr(number)
    mantissa, exponent = text.split("e")
    sign, digits = exponent[0], exponent[1:].lstrip("0") or "0"
    return f"{mantissa}e{sign}{digits.zfill(2) if sign == '+' else digits}"


def _go_floats(value: Any, fragment: Any) -> Any:
    """``value`` with every float replaced by a pre-serialised :func:`go_float` fragment (a copy of the
    containers that hold one; the others are returned as they are)."""
    if type(value) is float:
        return fragment(go_float(value))
    if isinstance(value, dict):
        items = {k: _go_floats(v, fragment) for k, v in value.items()}
        return items if any(items[k] is not value[k] for k in items) else value
    if isinstance(value, list):
        new = [_go_floats(v, fragment) for v in value]
        return new if any(a is not b for a, b in zip(new, value, strict=True)) else value
    return value


def payload(version: Any, surface_hash: str | None, catalog: Any, tools: Mapping[str, Any], *,
            floats: bool | None = None) -> bytes:
    """The exact bytes ``source_hash`` covers: ``json.Marshal(struct{version, surface_hash, catalog, tools})``."""
    parts = [b'{"version":', go_json(version, floats=floats)]
    if surface_hash:
        parts += [b',"surface_hash":', go_json(surface_hash, floats=floats)]
    parts += [b',"catalog":', go_json(catalog, floats=floats), b',"tools":', go_json(dict(tools), floats=floats),
              b"}"]
    return b"".join(parts)


def source_hash(version: Any, surface_hash: str | None, catalog: Any, tools: Mapping[str, Any], *,
                floats: bool | None = None) -> str:
    """``schemaCatalogSnapshotHash``: the content hash the embedded-catalog loader verifies."""
    return digest(payload(version, surface_hash, catalog, tools, floats=floats))


def digest(data: bytes) -> str:
    """``"sha256:" + hex``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _digest(rows: Iterable[str]) -> str:
    return "sha256:" + hashlib.sha256("\n".join(sorted(rows)).encode("utf-8")).hexdigest()


def surface_hash_cf(surface: Iterable[Mapping[str, Any]]) -> str:
    """cf ``loadSurface`` hash over surface entries ``{product, canonical_path, source_product_id, cli_path,
    aliases}`` (``product`` = the surface product id the entry was listed under)."""
    rows = []
    for e in surface:
        aliases = sorted(a.strip() for a in e.get("aliases") or [])
        rows.append("\0".join([str(e.get("product", "")).strip(), e["canonical_path"].strip(),
                               str(e.get("source_product_id") or "").strip(), e["cli_path"].strip(),
                               "\0".join(aliases)]))
    return _digest(rows)


def _norm_path(path: str) -> str:
    """``normalizeSchemaCLIPath``: collapse whitespace and drop a leading ``dws``."""
    tokens = path.split()
    if tokens and tokens[0] == "dws":
        tokens = tokens[1:]
    return " ".join(tokens)


def surface_hash_e81(surface: Iterable[Mapping[str, Any]]) -> str:
    """e81 ``hashCommandSpecs`` over command registry entries."""
    rows = []
    for e in surface:
        canonical = e["canonical_path"].strip()
        product = canonical.split(".", 1)[0]
        source_product = str(e.get("source_product_id") or "").strip()
        if source_product == product:
            source_product = ""
        primary = _norm_path(e["cli_path"])
        aliases = sorted({_norm_path(a) for a in e.get("aliases") or []} - {primary})
        visibility = e.get("visibility") or "public"
        rows.append("\0".join([product, canonical, source_product, primary, "\0".join(aliases), visibility]))
    return _digest(rows)
