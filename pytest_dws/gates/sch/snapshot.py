"""SCH-CONTRACT-SNAPSHOT: the build's agent contract is the release's reviewed snapshot (D2 §8, §10)."""

from __future__ import annotations

from pytest_dws.core.protocols import GateContext
from pytest_dws.observe import agent_contract, snapshots
from pytest_dws.registry import Access, gate


@gate("SCH-CONTRACT-SNAPSHOT", doc="D2 §8, §10 (command surface changes only on purpose, under review)",
      access={Access.DATA, Access.BIN})
def contract_snapshot(ctx: GateContext) -> None:
    """The agent contract (tools, safety, parameters, typed errors, help flags) equals the reviewed snapshot."""
    snapshots.assert_matches(ctx, agent_contract.of_context(ctx))
