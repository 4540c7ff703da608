"""Loading a release from a source tree (layout detected) and/or one catalog file.

Every file is read once, parsed once and checked against its JSON Schema; big catalog files skip the
duplicate-key hook (their tool maps are checked by counting, see :func:`_check_unique_tools`). Only the
artifacts :mod:`pytest_dws.inputs.catalog.layout` names are read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError, NoCatalog, NotApplicable
from pytest_dws.inputs.catalog import layout as L
from pytest_dws.inputs.catalog.jsonio import count_key, display, jpath, load, parse, read_bytes
from pytest_dws.inputs.catalog.release import Artifact, Release, check_products
from pytest_dws.inputs.catalog.validate import check


def load_release(source: Path | None = None, catalog: Path | None = None) -> Release:
    """The release of a source tree (layout detected) and/or one catalog file (which then replaces the
    tree's catalog). Raises NotApplicable when the tree has no catalog and none is given."""
    if source is None and catalog is None:
        raise NotApplicable("no catalog configured (--dws-source TREE or --dws-catalog FILE)",
                            wants="a catalog (--dws-source or --dws-catalog)")
    return _Loader(source, catalog).load()


class _Loader:
    def __init__(self, source: Path | None, catalog: Path | None) -> None:
        self.root = source
        self.catalog_file = catalog
        self.files: dict[str, Artifact] = {}
        self.floats = False  # whether any catalog file holds a float token (R1.7 re-serialisation needs it)

    def _float(self, token: str) -> float:
        """``parse_float`` hook of the catalog files: called only for float tokens, so free without any."""
        self.floats = True
        return float(token)

    def read(self, path: Path, schema: str | None, *, duplicates: bool | None = None) -> Artifact:
        raw, data = load(path, root=self.root, check_duplicates=duplicates)
        name = display(path, self.root)
        if schema is not None:
            check(schema, data, name)
        art = Artifact(name, raw, data)
        self.files[name] = art
        return art

    def load(self) -> Release:
        layout = L.detect(self.root) if self.root is not None else None
        if self.catalog_file is not None:
            release = self.load_catalog_file(self.catalog_file)
            if layout is not None:
                release.layout = layout
        elif layout == "cf":
            release = self.load_cf_catalog(self.root / L.CF_CATALOG)  # type: ignore[operator]
        elif layout == "e81":
            release = self.load_e81_catalog(self.root / L.E81_CATALOG)  # type: ignore[operator]
        else:
            raise NoCatalog(f"no committed catalog in {self.root} (expected {L.CF_CATALOG} or {L.E81_CATALOG}): "
                            "the tree assembles its catalog at build time; --dws-cli judges the one its binary embeds")
        release.root = self.root
        if layout is not None:
            release.layout = layout
            self.load_artifacts(release, layout)
        release.files = self.files
        release.floats = self.floats
        return release

    # -- catalogs -----------------------------------------------------------------------------------
    def load_catalog_file(self, path: Path) -> Release:
        raw = read_bytes(path, root=self.root)
        name = display(path, self.root)
        doc = parse(raw, name, check_duplicates=False, parse_float=self._float)  # tool keys: see _check_unique_tools
        if not isinstance(doc, dict):
            raise DwsInputError(name, "$", f"expected a JSON object, got {type(doc).__name__}")
        if "tools" in doc and "catalog" in doc:
            return self._cf(path, raw, doc)
        if "catalog" in doc:
            return self.load_e81_catalog(path, raw=raw, doc=doc)
        self.files[name] = Artifact(name, raw, doc)
        release = Release.from_document(doc, name)
        release.catalog_files = [name]
        return release

    def load_cf_catalog(self, path: Path) -> Release:
        raw = read_bytes(path, root=self.root)
        return self._cf(path, raw, parse(raw, display(path, self.root), check_duplicates=False,
                                         parse_float=self._float))

    def _cf(self, path: Path, raw: bytes, doc: Any) -> Release:
        name = display(path, self.root)
        if not isinstance(doc, dict):
            raise DwsInputError(name, "$", f"expected a JSON object, got {type(doc).__name__}")
        check("catalog-cf", doc, name)
        check_products(doc["catalog"], name, ("catalog",))
        summaries = sum(len(p.get("tools", [])) for p in doc["catalog"]["products"])
        _check_unique_tools(raw, name, _canonical_members(doc["tools"]) + summaries, doc["tools"])
        self.files[name] = Artifact(name, raw, doc)
        generation = "e81" if any("field_provenance" in t for t in doc["tools"].values()) else "cf"
        return Release("file", generation, None, name, doc, catalog_files=[name])

    def load_e81_catalog(self, path: Path, *, raw: bytes | None = None, doc: Any = None) -> Release:
        name = display(path, self.root)
        if raw is None:
            raw = read_bytes(path, root=self.root)
            doc = parse(raw, name, check_duplicates=False, parse_float=self._float)
        if not isinstance(doc, dict):
            raise DwsInputError(name, "$", f"expected a JSON object, got {type(doc).__name__}")
        check("catalog-envelope", doc, name)
        check_products(doc["catalog"], name, ("catalog",))
        _check_unique_tools(raw, name, sum(len(p.get("tools", [])) for p in doc["catalog"]["products"]))
        self.files[name] = Artifact(name, raw, doc)
        shards_dir = path.parent / "tools"
        shard_paths = L.json_files(shards_dir) if shards_dir.is_dir() else []
        if not shard_paths:
            raise DwsInputError(display(shards_dir, self.root), "$",
                                "expected the catalog shards tools/<product>.json beside catalog.json")
        tools: dict[str, Any] = {}
        names = [name]
        for shard_path in shard_paths:
            shard_raw, shard = load(shard_path, root=self.root, check_duplicates=False, parse_float=self._float)
            shard_name = display(shard_path, self.root)
            check("catalog-shard", shard, shard_name)
            _check_unique_tools(shard_raw, shard_name, _canonical_members(shard["tools"]), shard["tools"])
            for key in shard["tools"]:
                if key in tools:
                    raise DwsInputError(shard_name, jpath("tools", key),
                                        "duplicate canonical path: already defined by another shard")
            tools.update(shard["tools"])
            self.files[shard_name] = Artifact(shard_name, shard_raw, shard)
            names.append(shard_name)
        full = {"version": doc["version"], "source_hash": doc["source_hash"], "catalog": doc["catalog"],
                "tools": tools}
        if doc.get("surface_hash"):
            full["surface_hash"] = doc["surface_hash"]
        return Release("file", "e81", None, name, full, catalog_files=names)

    # -- artifacts ----------------------------------------------------------------------------------
    def load_artifacts(self, release: Release, layout: str) -> None:
        root = self.root
        assert root is not None
        release.surface, release.surface_name = self.load_surface(layout)
        for key, rel in L.COMMON.items():
            path = root / rel
            if path.exists():
                schema = {"mcp_metadata": "mcp-metadata", "service_review": "mcp-service-review",
                          "agent_index": "agent-index", "agent_audit": "agent-audit", "bindings": "bindings",
                          "exclusions": "exclusions"}[key]
                art = self.read(path, schema)
                if key == "bindings":
                    version = art.data["version"]
                    if version not in (2, 3):
                        raise DwsInputError(art.name, "$.version", f"unsupported bindings version {version!r} "
                                                                   "(expected 2 or 3)")
                    check(f"bindings-v{version}", art.data, art.name)
                release.artifacts[key] = art
        for path in L.json_files(root / L.AGENT_DIR):
            if path.name != "index.json":
                self.read(path, "agent-product")
        hints_rel = L.HINTS[layout]
        release.hints_dir = hints_rel
        hints_root = root / hints_rel
        for path in L.json_files(hints_root):
            rel = path.relative_to(hints_root).as_posix()
            release.hints[rel] = self.read(path, L.HINT_SCHEMAS.get(rel, "hint-tools"))
        index = release.hints.get(L.HINT_FILES["hint_index"])
        if index is not None:
            for table in ("metadata", "selection"):
                for product, name in sorted((index.data.get(table) or {}).items()):
                    if name not in release.hints:
                        raise DwsInputError(index.name, jpath(table, product), f"names {name}, which does not exist")

    def load_surface(self, layout: str) -> tuple[list[dict[str, Any]] | None, str]:
        root = self.root
        assert root is not None
        entries: list[dict[str, Any]] = []
        seen: dict[str, str] = {}

        def add(product: str, tool: dict[str, Any], where: str, *path: Any) -> None:
            key = tool["canonical_path"]
            if key in seen:
                raise DwsInputError(where, jpath(*path), f"duplicate canonical path {key!r} (also in {seen[key]})")
            seen[key] = where
            entries.append({"product": product, "canonical_path": key, "cli_path": tool["cli_path"],
                            "aliases": tool.get("aliases") or [], "source_product_id": tool.get("source_product_id"),
                            "visibility": tool.get("visibility")})

        if layout == "cf":
            path = root / L.CF_SURFACE
            if not path.exists():
                return None, L.CF_SURFACE
            art = self.read(path, "surface")
            for i, product in enumerate(art.data["products"]):
                for j, tool in enumerate(product["tools"]):
                    add(product["id"], tool, art.name, "products", i, "tools", j, "canonical_path")
            return entries, art.name
        directory = root / L.E81_REGISTRY_DIR
        if not directory.exists():
            return None, L.surface_path("e81")
        if not directory.is_dir():
            raise DwsInputError(display(directory, root), "$", "expected the command registry directory")
        header = directory / "registry.json"
        if header.exists():
            self.read(header, "registry")
        product_ids: dict[str, str] = {}
        for path in L.json_files(directory / "products"):
            art = self.read(path, "registry-product")
            pid = art.data["id"]
            if pid in product_ids:
                raise DwsInputError(art.name, "$.id", f"duplicate product id {pid!r} (also {product_ids[pid]})")
            product_ids[pid] = art.name
            for j, tool in enumerate(art.data["tools"]):
                add(pid, tool, art.name, "tools", j, "canonical_path")
        return entries, f"{L.E81_REGISTRY_DIR}/"


def _canonical_members(tools: dict[str, Any]) -> int:
    """``"canonical_path"`` members a tool map accounts for: each leaf's own, plus its e81 provenance entry."""
    return len(tools) + sum(1 for t in tools.values() if "canonical_path" in (t.get("field_provenance") or {}))


def _check_unique_tools(raw: bytes, name: str, expected: int, tools: dict[str, Any] | None = None) -> None:
    """Big catalog files are parsed without a duplicate-key hook; a duplicated tool key shows up as one more
    ``"canonical_path"`` in the text than the parsed document accounts for. Then re-parse with the hook to
    name the key (a count that differs for another reason costs one slow parse, never a false error)."""
    if count_key(raw, "canonical_path") == expected:
        return
    try:
        parse(raw, name, check_duplicates=True)
    except DwsInputError as exc:
        key = exc.detail.split("'")[1] if exc.detail.startswith("duplicate JSON object key '") else None
        if tools is not None and key in tools:
            raise DwsInputError(name, jpath("tools", key), f"duplicate canonical path: the tools map repeats this "
                                                           f"key{exc.detail.rsplit(key + chr(39), 1)[-1]}") from None
        raise


def load_catalog(source: str | Path | dict[str, Any] | bytes, origin: str | None = None) -> Any:
    """The :class:`~pytest_dws.inputs.catalog.Release` of any catalog input, validated like the contract run does.

    ``source`` is a source-tree directory (cf or e81 layout detected), a catalog file (cf single file, e81
    ``catalog.json`` with its ``tools/`` shards, or a saved ``dws schema --all``), the text/bytes of a
    ``schema --all`` output, or a parsed document (dict). ``origin`` names a document in messages. Malformed
    input raises :class:`~pytest_dws.core.errors.DwsInputError`: one line naming the file and the JSON path.

    Example::

        release = load_catalog("build/schema-all.json")
        release = load_catalog(dws_run("schema", "--all").stdout_json, "my dws schema --all")
        leaf = release.tools["chat.search_messages"]
    """
    if isinstance(source, bytes) or (isinstance(source, str) and source.lstrip().startswith(("{", "["))):
        origin = origin or "<schema --all output>"
        try:
            source = json.loads(source)
        except ValueError as exc:
            raise DwsInputError(origin, "$", f"not valid JSON: {exc}") from None
    if isinstance(source, dict):
        return Release.from_document(source, origin or "<document>")
    if not isinstance(source, (str, Path)):
        raise DwsInputError(origin or "load_catalog", "", f"expected a path or a document, got {type(source).__name__}")
    path = Path(source)
    if not path.exists():
        raise DwsInputError(path, "", "no such file or directory")
    return load_release(source=path) if path.is_dir() else load_release(catalog=path)
