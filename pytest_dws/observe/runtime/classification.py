"""Server-failure classification's runs and judges (D1 §3, §5, §7.1, §8.1): shared by ERR and ACC.

The profile's read probe is run under each fault reply of ``fixtures/scenarios/d1/faults.toml``; the judges
assert typed fields only (reason, origin, stage, retryable, exit code), never message text."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_dws.assertions import (
    assert_call_count,
    assert_error_classified,
    assert_no_misleading_hint,
)
from pytest_dws.core.errors import Finding
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.runtime import WORLD, Sc, Spec
from pytest_dws.verdict import attribution

F = "ERR"

EXIT_CODES = {"api": 1, "auth": 2, "validation": 3, "internal": 5, "discovery": 6}

#: Replies that are server failures (the classifier's input), judged for execution_started and JSON shape.
SERVER_FAILURES = ("backend-dep-meta", "backend-dep-meta-iserror", "backend-dep-meta-structured", "backend-dep",
                   "replay-d1-2-2", "param-code", "param-message", "code-primary-meta", "code-primary",
                   "diag-camel", "permission",
                   "not-found", "bare")


def write_run(ctx: GateContext, reply: str) -> Spec:
    """The write probe on the unique group's CID (no resolution), confirmed, with ``reply`` on the write."""
    prof = rt.profile(ctx)
    cmd = prof.command(prof.probes["write"])
    return rt.spec(cmd, [cmd.group or "--group", rt.cast(ctx).cid], sc=Sc(reply=reply, on=str(cmd.call)), prof=prof)


def whoami_run(ctx: GateContext) -> Spec:
    return rt.call_of(WORLD, rt.profile(ctx).cli["unknown_command"])


@rt.provider(F)
def _runs(ctx: GateContext) -> Iterable[Spec]:
    for reply in (*SERVER_FAILURES, "http-503", "http-429"):
        yield rt.read_probe(ctx, reply)
    yield rt.read_probe(ctx, "backend-dep-meta", table=True)
    yield rt.read_probe(ctx, None, token=None)
    for reply in WRITE_REPLIES:
        yield write_run(ctx, reply)
    yield whoami_run(ctx)


def inv_of(ctx: GateContext, s: Spec) -> Any:
    return rt.run(ctx, F, s)


def read(ctx: GateContext, reply: str) -> Any:
    return inv_of(ctx, rt.read_probe(ctx, reply))


def injected(ctx: GateContext, reply: str) -> dict[str, Any]:
    """The failure payload of a reply in faults.toml (the values that must pass through)."""
    return rt.cast(ctx).replies[reply]["payload"]


# -- judges shared with ACC ------------------------------------------------------------------------------------
def judge_backend_dep(ctx: GateContext, reply: str = "backend-dep-meta") -> None:
    """NETWORK_ERROR + queryToolMeta: backend_dependency_unavailable / mcp_gateway / tool_metadata_lookup, exit 1."""
    __tracebackhide__ = True
    assert_error_classified(read(ctx, reply), exit_code=1, category="api", reason="backend_dependency_unavailable",
                            origin="mcp_gateway", stage="tool_metadata_lookup", what=reply)


#: Infrastructure failures whose advice is judged (D1 §7.1 b5; §10 b4 "MCP 基础设施错误…不再显示参数/认证误导"):
#: the internal-dependency replies and the gateway's HTTP 503 / 429.
MISLEADING_HINT_REPLIES = ("backend-dep-meta", "backend-dep", "replay-d1-2-2", "backend-dep-meta-iserror", "http-503",
                           "http-429")


def misleading_hint_checks(ctx: GateContext) -> list[tuple[str, Any]]:
    """Infrastructure failures never advise checking parameters or authentication: one case per reply."""
    return [(r, lambda r=r: assert_no_misleading_hint(read(ctx, r), what=r)) for r in MISLEADING_HINT_REPLIES]


def judge_no_misleading_hint(ctx: GateContext) -> None:
    """Infrastructure failures never advise checking parameters or authentication, and do advise what to do."""
    __tracebackhide__ = True
    rt.collect([*misleading_hint_checks(ctx), *advice_checks(ctx)])


def advice_of(inv: Any) -> tuple[str, tuple[str, ...]]:
    """The recovery advice an error gives (its typed ``hint`` and ``actions``), blanks dropped."""
    err = inv.error or {}
    raw = err.get("hint")
    hint = raw if isinstance(raw, str) else ""
    actions = tuple(a.strip() for a in err.get("actions") or [] if isinstance(a, str) and a.strip())
    return hint.strip(), actions


#: One reply per error class of D1 §8.1 ("参数、权限、资源和基础设施错误给出不同恢复动作").
CLASS_REPLIES = {"parameter": "param-code", "permission": "permission", "resource": "not-found",
                 "infrastructure": "backend-dep-meta"}


def advice_checks(ctx: GateContext) -> list[tuple[str, Any]]:
    """Positive recovery advice (D1 §5 "恢复动作应直接提示'稍后重试并保留 trace ID'", §8.1): an infrastructure
    failure says to retry (``retryable`` true) and gives advice (a hint or actions); the four error classes of D1
    §8.1 each get advice of their own (no two classes the same). Typed fields only: whether advice is there and
    whether two classes share it, never what its words say."""

    def infra(reply: str) -> None:
        inv = read(ctx, reply)
        hint, actions = advice_of(inv)
        problems = []
        if not hint and not actions:
            problems.append("no recovery advice (.error.hint empty, no .error.actions)")
        if (inv.error or {}).get("retryable") is not True:
            problems.append(f".error.retryable is {(inv.error or {}).get('retryable', '<absent>')!r}, not true "
                            "(the advice must be to retry later)")
        if problems:
            fields = "hint,actions" if not hint and not actions else "retryable"
            raise Finding(f"{reply}: " + "; ".join(problems) + f"\n{inv.describe()}", reason=(inv.error or {})
                          .get("reason"), fields=fields)

    def per_class() -> None:
        advice = {k: advice_of(read(ctx, r)) for k, r in CLASS_REPLIES.items()}
        empty = sorted(k for k, (h, a) in advice.items() if not h and not a)
        same: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        for k, v in advice.items():
            if v[0] or v[1]:
                same.setdefault(v, []).append(k)
        shared = [sorted(ks) for ks in same.values() if len(ks) > 1]
        if empty or shared:
            parts = ([f"no advice for {', '.join(empty)}"] if empty else []) + \
                    [f"{' and '.join(ks)} get the same advice" for ks in shared]
            raise Finding("D1 §8.1: each error class gets its own recovery actions: " + "; ".join(parts)
                          + " (replies " + ", ".join(f"{k}={r}" for k, r in CLASS_REPLIES.items()) + ")",
                          classes=",".join(sorted({k for ks in shared for k in ks} | set(empty))))

    return [*((f"advice: {r}", lambda r=r: infra(r)) for r in MISLEADING_HINT_REPLIES),
            ("advice per class", per_class)]


def judge_auth_recovery(ctx: GateContext) -> None:
    """No `auth whoami`; auth recovery advice only names the allowed commands; nothing ever suggests whoami."""
    __tracebackhide__ = True
    prof = rt.profile(ctx)
    allowed = set(prof.cli["auth_actions"])
    whoami = " ".join(prof.cli["unknown_command"])

    def unknown() -> None:
        inv = inv_of(ctx, whoami_run(ctx))
        if inv.exit_code == 0:
            raise AssertionError(f"`dws {whoami}` must not exist (exit 0)\n{inv.describe()}")

    def advice() -> None:
        bad = []
        for s, inv in rt.everything(ctx):
            err = inv.error or {}
            for where, text in [("hint", err.get("hint"))] + [("actions", a) for a in err.get("actions") or []]:
                if not isinstance(text, str):
                    continue
                auth_like = text.strip().startswith(("dws auth", "dws profile"))
                if whoami.split()[-1] in text or (where == "actions" and auth_like and text.strip() not in allowed):
                    bad.append(f"{' '.join(s.args)}: .error.{where} = {text!r}")
        if bad:
            raise AssertionError("recovery advice outside {" + ", ".join(sorted(allowed)) + "}:\n  "
                                 + "\n  ".join(bad[:10]))

    def no_token() -> None:
        inv = inv_of(ctx, rt.read_probe(ctx, None, token=None))
        err = inv.error
        if inv.exit_code == 0 or err is None:
            raise AssertionError(f"a shortcut without a token must fail with a JSON error\n{inv.describe()}")

    rt.collect([("auth whoami", unknown), ("without token", no_token), ("advice", advice)])


def error_runs(ctx: GateContext) -> list[tuple[Spec, Any]]:
    """Every failed run of the D1 families under the JSON format (ERR-JSON-CONSISTENT and ERR-STABLE-FIELDS
    judge the same runs; the --format table run is judged on its labelled facts, see :func:`table_facts`)."""
    table = rt.read_probe(ctx, "backend-dep-meta", table=True)
    return [(s, inv) for s, inv in rt.everything(ctx) if inv.exit_code != 0 and s != table]


#: The replies put on the write probe (ERR-NO-UNSAFE-RETRY): a business failure, HTTP 503 and 429, a drop.
WRITE_REPLIES = ("backend-dep-meta", "http-503", "http-429", "drop")


def write_not_retried_checks(ctx: GateContext) -> list[tuple[str, Any]]:
    """A write whose execution state is unknown is sent exactly once, one case per failure kind."""
    prof = rt.profile(ctx)
    tool = prof.command(prof.probes["write"]).call

    def once(reply: str) -> None:
        inv = inv_of(ctx, write_run(ctx, reply))
        assert_call_count(inv, tool, 1, f"{reply} on the write")
        if inv.exit_code == 0:
            raise AssertionError(f"{reply} on the write: the failure was reported as success (exit 0)\n"
                                 f"{inv.describe()}")

    return [(attribution.write_case(r), lambda r=r: once(r)) for r in WRITE_REPLIES]
