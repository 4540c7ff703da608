"""The two catalog hashes, recomputed exactly as upstream computes them (GATES.md R1.7).

``source_hash`` = ``sha256`` of Go's ``json.Marshal(struct{version, surface_hash(omitempty), catalog, tools})``:
struct field order, sorted map keys, no spaces, raw UTF-8, HTML-escaped ``< > &`` and escaped U+2028/2029.
Python's C encoder with ``sort_keys`` produces the same bytes once those escapes are applied.

``surface_hash`` = ``sha256`` over the sorted, newline-joined rows of the reviewed surface:
- cf (``cmd_schema_catalog/main.go: loadSurface``): ``product\\0canonical\\0source_product\\0cli_path\\0aliases``;
- e81 (``schema_command_registry.go: hashCommandSpecs``): the product is the canonical prefix, the source
  product is blank when it equals the product, aliases are sorted and de-duplicated, and the row ends with
  ``\\0visibility`` (default ``public``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

_SEP = (",", ":")


def go_json(value: Any) -> bytes:
    """Go ``json.Marshal`` bytes of a parsed JSON value (maps sorted, HTML-safe escapes)."""
    # check_circular=False: parsed JSON cannot be circular, and the cycle check costs a dict insert + delete
    # per container (~15% of the encoder's time on the e81 catalog). The bytes are the same.
    text = json.dumps(value, sort_keys=True, separators=_SEP, ensure_ascii=False, check_circular=False)
    # Go escapes these inside strings; outside strings they never occur in JSON, so a replace is exact.
    # (Searching the str is several times faster than searching the encoded bytes.)
    found = [c for c in "<>&\u2028\u2029" if c in text]
    data = text.encode("utf-8", "surrogatepass")
    for char in found:
        data = data.replace(char.encode("utf-8"), f"\\u{ord(char):04x}".encode())
    return data


def payload(version: Any, surface_hash: str | None, catalog: Any, tools: Mapping[str, Any]) -> bytes:
    """The exact bytes ``source_hash`` covers: ``json.Marshal(struct{version, surface_hash, catalog, tools})``."""
    parts = [b'{"version":', go_json(version)]
    if surface_hash:
        parts += [b',"surface_hash":', go_json(surface_hash)]
    parts += [b',"catalog":', go_json(catalog), b',"tools":', go_json(dict(tools)), b"}"]
    return b"".join(parts)


def source_hash(version: Any, surface_hash: str | None, catalog: Any, tools: Mapping[str, Any]) -> str:
    """``schemaCatalogSnapshotHash``: the content hash the embedded-catalog loader verifies."""
    return digest(payload(version, surface_hash, catalog, tools))


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
