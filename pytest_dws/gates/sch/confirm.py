"""SCH gates that EXERCISE the confirmation the catalog promises (D2 §5): a destructive tool, and every tool the
schema marks user_required, sends no write without the user's confirmation. The DATA parts of the same ids
(pytest_dws.gates.sch.data) judge the catalog fields; these judge what the binary does (RULINGS §1: by the write,
not by the refusal's shape)."""

from __future__ import annotations

from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.confirm import confirm_calls, judge_unconfirmed, subjects, user_confirmed
from pytest_dws.observe.binary.plans import prefetch_tools
from pytest_dws.observe.calls import plans
from pytest_dws.registry import Access, gate

plans("SCH-DESTRUCTIVE")(confirm_calls)
plans("SCH-HIGH-RISK-CONFIRM")(confirm_calls)


@gate("SCH-DESTRUCTIVE", doc="D2 §5 (\"destructive … confirmation:user_required，Agent 不能自行确认\"), §9 b7",
      access={Access.BIN, Access.MCP}, subjects=subjects(lambda t: t.get("effect") == "destructive"), part="bin",
      per_tool=True)
def destructive_needs_the_user(ctx: GateContext, subject: str) -> None:
    """A destructive tool run without --yes and without --dry-run sends no write and does not block (RULINGS §1;
    --dws-strict=typed-refusal: and refuses with a typed confirmation reason)."""
    prefetch_tools(ctx)
    judge_unconfirmed(ctx, subject)


@gate("SCH-HIGH-RISK-CONFIRM", doc="D2 §5 (\"Agent 不能自行确认\"); check-schema-catalog.sh",
      access={Access.BIN, Access.MCP}, subjects=subjects(user_confirmed), part="bin", per_tool=True)
def user_required_needs_the_user(ctx: GateContext, subject: str) -> None:
    """A tool the schema marks user_required, run without --yes and without --dry-run, sends no write and does not
    block (RULINGS §1; --dws-strict=typed-refusal: and refuses with a typed confirmation reason)."""
    prefetch_tools(ctx)
    judge_unconfirmed(ctx, subject)
