"""The release data of one implementation: the reassembled catalog plus every reviewed artifact beside it.

:func:`~pytest_dws.inputs.catalog.loader.load_release` reads a source tree (layout detected: ``cf`` single-file
catalog or ``e81`` shards + command registry + ``schema_hints``) or one catalog file;
:meth:`Release.from_document` wraps a parsed catalog in any stored shape or a ``dws schema --all`` output.
Every file is read once, parsed once, checked against its JSON Schema, and kept (raw bytes too, for the
text scans). A malformed file stops the run with one :class:`~pytest_dws.core.errors.DwsInputError` line; a
missing optional artifact is ``None`` and the gates that need it report "not applicable" naming the file
(:meth:`Release.require`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError, NotApplicable
from pytest_dws.inputs.catalog import layout as L
from pytest_dws.inputs.catalog.jsonio import jpath
from pytest_dws.inputs.catalog.validate import check


@dataclass
class Artifact:
    """One file as read: its display name, raw bytes and parsed value."""

    name: str
    raw: bytes
    data: Any


@dataclass
class Release:
    """Catalog + artifacts of one release (see module docstring). Attributes are plain data, never copied."""

    layout: str  # "cf" | "e81" | "file"
    generation: str  # which contract generation the data follows: "cf" or "e81" (R1.9)
    root: Path | None
    origin: str  # what was read, for messages
    doc: dict[str, Any]  # {version, source_hash, surface_hash?, catalog, tools}
    full_leaves: bool = True  # False for a cf `schema --all` (tool summaries only)
    surface: list[dict[str, Any]] | None = None
    surface_name: str = ""
    files: dict[str, Artifact] = field(default_factory=dict)  # every artifact read, by display name
    catalog_files: list[str] = field(default_factory=list)
    artifacts: dict[str, Artifact] = field(default_factory=dict)  # by key (COMMON keys)
    hints: dict[str, Artifact] = field(default_factory=dict)  # by path inside the hints directory
    hints_dir: str = ""
    floats: bool | None = None  # whether the catalog holds float tokens (None: not known, e.g. a binary's output)
    built_from: Path | None = None  # the tree whose build embeds this catalog (it commits none: issue 27)

    # -- the catalog ----------------------------------------------------------------------------------
    @property
    def catalog(self) -> dict[str, Any]:
        return self.doc["catalog"]

    @property
    def tools(self) -> dict[str, dict[str, Any]]:
        """canonical path -> full leaf (a summary when ``full_leaves`` is False)."""
        return self.doc["tools"]

    @property
    def products(self) -> list[dict[str, Any]]:
        return self.doc["catalog"].get("products", [])

    # -- artifacts --------------------------------------------------------------------------------------
    def _data(self, key: str) -> Any:
        art = self.artifacts.get(key)
        return None if art is None else art.data

    def _hint(self, name: str) -> Any:
        art = self.hints.get(name)
        return None if art is None else art.data

    mcp_metadata = property(lambda self: self._data("mcp_metadata"))
    service_review = property(lambda self: self._data("service_review"))
    agent_index = property(lambda self: self._data("agent_index"))
    agent_audit = property(lambda self: self._data("agent_audit"))
    bindings = property(lambda self: self._data("bindings"))
    exclusions = property(lambda self: self._data("exclusions"))
    selection_review = property(lambda self: self._hint(L.HINT_FILES["selection_review"]))
    destructive_safety = property(lambda self: self._hint(L.HINT_FILES["destructive_safety"]))
    conference = property(lambda self: self._hint(L.HINT_FILES["conference"]))
    sibling_disambiguation = property(lambda self: self._hint(L.HINT_FILES["sibling_disambiguation"]))
    hint_index = property(lambda self: self._hint(L.HINT_FILES["hint_index"]))

    @property
    def reference_review(self) -> Any:
        """reference-review.json, else the ``reference_review`` table of the e81 hint index."""
        data = self._hint(L.HINT_FILES["reference_review"])
        if data is None and isinstance(self.hint_index, dict) and "reference_review" in self.hint_index:
            return {"version": self.hint_index.get("version"), "reference_review": self.hint_index["reference_review"]}
        return data

    def hint(self, name: str) -> Any:
        """A hint file by its path inside the hints directory (``"metadata/chat.json"``), or None."""
        return self._hint(name)

    def where(self, key: str) -> str:
        """Where artifact ``key`` is expected, for messages."""
        if key == "surface":
            return L.surface_path(self.layout) if self.layout != "file" else "the reviewed surface"
        if key in L.COMMON:
            return L.COMMON[key]
        if key in L.HINT_FILES:
            return f"{self.hints_dir or '<hints>'}/{L.HINT_FILES[key]}"
        return key

    def require(self, key: str) -> Any:
        """The artifact ``key`` (``"surface"``, ``"mcp_metadata"``, ``"selection_review"`` ...), or
        NotApplicable naming the missing file."""
        value = self.surface if key == "surface" else getattr(self, key)
        if value is None:
            if self.layout == "file" and self.built_from is not None:
                raise NotApplicable(f"{self.where(key)} is not judged without a committed catalog: {self.built_from} "
                                    "assembles its catalog at build time (the binary's is judged)",
                                    wants="a committed catalog")
            if self.layout == "file":
                raise NotApplicable(f"{self.where(key)} is not available: only a catalog file was given "
                                    "(use --dws-source TREE to judge the artifacts beside it)",
                                    wants="--dws-source")
            raise NotApplicable(f"{self.where(key)} not found in {self.root}",
                                wants=f"the release's {key.replace('_', ' ')}")
        return value

    def name_of(self, key: str) -> str:
        """Display name of a loaded artifact (for messages)."""
        if key in self.artifacts:
            return self.artifacts[key].name
        return self.where(key)

    # -- derived views (cached) ------------------------------------------------------------------------
    @functools.cached_property
    def canonical(self) -> bytes:
        """The exact bytes ``source_hash`` covers (Go ``json.Marshal`` of version, surface_hash, catalog,
        tools; R1.7). Computed once: SCH-HASHES hashes it, SCH-NO-CREDENTIALS scans it instead of the
        indented catalog files (same keys and strings, a third fewer bytes, escapes decoded)."""
        from pytest_dws.inputs.catalog.hashes import payload

        return payload(self.doc.get("version"), self.doc.get("surface_hash"), self.doc["catalog"], self.tools,
                       floats=self.floats)

    @functools.cached_property
    def selection(self) -> tuple[str, dict[str, dict[str, Any]]] | None:
        """``(source, canonical -> reviewed selection entry)``: the e81 hint index ``selection`` files, else
        selection-review.json. None when neither exists."""
        index = self.hint_index
        if isinstance(index, dict) and index.get("selection"):
            merged: dict[str, dict[str, Any]] = {}
            names = []
            for rel in sorted(index["selection"].values()):  # existence checked on load
                names.append(rel)
                merged.update((self.hint(rel) or {}).get("tools", {}))
            return f"{self.hints_dir}/{{{','.join(names)}}}" if len(names) > 1 else names[0], merged
        review = self.selection_review
        if review is None:
            return None
        return f"{self.hints_dir}/{L.HINT_FILES['selection_review']}", review.get("tools", {})

    @functools.cached_property
    def safety_hints(self) -> tuple[list[str], dict[str, tuple[str, dict[str, Any]]]] | None:
        """``(files, canonical -> (file, hint))``: the reviewed explicit safety hints.

        e81: the ``metadata`` files named by the hint index (the runtime_gate truth; destructive-safety.json
        is no longer an input there). cf: destructive-safety.json and conference.json.
        """
        index = self.hint_index
        out: dict[str, tuple[str, dict[str, Any]]] = {}
        if isinstance(index, dict) and index.get("metadata"):
            rels = sorted(index["metadata"].values())
        else:
            rels = [L.HINT_FILES["destructive_safety"], L.HINT_FILES["conference"]]
        files = []
        for rel in rels:
            data = self.hint(rel)
            if data is None:  # an index never names a missing file (checked on load)
                continue
            files.append(f"{self.hints_dir}/{rel}")
            for key, hint in data.get("tools", {}).items():
                out[key] = (f"{self.hints_dir}/{rel}", hint)
        return (files, out) if files else None

    # -- constructors ----------------------------------------------------------------------------------
    @classmethod
    def from_document(cls, doc: dict[str, Any], origin: str) -> Release:
        """Wrap a parsed catalog: the cf single-file shape, the reassembled e81 shape (``version,
        source_hash, surface_hash?, catalog, tools``), an e81 envelope without tools, or a ``dws schema
        --all`` output (e81: products with full leaves + catalog_hash/surface_hash; cf: tool summaries)."""
        return _from_document(doc, origin)


def _from_document(doc: Any, origin: str) -> Release:
    if not isinstance(doc, dict):
        raise DwsInputError(origin, "$", f"expected a JSON object, got {type(doc).__name__}")
    if doc.get("kind") == "schema" or ("products" in doc and "catalog" not in doc):
        return _from_schema_all(doc, origin)
    if "tools" in doc:
        check("catalog-cf", doc, origin)
        check_products(doc["catalog"], origin, ("catalog",))
        generation = "e81" if any("field_provenance" in t for t in doc["tools"].values()) else "cf"
        return Release("file", generation, None, origin, doc)
    check("catalog-envelope", doc, origin)
    check_products(doc["catalog"], origin, ("catalog",))
    full = {**doc, "tools": {}}
    return Release("file", "e81", None, origin, full)


def _from_schema_all(doc: dict[str, Any], origin: str) -> Release:
    check("schema-all", doc, origin)
    tools: dict[str, dict[str, Any]] = {}
    full = True
    for i, product in enumerate(doc["products"]):
        for j, leaf in enumerate(product.get("tools", [])):
            key = leaf["canonical_path"]
            if key in tools:
                raise DwsInputError(origin, jpath("products", i, "tools", j, "canonical_path"),
                                    f"duplicate canonical path {key!r}")
            if "parameters" not in leaf:
                full = False
            tools[key] = leaf
    if full:
        for i, product in enumerate(doc["products"]):
            for j, leaf in enumerate(product.get("tools", [])):
                check("tool", leaf, origin, prefix=("products", i, "tools", j))
    catalog = {k: v for k, v in doc.items() if k not in ("catalog_hash", "surface_hash")}
    reassembled = {"version": doc.get("version"), "source_hash": doc.get("catalog_hash"), "catalog": catalog,
                   "tools": tools}
    if doc.get("surface_hash"):
        reassembled["surface_hash"] = doc["surface_hash"]
    return Release("file", "e81" if full else "cf", None, origin, reassembled, full_leaves=full)


def check_products(catalog: dict[str, Any], where: str, prefix: tuple[Any, ...]) -> None:
    seen: set[str] = set()
    for i, product in enumerate(catalog["products"]):
        if product["id"] in seen:
            raise DwsInputError(where, jpath(*prefix, "products", i, "id"), f"duplicate product id {product['id']!r}")
        seen.add(product["id"])
