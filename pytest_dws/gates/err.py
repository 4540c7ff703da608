"""ERR: central server-failure classification (D1 §3, §7.1, §8.1, §11.1), judged on typed error fields.

Faults (fixtures/scenarios/d1/faults.toml) are put on the business call of the profile's read probe (e81:
``+conversation-list --page-all`` -> im/list_all_conversations) or write probe (``+chat-update`` ->
chat/update_group_name). Only typed fields are asserted: exit code, category, reason, origin, stage,
execution_started, retryable, the diagnostics, and (for misleading advice) hint/actions."""

from __future__ import annotations

from typing import Any

from pytest_dws.assertions import (
    ABSENT,
    assert_call_count,
    assert_equal,
    assert_error_classified,
)
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.runtime import targets
from pytest_dws.observe.runtime.classification import (
    EXIT_CODES,
    SERVER_FAILURES,
    error_runs,
    injected,
    inv_of,
    judge_auth_recovery,
    judge_backend_dep,
    judge_no_misleading_hint,
    judge_retry_scope,
    multi_profile_checks,
    read,
    write_not_retried_checks,
)
from pytest_dws.registry import Access, gate
from pytest_dws.verdict.cases import Check

MCP = {Access.MCP}

# -- gates ---------------------------------------------------------------------------------------------------
@gate("ERR-BACKEND-DEP", doc="D1 §3.1 row 1, §7.1 b1, §8.1, §10", access=MCP)
def backend_dep(ctx: GateContext) -> None:
    """NETWORK_ERROR + queryToolMeta => backend_dependency_unavailable, mcp_gateway, tool_metadata_lookup."""
    rt.collect([
        ("queryToolMeta", lambda: judge_backend_dep(ctx)),
        ("UNAVAILABLE only", lambda: assert_error_classified(
            read(ctx, "backend-dep"), exit_code=1, category="api", reason="backend_dependency_unavailable",
            origin="mcp_gateway", stage={"backend_dependency", "tool_metadata_lookup"}, what="backend-dep")),
    ])


@gate("ERR-PARAM", doc="D1 §3.1 row 2, §7.1 b2", access=MCP)
def param(ctx: GateContext) -> None:
    """PARAM_ERROR or a missing required parameter => invalid_request, tool_validation."""
    rt.collect((r, lambda r=r: assert_error_classified(
        read(ctx, r), exit_code=1, reason="invalid_request", stage="tool_validation",
        origin={"dingtalk_api", "mcp_gateway"}, what=r)) for r in ("param-code", "param-message"))


@gate("ERR-PERMISSION", doc="D1 §3.1 row 3, §9.3", access=MCP)
def permission(ctx: GateContext) -> None:
    """A permission/scope failure => permission_denied, stage authorization, origin = the producer."""
    assert_error_classified(read(ctx, "permission"), reason="permission_denied", stage="authorization",
                            origin={"dingtalk_api", "mcp_gateway"}, what="PERMISSION_DENIED")


@gate("ERR-NOT-FOUND", doc="D1 §3.1 row 4, §9.3", access=MCP)
def not_found(ctx: GateContext) -> None:
    """A missing resource => resource_not_found, dingtalk_api, tool_execution."""
    assert_error_classified(read(ctx, "not-found"), reason="resource_not_found", origin="dingtalk_api",
                            stage="tool_execution", what="RESOURCE_NOT_FOUND")


@gate("ERR-FALLBACK", doc="D1 §3.1 row 5, §7.1 b3", access=MCP)
def fallback(ctx: GateContext) -> None:
    """success=false without diagnostics stays business_error (origin/stage absent or unknown)."""
    assert_error_classified(read(ctx, "bare"), exit_code=1, category="api", reason="business_error",
                            origin={ABSENT, "unknown"}, stage={ABSENT, "unknown"}, execution_started=ABSENT,
                            what="{success:false}")


#: D1 §3.1's table, one code per row, each sent with a neutral detail (only the code says what failed) and with one
#: that reads like another row: reply -> (what it is, the row's own reply). "code-primary" / "code-primary-meta"
#: are PARAM_ERROR's outage-like and metadata details.
CODE_CASES: dict[str, tuple[str, str]] = {
    "code-network-neutral": ("NETWORK_ERROR with a neutral detail", "backend-dep-meta"),
    "code-network-contra": ("NETWORK_ERROR with a missing-parameter text", "backend-dep-meta"),
    "code-param-neutral": ("PARAM_ERROR with a neutral detail", "param-code"),
    "code-primary-meta": ("PARAM_ERROR with a queryToolMeta detail", "param-code"),
    "code-primary": ("PARAM_ERROR with an outage-like detail (strict; e81 lets the detail win)", "param-code"),
    "code-permission-neutral": ("PERMISSION_DENIED with a neutral detail", "permission"),
    "code-permission-contra": ("PERMISSION_DENIED with an outage-like detail", "permission"),
    "code-notfound-neutral": ("RESOURCE_NOT_FOUND with a neutral detail", "not-found"),
    "code-notfound-contra": ("RESOURCE_NOT_FOUND with an outage-like detail", "not-found"),
}


#: The fallback reasons (D1 §3.1 row 5): a code that gets one is not classified by the implementation.
UNCLASSIFIED = (ABSENT, "business_error", "mcp_tool_error")


@gate("ERR-CODE-PRIMARY", doc="D1 §3.1 last para", access=MCP)
def code_primary(ctx: GateContext) -> None:
    """The server error code decides, for every code of D1 §3.1's table: sent with a neutral detail and with a
    detail that reads like another row, it gets the reason its row's own reply gets (technical_detail may only
    refine the stage). Whether that reason is the right one is the row gate's judgement (ERR-BACKEND-DEP ...):
    a code the implementation does not classify at all is that row gate's finding, and its cases are not judged
    here."""

    def same(reply: str, what: str, row: str) -> None:
        want = (read(ctx, row).error or {}).get("reason", ABSENT)
        if want in UNCLASSIFIED:  # the code is not classified at all: its row gate's finding, no precedence to judge
            raise NotApplicable(f"{row}: the implementation does not classify this code (reason {want!r})",
                                wants="a classification of this code")
        assert_error_classified(read(ctx, reply), reason={want}, what=f"{what} (the code's own reply {row}: "
                                                                   f"reason {want!r})")

    rt.collect((reply, lambda reply=reply, what=what, row=row: same(reply, what, row))
               for reply, (what, row) in CODE_CASES.items())


@gate("ERR-DIAG-PRESERVED", doc="D1 §3.1, §11.1", access=MCP)
def diag_preserved(ctx: GateContext) -> None:
    """trace_id, technical_detail, retryable and server_error_code pass through verbatim."""

    def check(reply: str) -> None:
        sent = injected(ctx, reply)
        code = sent.get("code", sent.get("errorCode", sent.get("server_error_code")))
        want = {"trace_id": sent.get("trace_id", sent.get("traceId")), "server_error_code": code,
                "technical_detail": sent.get("technical_detail"), "retryable": sent.get("retryable")}
        want = {k: v for k, v in want.items() if v is not None}
        err = read(ctx, reply).error or {}
        assert_equal(want, {k: err.get(k, ABSENT) for k in want}, f"diagnostics of {reply}")

    rt.collect((r, lambda r=r: check(r)) for r in ("backend-dep-meta", "diag-camel", "replay-d1-2-2"))


#: Labels of the human error text under --format table (docs/wire.md §8) -> the typed field they carry.
TABLE_LABELS = {"Trace ID": "trace_id", "Server Code": "server_error_code", "Retryable": "retryable"}


def table_facts(text: str) -> dict[str, Any]:
    """The typed facts a `--format table` error prints as `Label: value` lines (retryable as a boolean)."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        label, sep, value = line.partition(":")
        if sep and label.strip() in TABLE_LABELS:
            key, value = TABLE_LABELS[label.strip()], value.strip()
            out[key] = {"true": True, "false": False}.get(value, value) if key == "retryable" else value
    return out


def judge_table_error(ctx: GateContext) -> None:
    """docs/wire.md §8: under --format table an error is human text on stderr with the exit code unchanged; what
    D1 §7.1 asks of the JSON output is then compared as facts: trace ID, server code and retryable equal the
    typed error of the same failure under --format json."""
    __tracebackhide__ = True
    table, plain_run = inv_of(ctx, rt.read_probe(ctx, "backend-dep-meta", table=True)), read(ctx, "backend-dep-meta")
    problems = []
    if table.exit_code != plain_run.exit_code:
        problems.append(f"exit {table.exit_code} under --format table, {plain_run.exit_code} under json")
    if table.stdout.strip():
        problems.append(f"stdout is not empty on an error ({table.stdout.strip()[:80]!r})")
    err = plain_run.error or {}
    want = {k: err[k] for k in TABLE_LABELS.values() if k in err}
    got = table_facts(table.stderr)
    missing = {k: v for k, v in want.items() if got.get(k, ABSENT) != v}
    if missing:
        problems.append(f"the table error text lacks facts of the typed error: expected {missing}, read "
                        f"{ {k: got.get(k, ABSENT) for k in missing} }")
    if problems:
        raise AssertionError("--format table error: " + "; ".join(problems) + f"\n{table.describe()}")


def declared_incomplete(doc: Any) -> bool:
    """A result document that says it is not the whole answer (``complete: false`` or ``partial: true``): printed
    beside the typed error of a non-zero exit, it keeps D1's typed-error rule (the error still decides; the rows
    so far are shown for what they are, D1 §9.5)."""
    return isinstance(doc, dict) and (doc.get("complete") is False or doc.get("partial") is True)


@gate("ERR-JSON-CONSISTENT", doc="D1 §7.1 b4, §8.1, §11.1; docs/wire.md §8", access=MCP)
def json_consistent(ctx: GateContext) -> None:
    """Errors are one JSON document on stderr, nothing on stdout, code = exit code; under --format table the
    labelled text carries the same facts."""
    problems = []
    runs = error_runs(ctx)
    if not runs:  # the D1 fault scenarios must make the CLI fail: no failed run is nothing judged, never a pass
        problems.append("no run of the D1 families failed, not even under the backend faults: there is no error "
                        "output to judge")
    for s, inv in runs:
        label = " ".join(s.args)
        err = inv.error
        if err is None:
            problems.append(f"{label}: exit {inv.exit_code} without a JSON error object on stderr")
            continue
        if inv.stdout.strip() and not declared_incomplete(inv.stdout_json):
            problems.append(f"{label}: stdout is not empty on an error ({inv.stdout.strip()[:80]!r}) and is no "
                            "document that declares itself incomplete")
        if err.get("code") != inv.exit_code:
            problems.append(f"{label}: .error.code {err.get('code')!r} != exit code {inv.exit_code}")
        if EXIT_CODES.get(err.get("category")) != inv.exit_code:
            problems.append(f"{label}: category {err.get('category')!r} does not map to exit {inv.exit_code}")
        if "retryable" in err and not isinstance(err["retryable"], bool):
            problems.append(f"{label}: .error.retryable is {err['retryable']!r}, not a boolean")

    def json_runs() -> None:
        if problems:
            raise AssertionError(f"{len(problems)} inconsistent error output(s):\n  " + "\n  ".join(problems[:12]))

    rt.collect([("json", json_runs), ("table", lambda: judge_table_error(ctx))])


@gate("ERR-JSON-CONSISTENT", doc="D1 §11.1 (\"multi-profile 聚合保留错误恢复语义、resolution candidates 和诊断字段\")",
      access=MCP, part="multi-profile")
def json_consistent_multi_profile(ctx: GateContext) -> None:
    """Run with several profiles at once (`--profile a,b`, where the release says how to configure them), the
    aggregate keeps each profile's typed error as the single-profile run gives it: reason, origin, stage,
    retryable, hint, actions, trace ID, server code, and an ambiguous name's candidates."""
    rt.require_profile(ctx)
    rt.collect(multi_profile_checks(ctx))


@gate("ERR-NO-MISLEADING-HINT", doc="D1 §5, §7.1 b5, §8.1, §10", access=MCP)
def no_misleading_hint(ctx: GateContext) -> None:
    """Each error class's advice (hint and actions) tells the Agent its class's action and no other (profile
    `[advice]`): an internal-dependency error says retry and keep the trace ID, never check parameters, authentication
    or permissions, on every failure path; parameter, permission and resource errors each name their own action."""
    judge_no_misleading_hint(ctx)


def _backend_started(ctx: GateContext, reply: str) -> Any:
    """What a server failure may say of execution_started: what the backend said (passed through), or nothing;
    never a value the backend did not send (D1 §11.1 "后端未显式返回时不猜测 execution_started")."""
    said = injected(ctx, reply).get("execution_started")
    return {ABSENT, said} if isinstance(said, bool) else ABSENT


@gate("ERR-EXEC-STARTED", doc="D1 §3.2, §8.1, §11.1", access=MCP)
def exec_started(ctx: GateContext) -> None:
    """Server failures carry no invented execution_started (only the backend's own); client-side resolution errors
    say false."""
    prof = rt.profile(ctx)
    checks = [(r, lambda r=r: assert_error_classified(read(ctx, r), execution_started=_backend_started(ctx, r),
                                                      what=r))
              for r in SERVER_FAILURES]
    for key in prof.matrix()[:1]:
        s = targets.zero_hit_run(ctx, prof.commands[key])
        checks.append((" ".join(s.args), lambda s=s: assert_error_classified(
            rt.run(ctx, "TGT", s), execution_started=False, what="resolution error (zero hits)")))
    rt.collect(checks)


@gate("ERR-NO-UNSAFE-RETRY", doc="D1 §3.2, §8.1, §9.1, §9.4", access=MCP)
def no_unsafe_retry(ctx: GateContext) -> None:
    """Retries happen at most once, only for commands the run's schema marks read-only, or after the backend said
    execution_started=false: a write whose execution state is unknown (or started) is never sent again."""
    prof = rt.profile(ctx)
    tool = prof.command(prof.probes["read"]).call

    def read_bounded(reply: str) -> None:
        assert_call_count(read(ctx, reply), tool, range(1, 3), f"{reply} on a read (at most one retry)")

    rt.collect(write_not_retried_checks(ctx) +
               [(f"read {r}", lambda r=r: read_bounded(r)) for r in ("http-503", "backend-dep-meta",
                                                                      "exec-started-true")] +
               [("retried only where allowed", lambda: judge_retry_scope(ctx))])


@gate("ERR-BOTH-PATHS", doc="D1 §11.1", access=MCP)
def both_paths(ctx: GateContext) -> None:
    """isError:true results and success=false content are classified alike."""

    def key(reply: str) -> dict[str, Any]:
        err = read(ctx, reply).error or {}
        return {k: err.get(k, ABSENT) for k in ("reason", "origin", "stage")}

    base = key("backend-dep-meta")
    checks: list[Check] = [("success=false", lambda: judge_backend_dep(ctx))]
    for reply in ("backend-dep-meta-iserror", "backend-dep-meta-structured"):
        checks.append((reply, lambda reply=reply: assert_equal(base, key(reply), f"classification of {reply}")))
    rt.collect(checks)


_ERROR_SCHEMA = {
    "type": "object",
    "required": ["code", "category", "message"],
    "properties": {
        "code": {"type": "integer"},
        "category": {"enum": list(EXIT_CODES)},
        "message": {"type": "string"},
        "reason": {"type": "string", "minLength": 1},
        "origin": {"enum": ["client", "mcp_gateway", "dingtalk_api", "unknown"]},
        "stage": {"type": "string", "minLength": 1},
        "execution_started": {"type": "boolean"},
        "retryable": {"type": "boolean"},
        "hint": {"type": "string"},
        "actions": {"type": "array", "items": {"type": "string"}},
        "details": {"type": "object"},
        "trace_id": {"type": "string"},
        "server_error_code": {"type": "string"},
        "technical_detail": {"type": "string"},
    },
}


@gate("ERR-STABLE-FIELDS", doc="D1 §8.1", access=MCP)
def stable_fields(ctx: GateContext) -> None:
    """Every error is a JSON object with typed code/category/message and well-typed origin/stage/reason."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_ERROR_SCHEMA)
    problems = []
    runs = error_runs(ctx)
    if not runs:  # the D1 fault scenarios must make the CLI fail: no failed run is nothing judged, never a pass
        problems.append("no run of the D1 families failed, not even under the backend faults: there is no error "
                        "output to judge")
    for s, inv in runs:
        label = " ".join(s.args)
        if inv.error is None:
            problems.append(f"{label}: no JSON error object on stderr")
            continue
        for e in validator.iter_errors(inv.error):
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
            problems.append(f"{label}: $.error{where}: {e.message}")
    server = [s for s in (rt.read_probe(ctx, r) for r in SERVER_FAILURES)]
    for s in server:
        err = inv_of(ctx, s).error or {}
        if not err.get("reason"):
            world = s.scenario.label if isinstance(s.scenario, rt.Sc) else ""
            problems.append(f"{' '.join(s.args)} ({world}): server failure without a reason")
    if problems:
        raise AssertionError(f"{len(problems)} error object(s) off the stable shape:\n  " + "\n  ".join(problems[:12]))


@gate("ERR-AUTH-RECOVERY", doc="D1 §5 last para", access={Access.BIN, Access.MCP})
def auth_recovery(ctx: GateContext) -> None:
    """No `auth whoami`; auth recovery only recommends `dws auth status` / `dws profile list` (/ login)."""
    judge_auth_recovery(ctx)
