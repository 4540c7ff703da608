"""Server-failure classification's runs and judges (D1 §3, §5, §7.1, §8.1): shared by ERR and ACC.

The profile's read probe is run under each fault reply of ``fixtures/scenarios/d1/faults.toml``; the judges
assert typed fields only (reason, origin, stage, retryable, exit code), never message text."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from pytest_dws.assertions import (
    assert_call_count,
    assert_error_classified,
)
from pytest_dws.assertions.core import facts_of
from pytest_dws.core.errors import Finding
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.advice import AdviceClass
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.runtime import WORLD, Sc, Spec
from pytest_dws.observe.runtime.profiles import configured_profiles, profiles_home, profiles_setup
from pytest_dws.verdict import attribution

F = "ERR"

EXIT_CODES = {"api": 1, "auth": 2, "validation": 3, "internal": 5, "discovery": 6}

#: Replies that are server failures (the classifier's input), judged for execution_started and JSON shape.
SERVER_FAILURES = ("backend-dep-meta", "backend-dep-meta-iserror", "backend-dep-meta-structured", "backend-dep",
                   "replay-d1-2-2", "param-code", "param-message", "code-primary-meta", "code-primary",
                   "diag-camel", "permission", "not-found", "bare",
                   "code-network-neutral", "code-network-contra", "code-param-neutral", "code-permission-neutral",
                   "code-permission-contra", "code-notfound-neutral", "code-notfound-contra",
                   "exec-started-false", "exec-started-true")


def write_run(ctx: GateContext, reply: str) -> Spec:
    """The write probe on the unique group's CID (no resolution), confirmed, with ``reply`` on the write."""
    prof = rt.profile(ctx)
    cmd = prof.command(prof.probes["write"])
    return rt.spec(cmd, [cmd.group or "--group", rt.cast(ctx).cid], sc=Sc(reply=reply, on=str(cmd.call)), prof=prof)


def whoami_run(ctx: GateContext) -> Spec:
    return rt.call_of(WORLD, rt.profile(ctx).cli["unknown_command"])


@rt.provider(F)
def _runs(ctx: GateContext) -> Iterable[Spec]:
    for reply in dict.fromkeys((*SERVER_FAILURES, "http-503", "http-429", *rt.profile(ctx).advice.replies())):
        yield rt.read_probe(ctx, reply)  # the advice classes' replies: every failure path, the transport's too
    yield rt.read_probe(ctx, "backend-dep-meta", table=True)
    yield rt.read_probe(ctx, None, token=None)
    for reply in (*WRITE_REPLIES, MAY_RETRY):
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


def advice_classes(ctx: GateContext) -> tuple[AdviceClass, ...]:
    """The error classes whose recovery advice is judged, with their replies and actions (profile ``[advice]``)."""
    return rt.profile(ctx).advice.classes


def judge_reply_advice(ctx: GateContext, reply: str) -> None:
    """The advice of ``reply`` names no action its class (the profile's class holding the reply) may not name."""
    __tracebackhide__ = True
    for klass in advice_classes(ctx):
        if reply in klass.replies:
            judge_advice_avoids(ctx, klass, reply)


def advice_of(inv: Any) -> tuple[str, tuple[str, ...]]:
    """The recovery advice an error gives (its typed ``hint`` and ``actions``), blanks dropped."""
    err = inv.error or {}
    raw = err.get("hint")
    hint = raw if isinstance(raw, str) else ""
    actions = tuple(a.strip() for a in err.get("actions") or [] if isinstance(a, str) and a.strip())
    return hint.strip(), actions


def advice_fields(inv: Any) -> list[tuple[str, str]]:
    """``(field, text)`` of each piece of advice: ``hint`` and ``actions[i]``."""
    hint, actions = advice_of(inv)
    return ([("hint", hint)] if hint else []) + [(f"actions[{i}]", a) for i, a in enumerate(actions)]


def judge_advice_avoids(ctx: GateContext, klass: AdviceClass, reply: str) -> None:
    """No field of the advice names an action its class may not name (D1 §5, §7.1 b5, §10: an internal-dependency
    or gateway failure never sends the Agent to its parameters, its authentication or its permissions)."""
    __tracebackhide__ = True
    inv = read(ctx, reply)
    if inv.error is None:
        raise Finding(f"{reply}: no JSON error object on stderr to judge the recovery advice of\n{inv.describe()}",
                      **facts_of(inv, error="absent"))
    advice = rt.profile(ctx).advice
    bad = [(k, t, sorted(advice.kinds(t) & set(klass.may_not))) for k, t in advice_fields(inv)]
    bad = [b for b in bad if b[2]]
    if bad:
        shown = "; ".join(f".error.{k} = {t!r} ({', '.join(kinds)})" for k, t, kinds in bad)
        raise Finding(f"{reply} ({klass.name}): the recovery advice tells the Agent to do what this class's action is "
                      f"not: {shown}\n{inv.describe()}",
                      **facts_of(inv, fields=",".join(sorted({k.split("[")[0] for k, _, _ in bad}))))


def judge_advice_names(ctx: GateContext, klass: AdviceClass, reply: str) -> None:
    """The advice (hint and actions together) names every action of its class (D1 §5 "恢复动作应直接提示'稍后重试并
    保留 trace ID'", §8.1: each class its own action), and carries the class's typed ``retryable``."""
    __tracebackhide__ = True
    inv = read(ctx, reply)
    err = inv.error or {}
    fields = advice_fields(inv)
    problems, facts = [], []
    if not fields:
        problems.append("no recovery advice (.error.hint empty, no .error.actions)")
        facts.append("hint,actions")
    else:
        named = set().union(*(rt.profile(ctx).advice.kinds(t) for _, t in fields))
        missing = [k for k in klass.must if k not in named]
        if missing:
            problems.append(f"the advice does not tell the Agent to {', '.join(missing)} (it names "
                            f"{', '.join(sorted(named)) or 'no action'}: " + "; ".join(f".error.{k} = {t!r}"
                                                                                    for k, t in fields) + ")")
            facts.append("advice")
    if klass.retryable is not None and err.get("retryable") is not klass.retryable:
        problems.append(f".error.retryable is {err.get('retryable', '<absent>')!r}, not "
                        f"{str(klass.retryable).lower()} (the advice must be to retry later)")
        facts.append("retryable")
    if problems:
        raise Finding(f"{reply} ({klass.name}): " + "; ".join(problems) + f"\n{inv.describe()}",
                      reason=err.get("reason"), fields=",".join(facts))


def misleading_hint_checks(ctx: GateContext) -> list[tuple[str, Any]]:
    """No class's advice names an action the class may not name: one case per reply (failure path)."""
    return [(r, lambda k=k, r=r: judge_advice_avoids(ctx, k, r))
            for k in advice_classes(ctx) if k.may_not for r in k.replies]


def judge_no_misleading_hint(ctx: GateContext) -> None:
    """Each error class's advice names its own action and none it may not (one case per reply and rule)."""
    __tracebackhide__ = True
    rt.collect([*misleading_hint_checks(ctx), *advice_checks(ctx)])


#: One reply per error class of D1 §8.1 ("参数、权限、资源和基础设施错误给出不同恢复动作").
CLASS_REPLIES = {"parameter": "param-code", "permission": "permission", "resource": "not-found",
                 "infrastructure": "backend-dep-meta"}


def advice_checks(ctx: GateContext) -> list[tuple[str, Any]]:
    """Positive recovery advice (D1 §5, §8.1): each class's advice names its class's actions (``advice: <reply>``,
    one case per reply), and the four error classes of D1 §8.1 each get advice of their own (no two the same)."""

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

    return [*((f"advice: {r}", lambda k=k, r=r: judge_advice_names(ctx, k, r))
              for k in advice_classes(ctx) for r in k.replies),
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


#: The replies put on the write probe (ERR-NO-UNSAFE-RETRY): a business failure, HTTP 503 and 429, a drop, and a
#: failure after which the backend says the write started (D1 §3.2); the reply that says it did NOT start is the
#: one after which a write may be sent once more (:data:`MAY_RETRY`).
WRITE_REPLIES = ("backend-dep-meta", "http-503", "http-429", "drop", "exec-started-true")
MAY_RETRY = "exec-started-false"


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

    def at_most_twice() -> None:
        inv = inv_of(ctx, write_run(ctx, MAY_RETRY))
        assert_call_count(inv, tool, range(1, 3), f"{MAY_RETRY} on the write (at most one retry)")

    return [*((attribution.write_case(r), lambda r=r: once(r)) for r in WRITE_REPLIES),
            (attribution.write_case(MAY_RETRY), at_most_twice)]


def judge_retry_scope(ctx: GateContext) -> None:
    """Over every run of the D1 families: a command's business call is sent with the same arguments at most twice
    (one retry), and twice only when the run's own schema (`dws schema --all`) marks the command read-only, or
    after the backend said execution_started=false (D1 §3.2 "过渡期最多只对最终 Schema 标记为只读的命令重试一次";
    "只有在后端提供 execution_started=false 后，才可对读写命令统一安全重试"). A command the schema does not list is
    not marked read-only."""
    from pytest_dws.observe.binary.views import bin_schema

    prof = rt.profile(ctx)
    view = bin_schema(ctx)
    problems = []
    for s, inv in rt.everything(ctx):
        cmd = attribution.command_of(prof, list(s.args))
        if cmd is None or cmd.call is None:
            continue
        sent = Counter(json.dumps(r.arguments, sort_keys=True, ensure_ascii=False) for r in inv.calls()
                       if cmd.call.matches(r))
        args = list(s.args)
        # a multi-profile run (--profile a,b) runs the command once per profile: its budget is per profile
        runs = len(args[args.index("--profile") + 1].split(",")) if "--profile" in args[:-1] else 1
        again = -(-max(sent.values(), default=0) // runs)
        if again < 2:
            continue
        key = view.primary.get(" ".join(cmd.path))
        effect = view.tools[key].get("effect") if key else None
        not_started = isinstance(s.scenario, Sc) and s.scenario.reply == MAY_RETRY
        if again > 2:
            problems.append(f"`{' '.join(s.args)}`: {cmd.call} sent {again} times with the same arguments (more "
                            "than one retry)")
        elif effect != "read" and not not_started:
            problems.append(f"`{' '.join(s.args)}`: {cmd.call} retried although the schema marks the command "
                            f"{effect or 'not at all'!r}, not read-only, and the backend never said "
                            "execution_started=false")
    if problems:
        raise Finding(f"{len(problems)} run(s) retried outside D1 §3.2's boundary:\n  " + "\n  ".join(problems[:10]),
                      retried=len(problems))


# -- multi-profile aggregation (D1 §11.1 "multi-profile 聚合保留错误恢复语义、resolution candidates 和诊断字段") ----
#: The typed fields a multi-profile aggregate must keep per failing profile, as the single-profile error has them.
AGGREGATE_KEEPS = ("category", "reason", "origin", "stage", "execution_started", "retryable", "hint", "actions",
                   "trace_id", "server_error_code")


def multi_profile_run(ctx: GateContext, s: Spec) -> Spec:
    """``s`` with every configured profile at once (``--profile a,b``): the profiles' own tokens (no --token), or
    the run's global one where ``[profiles] token`` says it serves them all."""
    from pytest_dws.observe.calls import Call

    spec = profiles_setup(ctx)
    env, files = profiles_home(spec)
    return Call(("--profile", spec["selector"], *s.args), globals_=s.globals_,
                token=s.token if spec.get("token") else None, scenario=s.scenario, env=env, files=files)


def _aggregate_entries(inv: Any, what: str) -> list[dict[str, Any]]:
    doc = inv.stdout_json if isinstance(inv.stdout_json, dict) else inv.stderr_json
    rows = doc.get("profiles") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise Finding(f"{what}: no aggregate with one entry per profile (.profiles) on stdout or stderr\n"
                      f"{inv.describe()}", exit=inv.exit_code)
    return rows


def judge_multi_profile(ctx: GateContext, single: Spec, keys: tuple[str, ...], what: str) -> None:
    """The aggregate of ``single`` run with every profile keeps, for each profile, the typed fields ``keys`` of the
    single-profile error (recovery semantics, diagnostics, a resolution's candidates)."""
    alone = inv_of(ctx, single)
    expected = {k: v for k, v in (alone.error or {}).items() if k in keys}
    if not expected:
        raise Finding(f"{what}: the single-profile run has no typed error to compare\n{alone.describe()}")
    inv = inv_of(ctx, multi_profile_run(ctx, single))
    rows = _aggregate_entries(inv, what)
    count = len(configured_profiles(profiles_setup(ctx)))
    problems = [] if len(rows) == count else [f"{len(rows)} entries for {count} profiles"]
    for i, row in enumerate(rows):
        raw = row.get("error")
        err: dict[str, Any] = raw if isinstance(raw, dict) else {}
        lost = sorted(k for k, v in expected.items() if err.get(k) != v)
        if lost:
            problems.append(f"profile {row.get('selector') or i}: lost or changed {', '.join(lost)}")
    if problems:
        raise Finding(f"{what}: the multi-profile aggregate does not keep the single-profile error: "
                      + "; ".join(problems) + f"\n{inv.describe()}", fields=",".join(sorted(expected)))


def multi_profile_checks(ctx: GateContext) -> list[tuple[str, Any]]:
    """One case for a server failure's recovery semantics and diagnostics, one for a resolution's candidates."""
    from pytest_dws.observe.runtime import targets

    profiles_setup(ctx)
    prof = rt.profile(ctx)
    checks: list[tuple[str, Any]] = [("backend-dep-meta", lambda: judge_multi_profile(
        ctx, rt.read_probe(ctx, "backend-dep-meta"), AGGREGATE_KEEPS, "backend-dep-meta with every profile"))]
    for key in targets.ambiguity_commands(ctx)[:1]:
        amb = targets.ambiguous_run(ctx, prof.commands[key])
        checks.append((f"{key} candidates", lambda amb=amb, key=key: judge_multi_profile(
            ctx, amb, (*AGGREGATE_KEEPS, "details"), f"{key} <same-name groups> with every profile")))
    return checks
