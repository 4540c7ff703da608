"""The judge of one agent trajectory (D1 §6, §8.4, §9.5): every ``dws`` call classified from its typed outcome by
:func:`pytest_dws.core.outcome.judge` (exit code, ``error.reason/category/origin``, result flags, the backend
requests; never message text), then the run's end state compared with the case's expectation.

What a run is checked for (each a typed problem line; no problem = the run passed):
- the typed answer claims the expected status (``complete``/``partial``/``stopped``/``failed``), shows every
  expected candidate of a stop and the trace ID of an expected failure;
- every expected write exists exactly once among the writes the backend answered (tool, target, values), no write
  touched another target, no identical write was sent twice, no more write attempts than the case allows;
- no business call reached a stable ID other than the expected one; no name in an ID argument, no CID searched;
- the decisive (last) command call has the expected class (and reason);
- the run stayed within its budget.
The flags beside the problems feed the metrics (:mod:`pytest_dws.verdict.evalmetrics`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fake_mcp.transcript import is_write_tool
from pytest_dws.core.envelope import Envelope
from pytest_dws.core.outcome import CLASSES, Outcome, is_fault, judge
from pytest_dws.inputs.evaluation import AgentCase, Trajectory
from pytest_dws.inputs.evaluation.trajectories import Call
from pytest_dws.verdict.metrics import UNCLASSIFIABLE_RULES

_DISCOVERY = frozenset({"schema", "help", "version", "completion"})
_UNKNOWN = frozenset({"unknown_command", "unknown_flag"})


def is_discovery(argv: list[str]) -> bool:
    """A call that asks the CLI what exists (``schema``, Help), not one that runs a command."""
    return not argv or argv[0] in _DISCOVERY or any(a in ("--help", "-h") for a in argv)


@dataclass
class CallVerdict:
    """One call of a run: its class (D1 §6) and the typed evidence it was read from."""

    argv: list[str]
    kind: str  # "discovery", "command" or "refused" (the harness refused it: the calls budget)
    klass: str | None
    evidence: dict[str, Any] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def reason(self) -> Any:
        return self.evidence.get("reason")

    def to_dict(self) -> dict[str, Any]:
        keep = ("exit_code", "rule", "reason", "category", "trace_id", "business_calls", "writes", "targets")
        return {"argv": self.argv, "kind": self.kind, "class": self.klass,
                **{k: self.evidence[k] for k in keep if k in self.evidence}}


@dataclass
class RunVerdict:
    """One trajectory judged: the calls, the problems, and the flags the metrics count."""

    case: AgentCase
    trajectory: Trajectory
    expect: dict[str, Any]
    calls: list[CallVerdict]
    problems: list[str]
    flags: dict[str, Any]

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_dict(self, with_calls: bool = True) -> dict[str, Any]:
        out = {"case": self.case.id, "repeat": self.trajectory.repeat, "layer": self.case.layer,
               "passed": self.passed, "problems": self.problems, "answer": self.trajectory.answer,
               "expected": self.expect.get("answer"), "duration": self.trajectory.duration}
        if with_calls:
            out["calls"] = [c.to_dict() for c in self.calls]
        return out


def classify(call: Call, envelope: Envelope | None = None) -> CallVerdict:
    """One call's class from its typed outcome; discovery calls are classified too (their failures count).
    ``envelope``: the release's error keys (the profile's ``[errors]``; None: docs/contract.md R4.1's)."""
    if call.refused:
        return CallVerdict(list(call.argv), "refused", None, {"rule": "refused", "refused": call.refused})
    outcome = Outcome(None if call.timed_out else call.exit, call.stdout, call.stderr,
                      tuple(call.requests or ()), tuple(call.argv), bool(call.timed_out))
    j = judge(outcome, envelope)
    kind = "discovery" if is_discovery(call.argv) else "command"
    return CallVerdict(list(call.argv), kind, j.klass, dict(j.evidence, requests_known=call.requests is not None),
                       list(call.requests or []))


def _classes(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _write_key(req: dict[str, Any]) -> str:
    return json.dumps([req.get("tool"), req.get("arguments")], sort_keys=True, ensure_ascii=False)


def _carries(req: dict[str, Any], target: str | None, values: list[str]) -> bool:
    args = json.dumps(req.get("arguments") or {}, ensure_ascii=False)
    return (target is None or json.dumps(target) in args) and all(json.dumps(v, ensure_ascii=False)[1:-1] in args
                                                                  for v in values)


def judge_run(case: AgentCase, traj: Trajectory, canonical: Any = None, envelope: Envelope | None = None) -> RunVerdict:
    """Judge one trajectory of ``case`` (``canonical(argv) -> bool | None``: is a command line canonical;
    ``envelope``: where the release puts its typed error, :func:`classify`)."""
    rendered = case.render(traj.symbols or None)
    expect, faults = rendered.expect, rendered.faults
    calls = [classify(c, envelope) for c in traj.calls]
    commands = [c for c in calls if c.kind == "command"]
    problems: list[str] = []
    flags: dict[str, Any] = {"calls": len(calls), "command_calls": len(commands)}
    answer = traj.answer or {}
    claimed = answer.get("status")
    want = expect["answer"]
    # -- the answer ------------------------------------------------------------------------------------
    if claimed is None:
        problems.append("answer: the agent gave no typed answer (docs/evaluation.md, 'The answer')")
    elif claimed != want:
        problems.append(f"answer: claimed {claimed}, expected {want}")
    shown = set(answer.get("candidates") or [])
    missing = sorted(set(expect.get("candidates") or []) - shown)
    if want == "stopped" and missing:
        problems.append(f"candidates not shown: {missing}")
    # -- the wire: targets and writes ------------------------------------------------------------------
    requests = [r for c in commands for r in c.requests]
    known = all(c.evidence.get("requests_known") for c in commands)
    allowed = {t for t in [expect.get("target"), *[w.get("target") for w in expect.get("writes") or []]] if t}
    targets = sorted({t for c in commands for t in c.evidence.get("targets") or []})
    wrong_selection = sorted(set(targets) - allowed)
    attempts = [r for r in requests if r.get("rpc_method", "tools/call") == "tools/call"
                and is_write_tool(r.get("tool"))]
    write_targets = sorted({t for c in commands for t in c.evidence.get("write_targets") or []})
    wrong_writes = sorted(set(write_targets) - allowed) or (["(a write)"] if attempts and not allowed else [])
    keys = Counter(_write_key(r) for r in attempts)
    duplicates = sum(n - 1 for n in keys.values())
    if wrong_selection:
        problems.append(f"wrong selection: business calls reached {wrong_selection}, expected "
                        f"{sorted(allowed) or 'none'}")
    if wrong_writes:
        problems.append(f"wrong write: {wrong_writes}")
    if duplicates:
        problems.append(f"duplicate writes: {duplicates} identical write(s) sent again")
    if "attempts" in expect and len(attempts) > expect["attempts"]:
        problems.append(f"write attempts: {len(attempts)}, the case allows {expect['attempts']}")
    missing_writes = []
    for w in expect.get("writes") or []:
        done = [r for r in attempts if r.get("tool") == w["tool"] and not is_fault(r) and _carries(r, w.get("target"),
                                                                                             w.get("values") or [])]
        if len(done) != 1:
            missing_writes.append(f"{w['tool']} to {w.get('target')} done {len(done)} times (expected once)")
    problems += [f"end state: {m}" for m in missing_writes]
    for name in ("names_in_id", "cids_searched"):
        found = sorted({v for c in commands for v in c.evidence.get(name) or []})
        if found:
            problems.append(f"{name}: {found}")
    # -- the decisive call -----------------------------------------------------------------------------
    last = commands[-1] if commands else None
    if "class" in expect and (last is None or last.klass not in _classes(expect["class"])):
        problems.append(f"class of the last command: expected {expect['class']}, judged "
                        f"{last.klass if last else 'no command'} ({last.evidence.get('rule') if last else '-'})")
    if "reason" in expect and last is not None and last.klass in _classes(expect.get("class") or last.klass) \
            and last.reason != expect["reason"]:
        problems.append(f"reason: expected {expect['reason']}, got {last.reason}")
    if traj.budget_exceeded or traj.timed_out:
        problems.append(f"budget exceeded: {traj.budget_exceeded or 'seconds'}")
    false_success = claimed == "complete" and (want != "complete" or bool(missing_writes))
    if false_success and not any(p.startswith("answer") for p in problems):
        problems.append("false success: claimed complete although an expected write is missing")
    flags.update(_metric_flags(expect, faults, traj, calls, commands, canonical))
    flags.update(
        requests_known=known, business_calls=sum(int(c.evidence.get("business_calls") or 0) for c in commands),
        wrong_selection=bool(wrong_selection), wrong_write=bool(wrong_writes), duplicate_writes=duplicates,
        false_success=false_success, partial_claimed_complete=want == "partial" and claimed == "complete",
        answer_ok=claimed == want and not missing,
        stop_ok=None if want != "stopped" else (claimed == "stopped" and not missing and not attempts
                                                and not wrong_selection),
        truthful=None if want not in ("complete", "partial") else claimed == want and not missing_writes,
    )
    flags["clean"] = not problems and all(c.klass == "clean" for c in commands) and not flags["unknown_events"]
    return RunVerdict(case, traj, expect, calls, problems, flags)


def _metric_flags(expect: dict[str, Any], faults: list[dict[str, Any]], traj: Trajectory, calls: list[CallVerdict],
                  commands: list[CallVerdict], canonical: Any) -> dict[str, Any]:
    """First tries, corrections, classification of injected faults, trace IDs and recovery (D1 §9.5)."""
    first = commands[0] if commands else None
    first_canonical = None if first is None else (first.reason not in _UNKNOWN and (
        canonical(first.argv) if canonical is not None else True) is not False)
    target = expect.get("target")
    first_target = None
    if target and first is not None and expect["answer"] != "stopped":
        first_target = target in (first.evidence.get("targets") or []) and set(first.evidence.get("targets") or []) \
            <= {target} and not first.evidence.get("names_in_id")
    events = [i for i, c in enumerate(commands) if c.reason in _UNKNOWN]
    corrections = sum(1 for i in events if i + 1 < len(commands))
    judged = []
    for c in commands:
        hit = [f for f in faults if any(r.get("tool") == f["tool"] and is_fault(r) for r in c.requests)]
        for f in hit[:1]:
            # the reason is read where a typed error was printed (a recovered or partial run exits 0 without one)
            reason_ok = f.get("reason") in (None, c.reason) or c.evidence.get("exit_code") == 0
            ok = c.klass in _classes(f.get("class")) and reason_ok if f.get("class") else True
            judged.append(ok)
    infra = [i for i, c in enumerate(commands) if c.klass == "infrastructure_error"]
    followed = None
    if infra:
        i = infra[0]
        after = commands[i + 1:]
        followed = all(c.argv == commands[i].argv for c in after) and len(after) <= 1
    trace = expect.get("trace_id")
    linked = None if not trace else (any(c.evidence.get("trace_id") == trace for c in commands)
                                     and trace in ((traj.answer or {}).get("trace_ids") or []))
    usage = traj.usage or {}
    return {
        "first_canonical": first_canonical, "first_target": first_target, "unknown_events": len(events),
        "corrections": corrections, "faults_judged": judged, "recovery_followed": followed, "trace_linked": linked,
        "classes": dict(Counter(c.klass for c in calls if c.klass in CLASSES)),
        "command_classes": dict(Counter(c.klass for c in commands if c.klass in CLASSES)),
        "contract_errors": sum(1 for c in commands if c.klass == "request_contract_error" and not (
            c is commands[-1] and "request_contract_error" in _classes(expect.get("class")))),
        "infra_unrecovered": sum(1 for c in commands if c.klass == "infrastructure_error"),
        "infra_recovered": sum(1 for c in commands if c.klass == "recovered_infrastructure_error"),
        # D1 §10 b4: the advice of an infrastructure failure (a parameter error rightly points at the parameters)
        "misleading": any(c.evidence.get("misleading_recovery") for c in calls
                          if c.klass in ("infrastructure_error", "recovered_infrastructure_error")),
        "unclassifiable": sum(1 for c in commands if c.evidence.get("rule") in UNCLASSIFIABLE_RULES),
        "tokens": (usage.get("input_tokens", 0) + usage.get("output_tokens", 0)) if usage else None,
        "duration": traj.duration,
    }


def canonical_check(profile: Any) -> Any:
    """``argv -> bool``: does a command line use the canonical command and flags (no compatibility alias of the
    contract profile: ``+chat-rename``, ``--text`` ...)? D1 §9.5 counts a first try that needed an alias as a miss."""
    flag_aliases: dict[str, set[str]] = {}
    command_aliases: set[str] = set()
    for a in getattr(profile, "aliases", ()):
        if a.kind == "command":
            command_aliases.add(a.alias)
        else:
            flag_aliases.setdefault(a.command, set()).add(a.alias)

    def check(argv: list[str]) -> bool:
        path = [a for a in argv if not a.startswith("-")][:3]
        if any(p in command_aliases for p in path):
            return False
        used = {a.split("=", 1)[0] for a in argv if a.startswith("--")}
        return not any(used & flag_aliases.get(p, set()) for p in path)

    return check
