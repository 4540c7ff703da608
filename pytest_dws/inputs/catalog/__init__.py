"""The catalog/data layer: load a release (source tree in the cf or e81 layout, one catalog file, or a parsed
``dws schema --all`` document), validate every artifact against its JSON Schema, recompute its hashes.

Public API (used by the DATA gates and by the binary/schema helpers)::

    from pytest_dws.inputs.catalog import Release, load_release

    release = load_release(source=Path("dws-81f67c8d"), catalog=None)
    release.layout, release.generation      # "e81", "e81"
    release.tools["chat.recall_message"]    # full leaf
    release.surface                          # [{canonical_path, cli_path, aliases, source_product_id, ...}]
    release.require("mcp_metadata")          # parsed artifact, or NotApplicable naming the missing file
    Release.from_document(json.loads(out), "dws schema --all")
"""

from pytest_dws.inputs.catalog.hashes import source_hash, surface_hash_cf, surface_hash_e81
from pytest_dws.inputs.catalog.jsonio import MAX_FILE_BYTES
from pytest_dws.inputs.catalog.loader import load_catalog, load_release
from pytest_dws.inputs.catalog.release import Artifact, Release

__all__ = [
    "MAX_FILE_BYTES",
    "Artifact",
    "Release",
    "load_catalog",
    "load_release",
    "source_hash",
    "surface_hash_cf",
    "surface_hash_e81",
]
