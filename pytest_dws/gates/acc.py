"""ACC: the acceptance criteria of D1 §7.4 / §10, each an aggregate of the runtime gates' judges.

ACC-INFRA replays the observed D1 §2.2 payload; the others re-judge the runs of TGT/ALI/ERR (shared, so they
cost no extra process) under the acceptance heading, listing every violation they find.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_dws.assertions import assert_error_classified, assert_name_never_in_id_args
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.runtime import Spec, aliases, classification, targets
from pytest_dws.registry import Access, gate
from pytest_dws.verdict import attribution
from pytest_dws.verdict.cases import Check

F = "ACC"
MCP = {Access.MCP}


@rt.provider(F)
def _runs(ctx: GateContext) -> Iterable[Spec]:
    yield rt.read_probe(ctx, "replay-d1-2-2")


@gate("ACC-INFRA", doc="D1 §7.4 acceptance 1, §10", access=MCP)
def infra(ctx: GateContext) -> None:
    """The observed MCP-internal failure (D1 §2.2 replay) is classified as infrastructure."""
    inv = rt.run(ctx, F, rt.read_probe(ctx, "replay-d1-2-2"))
    assert_error_classified(inv, exit_code=1, category="api", reason="backend_dependency_unavailable",
                            origin="mcp_gateway", stage="tool_metadata_lookup", retryable=True,
                            what="D1 §2.2 replay")
    classification.judge_reply_advice(ctx, "replay-d1-2-2")


@gate("ACC-TARGET-24", doc="D1 §7.4 acceptance 2, §10", access=MCP)
def target_24(ctx: GateContext) -> None:
    """The 24 target-type errors are gone: the TGT group/chat-query matrix and the name rule hold."""
    prof, c = rt.profile(ctx), rt.cast(ctx)
    checks: list[Check] = []
    for key in prof.matrix():
        cmd = prof.commands[key]
        for flag, kind in targets.target_cases(cmd):
            judge = targets.judge_stable if kind == "cid" else targets.judge_named
            checks.append((f"{key} {flag} <{kind}>", lambda cmd=cmd, flag=flag, judge=judge: judge(ctx, cmd, flag),
                           attribution.target_cause(prof, cmd, flag, kind)))
            run = targets.case_run(ctx, cmd, flag, kind)
            checks.append((f"{key} {flag} <{kind}> name rule", lambda run=run: assert_name_never_in_id_args(
                rt.run(ctx, "TGT", run), set(c.names), set(prof.stable_keys)),
                f"TGT-NAME-NEVER-IN-ID[{targets.name_rule_label(run)}]"))
    rt.collect(checks)


@gate("ACC-DRIFT-11", doc="D1 §7.4 acceptance 3, §5, §10", access=MCP)
def drift_11(ctx: GateContext) -> None:
    """Every D1 §5 compatibility spelling runs (exit 0), never an unknown flag or command."""
    spellings = [a for a in rt.profile(ctx).aliases if a.gate]
    rt.collect((a.label, lambda a=a: aliases.judge_accepted(ctx, a), a.gate) for a in spellings)


@gate("ACC-AUTH-1", doc="D1 §7.4 acceptance 4", access=MCP)
def auth_1(ctx: GateContext) -> None:
    """The misleading auth branch is not triggered: no misleading hint, no whoami, allowed auth advice only."""
    rt.collect([*((f"no misleading hint: {r}", check, f"ERR-NO-MISLEADING-HINT[{r}]")
                  for r, check in classification.misleading_hint_checks(ctx)),
                ("auth recovery", lambda: classification.judge_auth_recovery(ctx), "ERR-AUTH-RECOVERY")])


@gate("ACC-AMBIG-37", doc="D1 §6, §7.4 acceptance 5, §10", access=MCP)
def ambig_37(ctx: GateContext) -> None:
    """Same-name groups keep stopping safely, reads and writes: never the first candidate, zero business calls."""
    prof = rt.profile(ctx)
    rt.collect((k, lambda k=k: targets.judge_ambiguous(ctx, prof.commands[k]), f"TGT-MULTI-ZERO-CALLS[{k}]")
               for k in targets.ambiguity_commands(ctx))
