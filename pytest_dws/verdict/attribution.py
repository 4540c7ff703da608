"""Which rule gate a failing case breaks: one root cause, one verdict (see :mod:`pytest_dws.verdict.cases`).

The aggregate gates (ACC, DS, MET, REL, FIT) judge the same behaviour the rule gates judge, over other inputs.
When a dataset case fails, this module names the rule-gate case that judges the same behaviour on its own,
spelled as a baseline entry (``ERR-PERMISSION``, ``TGT-GROUP-NAME[+search-msg]``,
``ERR-NO-UNSAFE-RETRY[write http-503]``). It attributes a case only when EVERY problem of it is explained by
some cause; a case with a problem no rule gate judges stays unattributed and fails its aggregate, named.

It knows the rule gates by id and case label only (the labels the rule gates use are built here, and the
gates call these builders), so it imports no gate module.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_dws.core.outcome import looks_like_cid
from pytest_dws.inputs.profile import Command, Profile

#: (flag role, value kind) -> the TGT gate of the D1 §7.2 matrix that judges that case on its own.
CASE_GATES = {("group", "cid"): "TGT-GROUP-CID", ("group", "name"): "TGT-GROUP-NAME",
              ("conversation_id", "cid"): "TGT-CONVID-CID", ("chat_query", "cid"): "TGT-CHATQUERY-CID",
              ("chat_query", "name"): "TGT-CHATQUERY-NAME"}
#: The classifier rows of D1 §3.1: expected reason -> the ERR gate of that row.
REASON_GATES = {"backend_dependency_unavailable": "ERR-BACKEND-DEP", "invalid_request": "ERR-PARAM",
                "permission_denied": "ERR-PERMISSION", "resource_not_found": "ERR-NOT-FOUND",
                "business_error": "ERR-FALLBACK"}
ROLES = ("group", "conversation_id", "chat_query")
_INFRA = ("infrastructure_error", "recovered_infrastructure_error")
#: Expected resolution stops -> the TGT gate judging that stop per command.
_STOPS = {"resolution_ambiguous": "TGT-MULTI-ZERO-CALLS", "resolution_not_found": "TGT-ZERO-HIT"}


def target_cause(prof: Profile, cmd: Command, flag: str, kind: str) -> str | None:
    """The TGT case that judges ``flag <kind>`` of ``cmd`` on its own: a matrix gate for the D1 §7.2 commands,
    TGT-OTHER-SHORTCUTS / TGT-SAME-SEMANTICS cases for the others."""
    role = next((r for r in ROLES if getattr(cmd, r) == flag), None)
    if role is None:
        return None
    if role == "conversation_id" and kind == "name":
        if cmd.key in prof.matrix():
            return name_rejected_case(cmd)
        return f"TGT-SAME-SEMANTICS[{cmd.key}/{flag} <name>]" if cmd.group and cmd.call and cmd.id_key else None
    if cmd.key in prof.matrix():
        gate_id = CASE_GATES.get((role, kind))
        return f"{gate_id}[{cmd.key}]" if gate_id else None
    if cmd.key in prof.others():
        return f"TGT-OTHER-SHORTCUTS[{cmd.key}/{flag} <{kind}>]"
    if role == "group" and cmd.call and cmd.id_key:
        return f"TGT-SAME-SEMANTICS[{cmd.key}/{flag} <{kind}>]"
    return None


def name_rejected_case(cmd: Command) -> str:
    """TGT-NAME-NEVER-IN-ID's strict case for ``cmd``: a name given to its stable-ID flag fails before any call."""
    return f"TGT-NAME-NEVER-IN-ID[{name_rejected_label(cmd)}]"


def name_rejected_label(cmd: Command) -> str:
    return f"{cmd.key} {cmd.conversation_id} <name>"


def write_case(reply: str) -> str:
    """ERR-NO-UNSAFE-RETRY's case label for a failure of kind ``reply`` on the write probe."""
    return f"write {reply}"


def write_reply_kind(reply: dict[str, Any]) -> str | None:
    """The ERR-NO-UNSAFE-RETRY reply name of a fake_mcp reply put on a write (None: not a transport failure)."""
    kind = reply.get("kind")
    if kind == "http" and reply.get("status") in (429, 503):
        return f"http-{reply['status']}"
    if kind == "http" and isinstance(reply.get("status"), int) and reply["status"] >= 500:
        return "http-503"
    if kind == "drop":
        return "drop"
    if kind == "business":
        return "backend-dep-meta"
    return None


# -- dataset cases --------------------------------------------------------------------------------------------
#: Problem line prefixes (pytest_dws.inputs.datasets.evaluate) by what explains them.
_CLASSIFIER = ("class:", "reason:", "stage:", "origin:", "misleading_recovery:", "trace_id:", "exit_code:")
_RETRY = ("writes:", "duplicate writes:")
_TARGET = ("business_calls:", "search_calls:", "wrong selection:", "names_in_id:", "target:", "cids_searched:")
_CONSEQUENCE = ("false success:",)


def command_of(prof: Profile, argv: list[str]) -> Command | None:
    """The profile command whose path (or hidden command alias, `+chat-rename`) starts ``argv`` after any global
    flags, longest path first."""
    paths = [(cmd.path, cmd) for cmd in prof.commands.values()]
    paths += [((*prof.commands[a.command].path[:-1], a.alias), prof.commands[a.command])
              for a in prof.aliases if a.kind == "command" and a.command in prof.commands]
    best: tuple[tuple[str, ...], Command] | None = None
    for path, cmd in paths:
        n = len(path)
        if any(tuple(argv[i:i + n]) == path for i in range(len(argv))) and (best is None or n > len(best[0])):
            best = (path, cmd)
    return best[1] if best else None


def _target_used(prof: Profile, cmd: Command, argv: list[str]) -> tuple[str, str] | None:
    """(canonical target flag, "cid"|"name") of the first target flag in ``argv`` (aliases mapped back)."""
    canon = {a.alias: a.canonical for a in prof.aliases if a.command == cmd.key and a.kind == "flag"}
    for i, tok in enumerate(argv[:-1]):
        flag = canon.get(tok, tok)
        if flag in {getattr(cmd, r) for r in ROLES} - {None}:
            return flag, "cid" if looks_like_cid(argv[i + 1]) else "name"
    return None


#: Reasons of a client-side target stop: when one comes unexpectedly, nothing after it could be judged.
_TARGET_STOPS = ("target_type_mismatch", "resolution_ambiguous", "resolution_not_found", "resolution_incomplete",
                 "target_arguments_conflict")


def dataset_causes(prof: Profile, result: Any) -> list[str]:
    """The rule-gate causes of a failing dataset case (pytest_dws.inputs.datasets.CaseResult), [] when some problem of
    it is explained by no rule gate (then the case fails its aggregate on its own)."""
    cmd = command_of(prof, list(result.argv))
    want, ev = result.expect, result.judgement.evidence
    causes: list[str] = []
    explained: set[tuple[str, ...]] = set()
    used = _target_used(prof, cmd, list(result.argv)) if cmd is not None else None
    target = target_cause(prof, cmd, *used) if cmd is not None and used is not None else None
    names_leaked = any(p.startswith(("names_in_id:", "wrong selection:")) for p in result.problems)
    stop = _STOPS.get(str(want.get("reason")))
    if stop and cmd is not None and not names_leaked and (stop != "TGT-MULTI-ZERO-CALLS"
                                                          or cmd.key in prof.ambiguity_commands()):
        target = f"{stop}[{cmd.key}]"  # the resolution did not stop: the stop gate of that command
    wrong_stop = ev.get("reason") in _TARGET_STOPS and ev.get("reason") != want.get("reason")
    if target and (names_leaked or wrong_stop or want.get("class") in ("clean", "expected_resolution_stop")):
        causes.append(target)
        explained |= {_TARGET, _CONSEQUENCE, ("writes:",)}  # a write to the wrong (or no) target
        if want.get("class") == "expected_resolution_stop" or names_leaked or wrong_stop:
            explained.add(("",))  # the run went to the wrong target (or none): nothing after it is judgeable
    code_primary = want.get("reason") == "invalid_request" and ev.get("reason") == "backend_dependency_unavailable"
    if ("",) in explained:
        pass  # the target explains the whole case
    elif code_primary:  # PARAM_ERROR judged an outage because of its detail: the code must decide (D1 §3.1)
        causes.append("ERR-CODE-PRIMARY[code-primary]")
        explained |= {_CLASSIFIER, _CONSEQUENCE}
    elif want.get("reason") in REASON_GATES and any(p.startswith(_CLASSIFIER) for p in result.problems) \
            and not silent_success(result):
        causes.append(REASON_GATES[want["reason"]])
        explained |= {_CLASSIFIER, _CONSEQUENCE}
    retried = [write_reply_kind(o.get("reply") or {}) for o in result.case.overrides
               if cmd is not None and cmd.write and cmd.call is not None and o.get("tool") == cmd.call.name]
    if ev.get("duplicate_writes") and any(retried) and ("",) not in explained:
        causes += [f"ERR-NO-UNSAFE-RETRY[{write_case(r)}]" for r in dict.fromkeys(retried) if r]
        explained |= {_RETRY, _CONSEQUENCE, ("writes:",)}
        if want.get("class") == "infrastructure_error":
            explained.add(_CLASSIFIER)  # retried and then succeeded: judged recovered, exit 0
    if result.flags.get("failure") and ev.get("misleading_recovery") and want.get("class") in _INFRA:
        reply = next((write_reply_kind(o.get("reply") or {}) for o in result.case.overrides), None)
        if reply in ("http-503", "http-429"):  # the gateway failure's advice: ERR-NO-MISLEADING-HINT's case
            causes.append(f"ERR-NO-MISLEADING-HINT[{reply}]")
    unexplained = [p for p in result.problems if not any(p.startswith(g) for g in explained)]
    return [] if unexplained or not causes else list(dict.fromkeys(causes))


def silent_success(result: Any) -> bool:
    """A run judged a success (clean) where a failure was expected: no classifier row explains it (a row missing
    from the classifier mislabels a failure, never turns it into a success), so no ERR case accounts for it
    (D1 §9.2: a cross-profile ID that "succeeds" behind an accepted not-found deviation is a finding of its own)."""
    return result.judgement.klass == "clean" and result.expect.get("class") != "clean"


def case_checks(prof: Profile, results: Iterable[Any]) -> list[tuple[str, Any, list[str]]]:
    """Dataset results as :func:`pytest_dws.verdict.cases.collect` checks: one case per failing
    result, with its causes."""
    out = []
    for r in results:
        if r.passed or r.not_applicable:
            continue
        message = "; ".join(r.problems) + f"\n      argv: {' '.join(r.argv)}"
        out.append((r.case.id, failing(message), dataset_causes(prof, r)))
    return out


def failing(message: str) -> Any:
    """A check that fails with ``message`` (a case already judged elsewhere, e.g. a dataset result)."""
    def check() -> None:
        raise AssertionError(message)

    return check
