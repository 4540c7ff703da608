"""Confirmation exercised (D2 §5 "所有 destructive 工具强制提升为 risk:high 和 confirmation:user_required，Agent 不能
自行确认"): a tool the binary's schema marks user-confirmed, run WITHOUT the confirmation flag (``--yes``) and
WITHOUT ``--dry-run``, sends no write.

Judged by the write, not by the refusal's shape (RULINGS §1): how a release refuses is its own choice: a prompt that
reads end-of-input and cancels (exit 0), a prompt that fails on end-of-input (exit 5), a typed error (exit 3, a
confirmation reason), a validation error before any request. The facts of each run are its exit code, its reading
(:func:`pytest_dws.core.outcome.reading`), its typed error reason and the writes it sent. The strict reading
``typed-refusal`` (``--dws-strict``) adds the mechanism: a non-zero exit with one of the profile's
``confirmation_reasons``.

Whether the refusal was the confirmation's is told by a counterfactual run, the same argv WITH the confirmation
flag: when that run is refused the same way before any request, the input never reached the confirmation (a
synthetic value the tool rejects, a missing one-of), so the tool is not judged, with the reason. A replayed
recording that lacks the counterfactual leaves the default reading of RULINGS §1: a run that wrote nothing refused.
"""

from __future__ import annotations

from typing import Any

from pytest_dws.core.errors import Finding, NotApplicable, NotRecorded
from pytest_dws.core.outcome import reading
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.profile import active_profile
from pytest_dws.observe.binary.argv import required_args
from pytest_dws.observe.binary.views import bin_schema, every, primary_path, schema_subjects, subject_list, writes_of
from pytest_dws.observe.binary.worlds import executed
from pytest_dws.observe.calls import Call, run_calls


def user_confirmed(leaf: dict[str, Any]) -> bool:
    """The tool needs the user's own confirmation (D2 §5): user_required, or destructive (always user_required)."""
    return leaf.get("confirmation") == "user_required" or leaf.get("effect") == "destructive"


def yes_flag(ctx: GateContext | None) -> str:
    """The confirmation flag of the contract profile (``[cli] yes``, `--yes` for the real `dws`)."""
    return str(active_profile(ctx).cli.get("yes") or "--yes")


def unconfirmed_call(leaf: dict[str, Any], yes: str = "--yes") -> Call:
    """The tool's execution with what its schema requires, never with the confirmation flag (whatever the schema
    lists as required: a schema may call `--yes` required) and without --dry-run."""
    return executed(*primary_path(leaf).split(), *required_args(leaf, skip=(yes.lstrip("-"),)), tool=leaf)


def confirmed_call(leaf: dict[str, Any], yes: str = "--yes") -> Call:
    """The counterfactual: the same run with the confirmation flag, which tells whether the refusal of the
    unconfirmed run was the confirmation's."""
    plain = unconfirmed_call(leaf, yes)
    return executed(*plain.args, yes, tool=leaf)


def confirm_calls(ctx: GateContext) -> list[Call]:
    """The planned runs of the confirmation gates: both runs of every user-confirmed tool (of this shard)."""
    view, yes = bin_schema(ctx), yes_flag(ctx)
    leaves = [view.tools[k] for k in every(ctx, view.tools) if user_confirmed(view.tools[k])]
    return [c for leaf in leaves for c in (unconfirmed_call(leaf, yes), confirmed_call(leaf, yes))]


def subjects(predicate: Any) -> Any:
    """Per-tool subjects of the binary's schema that ``predicate`` selects (every one: the calls are cheap), as
    ``bin:<tool>``: apart from the same gate's DATA part, whose subjects are the catalog's tools."""

    def listed(ctx: GateContext) -> Any:
        found = schema_subjects(ctx, predicate, cheap=True)
        return subject_list(["bin:" + k for k in found], ["bin:" + k for k in found.universe])

    return listed


def refusal_facts(ctx: GateContext, inv: Any, leaf: dict[str, Any]) -> dict[str, Any]:
    """The typed facts of an unconfirmed run (RULINGS §1): exit code, reading, error reason, the writes sent (a
    write tool, or the tool's own interface), how it refused."""
    rpc = (leaf.get("interface_ref") or {}).get("rpc_name")
    wrote = sorted({f"{r.product}/{r.tool}" for r in writes_of(inv)}
                   | {f"{r.product}/{r.tool}" for r in inv.calls() if rpc and r.tool == rpc})
    reason = (inv.error or {}).get("reason")
    reasons = tuple(active_profile(ctx).cli.get("confirmation_reasons") or ("confirmation_required",))
    how = ("typed" if reason in reasons and inv.exit_code != 0 else "cancelled" if inv.exit_code == 0
           else "refused" if not inv.calls() else "refused_after_reads")
    return {"exit": inv.exit_code, "outcome": reading(inv), "reason": reason or "absent",
            "writes": ",".join(wrote) or "none", "refusal": how}


def judge_unconfirmed(ctx: GateContext, key: str) -> None:
    """The unconfirmed run of tool ``key`` wrote nothing and did not block (RULINGS §1); under ``typed-refusal`` it
    also ended non-zero with a typed confirmation reason."""
    key = key.removeprefix("bin:")
    leaf = bin_schema(ctx).tools[key]
    yes = yes_flag(ctx)
    inv = run_calls(ctx, [unconfirmed_call(leaf, yes)])[unconfirmed_call(leaf, yes)]
    path = primary_path(leaf)
    what = f"`dws {path}` without {yes} or --dry-run (confirmation {leaf.get('confirmation')!r}, effect " \
           f"{leaf.get('effect')!r})"
    if inv.timed_out:
        raise Finding(f"{what}: blocked until killed (a prompt nobody can answer: the Agent cannot confirm for the "
                      f"user, and a blocking prompt is no refusal)\n{inv.describe()}", outcome="timed_out")
    inv.check()
    facts = refusal_facts(ctx, inv, leaf)
    if facts["writes"] != "none":
        raise Finding(f"{what}: sent its write without the user's confirmation: exit {inv.exit_code}, writes sent: "
                      f"{facts['writes']}\n{inv.describe()}", **facts)
    if "typed-refusal" in ctx.settings.strict and facts["refusal"] != "typed":
        raise Finding(f"{what}: wrote nothing but refused with no typed confirmation reason (strict reading "
                      f"typed-refusal: exit {inv.exit_code}, reason {facts['reason']!r})\n{inv.describe()}", **facts)
    if facts["refusal"] == "typed":
        return
    _reached_the_confirmation(ctx, leaf, inv, yes, path)


def _reached_the_confirmation(ctx: GateContext, leaf: dict[str, Any], inv: Any, yes: str, path: str) -> None:
    """Not judged when the same run WITH the confirmation flag is refused the same way before any request: the
    input never reached the confirmation (the refusal is not the confirmation's)."""
    try:
        confirmed = run_calls(ctx, [confirmed_call(leaf, yes)])[confirmed_call(leaf, yes)]
        same = (confirmed.problem is None and not confirmed.calls() and confirmed.exit_code == inv.exit_code
                and (confirmed.error or {}).get("reason") == (inv.error or {}).get("reason"))
    except NotRecorded:  # an older recording: RULINGS §1's default reading, a run that wrote nothing refused
        return
    if same:
        raise NotApplicable(f"{path}: the confirmation is not reached: the same run with {yes} ends the same way "
                            f"(exit {confirmed.exit_code}, reason {(confirmed.error or {}).get('reason')!r}, no "
                            "request), so the synthetic input does not exercise the confirmation",
                            wants="a run that reaches the confirmation")

__all__ = ["confirm_calls", "judge_unconfirmed", "subjects", "unconfirmed_call", "user_confirmed"]
