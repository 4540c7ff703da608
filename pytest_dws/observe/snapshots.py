"""The reviewed agent-contract snapshot of a release, stored and compared by syrupy.

Why syrupy: its users already know the workflow: a difference fails, ``--snapshot-update`` writes the new
snapshot for review, an unused snapshot is reported in syrupy's summary. The snapshot lives beside the
release files (under the folder of ``--dws-expect``:
``fixtures/releases/81f67c8d/__snapshots__/SCH-CONTRACT-SNAPSHOT.json``), not under a test module, so the
extension names that folder. On a difference the failure is our own per-tool
diff (:mod:`pytest_dws.observe.contract_diff`), readable where syrupy's would print two 20 MB documents.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension
from syrupy.location import PyTestLocation

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext

NAME = "SCH-CONTRACT-SNAPSHOT"  # the gate id: the file is found by one grep, and syrupy relates it to the item


class _Stored(str):
    """The stored snapshot's text, handed to syrupy when the contract equals it (no re-serialisation)."""


class ContractExtension(JSONSnapshotExtension):
    """One JSON file named :data:`NAME` in :attr:`directory` (bound per run by :func:`assert_matches`)."""

    directory: Path = Path()

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        # A folder of its own: syrupy treats every other file where it looks as an unknown snapshot (and
        # --snapshot-update deletes it), and the release folder holds expectations and baselines.
        return str(cls.directory / "__snapshots__")

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        return cls.dirname(test_location=test_location)

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: Any = 0) -> str:
        return NAME

    def serialize(self, data: Any, **_: Any) -> str:
        """Plain JSON data, byte for byte what syrupy's recursive filter writes (sorted keys, indent 2) at a
        fraction of its cost; a contract already found equal to the stored one is its stored text."""
        if isinstance(data, _Stored):
            return str(data)
        return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"

    @classmethod
    def matches_test_location(cls, *, test_location: PyTestLocation, snapshot_location: str) -> bool:
        return Path(snapshot_location).parent == Path(cls.dirname(test_location=test_location))



def release_dir(ctx: GateContext) -> Path:
    expect = getattr(ctx.settings, "expect", None)
    if expect is None:
        raise NotApplicable("no release folder for the reviewed snapshot: give --dws-expect "
                            "releases/<commit>/expectations.toml (the snapshot lives beside it)",
                            wants="a release folder (--dws-expect)")
    return Path(expect).resolve().parent


def assert_matches(ctx: GateContext, contract: dict[str, Any]) -> None:
    """``contract`` equals the reviewed snapshot; with ``--snapshot-update`` the snapshot is (re)written."""
    item = getattr(ctx, "item", None)
    session = getattr(getattr(item, "config", None), "_syrupy", None)
    if item is None or session is None:
        raise NotApplicable("the syrupy plugin is not active in this run (-p no:syrupy?)", wants="the syrupy plugin")
    folder = release_dir(ctx)
    path = folder / "__snapshots__" / f"{NAME}.json"
    update = bool(item.config.option.update_snapshots)
    if not path.is_file() and not update:
        raise NotApplicable(f"no reviewed snapshot {path}: run once with --snapshot-update, review it, commit it",
                            wants="a reviewed contract snapshot")
    text = path.read_text(encoding="utf-8") if path.is_file() else None
    stored = json.loads(text) if text is not None else None
    if stored is not None:
        # A part this run cannot observe (errors, help and aliases need a binary) keeps its reviewed value: it
        # is not judged here (said in the report), and --snapshot-update does not erase it.
        unseen = sorted(set(stored) - set(contract))
        if unseen:
            ctx.section("snapshot", {"parts_not_judged": unseen, "path": str(path)})
        contract = {**{k: stored[k] for k in unseen}, **contract}
    extension = type("ContractSnapshot", (ContractExtension,), {"directory": folder})
    snapshot = SnapshotAssertion(session=session, extension_class=extension, test_location=PyTestLocation(item),
                                 update_snapshots=update)
    from pytest_dws.observe.contract_diff import counts, diff, render_text

    changes = diff(stored or {}, contract)
    ctx.section("contract_diff", {"snapshot": str(path), "counts": counts(changes), "changes": changes})
    same = text is not None and stored == contract and not update
    if snapshot == (_Stored(text) if same else contract) or update:
        return
    raise AssertionError(render_text(changes, f"snapshot {path}", "this build").rstrip()
                         + "\n(review the change; `pytest --dws-contract ... --snapshot-update` writes the new one)")
