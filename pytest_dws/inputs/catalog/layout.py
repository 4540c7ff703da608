"""Where each artifact lives in the two upstream layouts (docs/contract.md §1E preamble, R1.9, R2).

- ``cf`` (cf8cf95): one ``internal/cli/schema_catalog.json``, the reviewed surface
  ``internal/cli/schema_command_surface.json``, hints under ``skills/mono/schema-hints/``.
- ``e81`` (81f67c8d): the envelope ``internal/cli/schema_catalog/catalog.json`` plus one shard per product in
  ``schema_catalog/tools/``, the command registry ``internal/cli/schema_command_registry/``, hints under
  ``internal/cli/schema_hints/`` (with an ``index.json`` naming the authoritative hint files).

Only the files named here are read: a real source tree holds other JSON (test data) that is none of ours.
"""

from __future__ import annotations

from pathlib import Path

from pytest_dws.core.errors import DwsInputError

CLI = "internal/cli"
CF_CATALOG = f"{CLI}/schema_catalog.json"
E81_CATALOG_DIR = f"{CLI}/schema_catalog"
E81_CATALOG = f"{E81_CATALOG_DIR}/catalog.json"
E81_SHARDS = f"{E81_CATALOG_DIR}/tools"
CF_SURFACE = f"{CLI}/schema_command_surface.json"
E81_REGISTRY_DIR = f"{CLI}/schema_command_registry"
HINTS = {"cf": "skills/mono/schema-hints", "e81": f"{CLI}/schema_hints"}

#: artifact key -> path relative to the tree (same in both layouts unless noted in SURFACE/HINTS).
COMMON = {
    "mcp_metadata": f"{CLI}/schema_mcp_metadata.json",
    "service_review": f"{CLI}/schema_mcp_service_review.json",
    "agent_index": f"{CLI}/schema_agent_metadata/index.json",
    "agent_audit": f"{CLI}/schema_agent_metadata_audit.json",
    "bindings": f"{CLI}/schema_parameter_bindings.json",
    "exclusions": f"{CLI}/schema_command_exclusions.json",
}
AGENT_DIR = f"{CLI}/schema_agent_metadata"

#: hint key -> file name inside the hints directory.
HINT_FILES = {
    "selection_review": "selection-review.json",
    "reference_review": "reference-review.json",
    "destructive_safety": "destructive-safety.json",
    "conference": "conference.json",
    "sibling_disambiguation": "sibling-disambiguation.json",
    "hint_index": "index.json",
}

#: schema name for a file inside the hints directory.
HINT_SCHEMAS = {"reference-review.json": "reference-review", "index.json": "hint-index"}


def detect(root: Path) -> str | None:
    """``"cf"``, ``"e81"``, or None when the tree holds no catalog; an ambiguous tree is an input error."""
    cf = root / CF_CATALOG
    e81 = root / E81_CATALOG_DIR
    if cf.exists() and e81.exists():
        raise DwsInputError(root, "", f"both {CF_CATALOG} (cf layout) and {E81_CATALOG_DIR}/ (e81 layout) exist; "
                                      "remove the stale one")
    if cf.exists():
        return "cf"
    if e81.exists():
        if not e81.is_dir():
            raise DwsInputError(root / E81_CATALOG_DIR, "$", "expected a directory holding catalog.json and tools/")
        return "e81"
    return None


def surface_path(layout: str) -> str:
    """The reviewed surface of a layout (a file at cf, a directory at e81)."""
    return CF_SURFACE if layout == "cf" else f"{E81_REGISTRY_DIR}/"


def json_files(directory: Path) -> list[Path]:
    """``*.json`` files under ``directory`` (recursively), sorted; directories named ``*.json`` included so
    that the reader reports them."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.rglob("*.json") if not p.name.startswith("."))
