"""The judge: classify ONE recorded outcome of the CLI into the D1 §6 / §8.4 layers, with the evidence.

D1 asks the evaluation report to keep apart errors that a single "failed" count would mix: the agent
calling something that does not exist, a request the CLI's contract rejects, a correct safety stop, a real
business failure of the backend, and infrastructure failures (recovered by a safe retry or not). The judge
is a plain function so that evaluation runners can use it outside pytest on recorded runs::

    from pytest_dws.core.outcome import Outcome, judge

    outcome = Outcome.from_files(exit_code=1, stdout="out.json", stderr="err.json",
                                 transcript="calls.jsonl")   # JSONL of `python -m fake_mcp serve --log`
    verdict = judge(outcome)
    verdict.klass         # "infrastructure_error"
    verdict.evidence      # {"rule": "reason:backend_dependency_unavailable", "reason": ..., "calls": 2, ...}
    verdict.is_failure    # False for clean runs, expected safety stops and recovered infrastructure
    judge(outcome, load_profile("release.toml").errors)  # other error keys (pytest_dws.inputs.profile's [errors])

Only typed fields are read (exit code, the error's typed reason/category/origin/stage, read through the release's
envelope (:mod:`pytest_dws.core.envelope`, the profile's ``[errors]``), result flags such as
``complete``/``failures``, and the wire transcript), never message text; the one exception is the recovery
advice (``hint``/``actions``), checked for auth/parameter suggestions as GATES.md ERR-NO-MISLEADING-HINT does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fake_mcp.transcript import is_write_tool  # the one write rule (stdlib-only module)
from pytest_dws.core.envelope import Envelope
from pytest_dws.core.jsondoc import first_json

__all__ = [
    "CLASSES", "CLEAN", "FAILURE_CLASSES", "MISLEADING_ADVICE", "REASON_CLASSES", "Judgement", "Outcome", "is_fault",
    "judge", "looks_like_cid",
]

AGENT_ERROR = "agent_error"
REQUEST_CONTRACT_ERROR = "request_contract_error"
EXPECTED_RESOLUTION_STOP = "expected_resolution_stop"
BUSINESS_ERROR = "business_error"
INFRASTRUCTURE_ERROR = "infrastructure_error"
RECOVERED_INFRASTRUCTURE_ERROR = "recovered_infrastructure_error"
CLEAN = "clean"

#: The six layers of D1 §6, plus ``clean`` (a run with nothing to report), which D1 §9.5 keeps separate.
CLASSES = (AGENT_ERROR, REQUEST_CONTRACT_ERROR, EXPECTED_RESOLUTION_STOP, BUSINESS_ERROR,
           INFRASTRUCTURE_ERROR, RECOVERED_INFRASTRUCTURE_ERROR, CLEAN)
#: Classes that count as a failed run. A correct safety stop and a recovered retry are not failures.
FAILURE_CLASSES = frozenset({AGENT_ERROR, REQUEST_CONTRACT_ERROR, BUSINESS_ERROR, INFRASTRUCTURE_ERROR})

#: Typed ``error.reason`` -> class. Why each group sits where it does:
#: - agent: the invocation asks for something outside the CLI (unknown command, no confirmation, no login);
#: - request contract: the command exists but the request breaks its contract (flags, target types, conflicts,
#:   or the backend's parameter validation: D1 §3.1 row 2);
#: - resolution stop: the resolver refused to guess (D1 §4 rule 4, §6: fail-closed is the correct outcome);
#: - business: the backend answered with a real business failure (permission, missing resource, unknown);
#: - infrastructure: gateway/transport failures (D1 §3.1 row 1, HTTP 429/5xx, broken replies).
REASON_CLASSES: dict[str, str] = {
    **dict.fromkeys(("unknown_command", "confirmation_required", "not_authenticated", "auth_required",
                     "token_expired"), AGENT_ERROR),
    **dict.fromkeys(("unknown_flag", "blocked_flag", "ambiguous_flag", "parameter_conflict", "flag_conflict",
                     "missing_required_flag", "required_flag_missing", "invalid_flag_value", "invalid_value",
                     "target_type_mismatch", "target_arguments_conflict", "missing_target", "invalid_request",
                     "tools_call_jsonrpc_invalid_params", "invalid_argument", "unexpected_argument"),
                    REQUEST_CONTRACT_ERROR),
    **dict.fromkeys(("resolution_ambiguous", "resolution_not_found", "resolution_incomplete",
                     "resolution_batch_failed"), EXPECTED_RESOLUTION_STOP),
    **dict.fromkeys(("business_error", "mcp_tool_error", "permission_denied", "resource_not_found"),
                    BUSINESS_ERROR),
    **dict.fromkeys(("backend_dependency_unavailable", "rate_limited", "network_error", "transport_error",
                     "connection_failed", "connection_reset", "request_timeout", "timeout", "malformed_response",
                     "invalid_response", "tools_call_jsonrpc_error", "service_unavailable", "connection_dropped",
                     "endpoint_not_configured"),
                    INFRASTRUCTURE_ERROR),
}
#: When the reason is unknown to the table: the category decides (exit-code families of R4.1).
_CATEGORY_CLASSES = {"validation": REQUEST_CONTRACT_ERROR, "auth": AGENT_ERROR, "discovery": INFRASTRUCTURE_ERROR,
                     "internal": REQUEST_CONTRACT_ERROR}

#: Keys that carry a stable group ID in backend arguments (docs/contract.md §0, checked recursively).
ID_KEYS = frozenset({"openconversation_id", "openConversationId", "openConversationIds", "openCid", "cid"})
_SEARCH_TOOLS = frozenset({"search_groups", "search_contact_by_key_word"})
#: Recovery advice that would send an agent down the wrong branch after an infrastructure failure (D1 §5,
#: GATES.md ERR-NO-MISLEADING-HINT): to parameters or authentication. The bare "参数" is allowed: the correct
#: hint says "请求参数无需修改". The one definition, also used by pytest_dws.assertions.
MISLEADING_ADVICE = re.compile(r"auth|login|whoami|认证|登录|check (required )?param|检查(请求)?参数", re.IGNORECASE)


def looks_like_cid(value: object) -> bool:
    """The upstream CID shape (``LooksLikeOpenConversationID``): >= 12 chars after trimming, prefix ``cid`` in
    any case (the one definition, also exported by pytest_dws.assertions)."""
    return isinstance(value, str) and len(value.strip()) >= 12 and value.strip().lower().startswith("cid")


#: What an invocation did, read from its outcome (never from its message): the one answer to "did the CLI refuse
#: this?" for every gate that asks (issue 24).
READINGS = ("timed_out", "crashed", "tried_to_leave", "prompted", "ran", "refused", "failed_after_requests",
            "limited")


def reading(inv: Any, *, prompted: bool = False) -> str:
    """One of :data:`READINGS` for an invocation (``inv``: exit_code, timed_out, crashed, signal, egress,
    calls()). ``refused``: a non-zero exit before any backend request and any attempt to leave the machine,
    whatever the exit code (the reference refuses a missing flag with 3, the real binary's cobra with 5,
    docs/wire.md §8); ``prompted``: the caller saw it ask for the user's confirmation (D2 §5); ``limited``: it
    ran into one of its limits (``inv.limited`` names which: pytest_dws.launch.contain.jail)."""
    if getattr(inv, "timed_out", False):
        return "timed_out"
    if getattr(inv, "limited", None):  # it ran into a per-invocation limit (file size, processes, CPU)
        return "limited"
    if getattr(inv, "crashed", False) or getattr(inv, "signal", None):
        return "crashed"
    if getattr(inv, "service_egress", getattr(inv, "egress", None)):  # telemetry or the like is not a request
        return "tried_to_leave"
    if prompted:
        return "prompted"
    if inv.exit_code == 0:
        return "ran"
    return "failed_after_requests" if inv.calls() else "refused"


@dataclass(frozen=True)
class Outcome:
    """What one invocation left behind: exit code, the two streams, and the requests the backend received.

    ``transcript`` holds records as plain dicts (``fake_mcp`` ``Record.to_dict()`` / one JSONL line each);
    only ``rpc_method``, ``product``, ``tool``, ``arguments``, ``status`` and ``outcome`` are read.
    ``exit_code`` None means the process did not exit by itself (timeout or signal).
    """

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    transcript: tuple[Mapping[str, Any], ...] = ()
    argv: tuple[str, ...] = ()
    timed_out: bool = False

    @classmethod
    def from_invocation(cls, inv: Any) -> Outcome:
        """From a :class:`pytest_dws.launch.Invocation` (its transcript holds fake_mcp Records)."""
        records = tuple(r.to_dict() if hasattr(r, "to_dict") else dict(r) for r in inv.transcript)
        killed = any(getattr(inv, flag, False) for flag in ("timed_out", "crashed", "overflow"))  # not its own exit
        code = None if killed else inv.exit_code
        return cls(code, inv.stdout or "", inv.stderr or "", records, tuple(inv.argv or ()),
                   bool(getattr(inv, "timed_out", False)))

    @classmethod
    def from_files(cls, *, exit_code: int | None, stdout: str | Path | None = None,
                   stderr: str | Path | None = None, transcript: str | Path | None = None,
                   argv: Iterable[str] = ()) -> Outcome:
        """From files of a recorded run; ``transcript`` is a JSONL file (one record per line)."""
        def text(path: str | Path | None) -> str:
            return Path(path).read_text(encoding="utf-8", errors="replace") if path else ""

        return cls(exit_code, text(stdout), text(stderr), tuple(read_jsonl(transcript)) if transcript else (),
                   tuple(argv))


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Records of a JSONL transcript; a bad line is a ValueError naming the file and the line number."""
    out: list[dict[str, Any]] = []
    for no, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: line {no}: not JSON ({exc.msg})") from None
        if not isinstance(rec, dict):
            raise ValueError(f"{path}: line {no}: expected a JSON object")
        out.append(rec)
    return out


@dataclass(frozen=True)
class Judgement:
    """The class of one outcome and the typed evidence it was decided on (``evidence["rule"]`` names the rule)."""

    klass: str
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def is_failure(self) -> bool:
        """Whether the run failed; clean runs, expected safety stops and recovered retries did not."""
        return self.klass in FAILURE_CLASSES

    def to_dict(self) -> dict[str, Any]:
        return {"class": self.klass, "failure": self.is_failure, "evidence": self.evidence}


def _ids_in(value: Any) -> list[str]:
    """String values under ID keys, recursively (lists included)."""
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, sub in value.items():
            if key in ID_KEYS:
                found.extend(v for v in (sub if isinstance(sub, list) else [sub]) if isinstance(v, str))
            else:
                found.extend(_ids_in(sub))
    elif isinstance(value, list):
        for sub in value:
            found.extend(_ids_in(sub))
    return found


def is_fault(rec: Mapping[str, Any]) -> bool:
    """A reply the backend/gateway failed with (an injected fault that is not an exact success payload): the one
    reading of a fake_mcp record's ``status``/``outcome``, also the agent evaluation's (a write done, a fault hit)."""
    outcome = str(rec.get("outcome") or "ok")
    status = int(rec.get("status") or 0)
    if outcome.startswith("fault:"):
        kinds = set(outcome[6:].split("+")) - {"delay"}
        return bool(kinds - {"payload", "result"}) or status == 0 or status >= 400
    return status == 0 or status >= 400 or outcome.startswith("error:")


def wire_facts(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts and targets of the tool calls: the wire evidence every class and metric relies on."""
    calls = [r for r in records if r.get("rpc_method", "tools/call") == "tools/call" and r.get("tool")]
    searches = [r for r in calls if r.get("tool") in _SEARCH_TOOLS]
    business = [r for r in calls if r.get("tool") not in _SEARCH_TOOLS]
    key = [(r.get("product"), r.get("tool"), json.dumps(r.get("arguments"), sort_keys=True)) for r in calls]
    retries: list[dict[str, Any]] = []
    seen: dict[tuple[Any, ...], list[int]] = {}
    for i, k in enumerate(key):
        seen.setdefault(k, []).append(i)
    for k, idx in seen.items():
        if len(idx) > 1 and any(is_fault(calls[i]) for i in idx[:-1]):
            retries.append({"tool": k[1], "attempts": len(idx), "recovered": not is_fault(calls[idx[-1]])})
    unrecovered = [calls[idx[-1]] for idx in seen.values() if is_fault(calls[idx[-1]])]
    writes = [r for r in calls if is_write_tool(r.get("tool"))]
    write_keys = [k for k, r in zip(key, calls, strict=True) if is_write_tool(r.get("tool"))]
    ids = [v for r in business for v in _ids_in(r.get("arguments") or {})]
    return {
        "calls": len(calls),
        "search_calls": len(searches),
        "business_calls": len(business),
        "writes": len(writes),
        "duplicate_writes": len(write_keys) - len(set(write_keys)),
        "targets": sorted(set(ids)),
        "write_targets": sorted({v for r in writes for v in _ids_in(r.get("arguments") or {})}),
        "names_in_id": sorted({v for v in ids if not looks_like_cid(v)}),
        "cids_searched": sorted({str((r.get("arguments") or {}).get("keyword")) for r in searches
                                 if looks_like_cid((r.get("arguments") or {}).get("keyword"))}),
        "faults": sum(1 for r in calls if is_fault(r)),
        "unrecovered_faults": [{"tool": r.get("tool"), "status": r.get("status"), "outcome": r.get("outcome")}
                               for r in unrecovered],
        "retries": retries,
        "tools_list": sum(1 for r in records if r.get("rpc_method") == "tools/list"),
    }


_ERROR_FIELDS = ("code", "category", "reason", "origin", "stage", "execution_started", "retryable",
                 "trace_id", "server_error_code")
_RESULT_FIELDS = ("complete", "partial", "hasMore", "failedCount", "stopReason", "dry_run", "executed")


def _misleading(error: Mapping[str, Any]) -> bool:
    advice = [error.get("hint"), *list(error.get("actions") or [])]
    return any(isinstance(a, str) and MISLEADING_ADVICE.search(a) for a in advice)


def _class_of(error: Mapping[str, Any]) -> tuple[str, str]:
    reason = error.get("reason")
    if isinstance(reason, str) and reason in REASON_CLASSES:
        return REASON_CLASSES[reason], f"reason:{reason}"
    if isinstance(reason, str) and re.fullmatch(r"http_(429|5\d\d)", reason):
        return INFRASTRUCTURE_ERROR, f"reason:{reason}"
    category = error.get("category")
    if category == "api":
        infra = error.get("origin") == "mcp_gateway" or error.get("retryable") is True
        return (INFRASTRUCTURE_ERROR if infra else BUSINESS_ERROR), f"category:api,origin:{error.get('origin')}"
    if category in _CATEGORY_CLASSES:
        return _CATEGORY_CLASSES[str(category)], f"category:{category}"
    return REQUEST_CONTRACT_ERROR, "unknown-error-shape"


def judge(outcome: Outcome, envelope: Envelope | None = None) -> Judgement:
    """Classify one outcome (see the module docstring and ``docs/judge.md`` for every rule). ``envelope``: where
    the release puts its typed error and under which keys (the profile's ``[errors]``; None: docs/contract.md
    R4.1's own names, ``{"error": {"reason": ...}}``)."""
    wire = wire_facts(outcome.transcript)
    evidence: dict[str, Any] = {"exit_code": outcome.exit_code, **wire}
    if outcome.exit_code is None:
        evidence.update(rule="no-exit", timed_out=outcome.timed_out)
        return Judgement(INFRASTRUCTURE_ERROR if outcome.timed_out else REQUEST_CONTRACT_ERROR, evidence)
    if outcome.exit_code != 0:
        error = (envelope or Envelope()).error_of(first_json(outcome.stderr))
        if error is None:
            evidence.update(rule="no-error-envelope", envelope=False)
            return Judgement(REQUEST_CONTRACT_ERROR, evidence)
        klass, rule = _class_of(error)
        evidence.update({k: error[k] for k in _ERROR_FIELDS if k in error})
        evidence.update(rule=rule, envelope=error.get("code") in (None, outcome.exit_code),
                        misleading_recovery=_misleading(error))
        return Judgement(klass, evidence)
    result = first_json(outcome.stdout)
    if isinstance(result, dict):
        evidence.update({k: result[k] for k in _RESULT_FIELDS if k in result})
        failures = result.get("failures")
        reported = bool(result.get("failedCount")) or bool(failures) or result.get("partial") is True
        evidence["reported_failures"] = reported
        if reported and result.get("complete") is not True:
            reasons = [f.get("reason") for f in failures or [] if isinstance(f, dict) and f.get("reason")]
            klass = REASON_CLASSES.get(str(reasons[0]), INFRASTRUCTURE_ERROR) if reasons else INFRASTRUCTURE_ERROR
            if klass not in FAILURE_CLASSES:  # a partial result is a failure of some page, never a stop
                klass = INFRASTRUCTURE_ERROR
            evidence.update(rule="partial-result", failure_reasons=reasons)
            return Judgement(klass, evidence)
    if wire["unrecovered_faults"]:
        # exit 0 although a backend failure was never recovered: the CLI hid it (false success).
        evidence.update(rule="hidden-fault", false_success=True)
        return Judgement(INFRASTRUCTURE_ERROR, evidence)
    if any(r["recovered"] for r in wire["retries"]):
        evidence["rule"] = "retry-recovered"
        return Judgement(RECOVERED_INFRASTRUCTURE_ERROR, evidence)
    evidence["rule"] = "success"
    return Judgement(CLEAN, evidence)
