"""Confirmation exercised (D2 §5 "所有 destructive 工具强制提升为 risk:high 和 confirmation:user_required，Agent 不能
自行确认"): a tool the binary's schema marks user-confirmed, run WITHOUT ``--yes`` and WITHOUT ``--dry-run``, sends
no write and ends with a typed confirmation-required outcome: never a prompt that blocks, never a write.

Judged by effect: the run's backend requests (no write tool, not the tool's own interface), its exit code and its
typed ``error.reason`` (one of the contract profile's ``confirmation_reasons``). A run refused for another reason
before any request (a synthetic value the tool rejects) did not reach the confirmation: that tool is not judged.
"""

from __future__ import annotations

from typing import Any

from pytest_dws.core.errors import Finding, NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.profile import active_profile
from pytest_dws.observe.binary.argv import required_args
from pytest_dws.observe.binary.plans import tool_kind
from pytest_dws.observe.binary.views import bin_schema, primary_path, schema_subjects, subject_list, writes_of
from pytest_dws.observe.binary.worlds import executed
from pytest_dws.observe.calls import Call, run_one


def user_confirmed(leaf: dict[str, Any]) -> bool:
    """The tool needs the user's own confirmation (D2 §5): user_required, or destructive (always user_required)."""
    return leaf.get("confirmation") == "user_required" or leaf.get("effect") == "destructive"


def unconfirmed_call(leaf: dict[str, Any]) -> Call:
    """The tool's execution with what its schema requires, without --yes and without --dry-run."""
    return executed(*primary_path(leaf).split(), *required_args(leaf), tool=leaf)


tool_kind("confirm")(lambda leaf, sampled: [unconfirmed_call(leaf)] if user_confirmed(leaf) else [])


def subjects(predicate: Any) -> Any:
    """Per-tool subjects of the binary's schema that ``predicate`` selects (every one: the calls are cheap), as
    ``bin:<tool>``: apart from the same gate's DATA part, whose subjects are the catalog's tools."""

    def listed(ctx: GateContext) -> Any:
        found = schema_subjects(ctx, predicate, cheap=True)
        return subject_list(["bin:" + k for k in found], ["bin:" + k for k in found.universe])

    return listed


def judge_unconfirmed(ctx: GateContext, key: str) -> None:
    """The unconfirmed run of tool ``key`` wrote nothing, did not block, and ended confirmation-required."""
    key = key.removeprefix("bin:")
    leaf = bin_schema(ctx).tools[key]
    inv = run_one_unchecked(ctx, unconfirmed_call(leaf))
    path = primary_path(leaf)
    what = f"`dws {path}` without --yes or --dry-run (confirmation {leaf.get('confirmation')!r}, effect " \
           f"{leaf.get('effect')!r})"
    if inv.timed_out:
        raise Finding(f"{what}: blocked until killed (a prompt nobody can answer: the Agent cannot confirm for the "
                      f"user, and a blocking prompt is no typed outcome)\n{inv.describe()}", outcome="timed_out")
    inv.check()
    rpc = (leaf.get("interface_ref") or {}).get("rpc_name")
    wrote = sorted({f"{r.product}/{r.tool}" for r in writes_of(inv)} | {f"{r.product}/{r.tool}" for r in inv.calls()
                                                                     if rpc and r.tool == rpc})
    reasons = tuple(active_profile(ctx).cli.get("confirmation_reasons") or ("confirmation_required",))
    reason = (inv.error or {}).get("reason")
    if wrote or inv.exit_code == 0:
        raise Finding(f"{what}: ran without the user's confirmation: exit {inv.exit_code}, writes sent: "
                      f"{', '.join(wrote) or 'none'}\n{inv.describe()}", exit=inv.exit_code,
                      writes=",".join(wrote) or "none")
    if reason in reasons:
        return
    if not inv.calls() and reason:
        raise NotApplicable(f"{path}: refused before the confirmation was reached (reason {reason!r}): the "
                            "synthetic run does not exercise it")
    raise Finding(f"{what}: no typed confirmation-required outcome (.error.reason {reason!r}, expected one of "
                  f"{list(reasons)}; exit {inv.exit_code})\n{inv.describe()}", reason=reason or "absent",
                  exit=inv.exit_code)


def run_one_unchecked(ctx: GateContext, call: Call) -> Any:
    """The memoised invocation of ``call`` without raising for a hang (a blocking prompt is this judge's own
    finding, not a generic target failure)."""
    from pytest_dws.observe.calls import run_calls

    return run_calls(ctx, [call])[call]


__all__ = ["judge_unconfirmed", "run_one", "subjects", "unconfirmed_call", "user_confirmed"]
