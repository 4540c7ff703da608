"""Public assertion helpers: the ONE implementation of each check, used by the built-in gates and by
implementers' own tests (guide: docs/writing-tests.md). Each raises ``AssertionError`` with a readable,
deepdiff-rendered message and hides its own frame from tracebacks (``__tracebackhide__``). Structural
comparisons go through ``pytest_assertrepr_compare`` (:mod:`pytest_dws.compare`; the plugin registers this
module for assertion rewriting) and raise the same lines themselves outside pytest. :class:`Expected` gives a
plain ``assert`` in your own test the same rendering.

Example::

    from pytest_dws.assertions import assert_error_classified

    def test_backend_outage_is_classified(dws_run, fake_mcp):
        result = dws_run("chat", "+conversation-list", "--page-all")
        assert_error_classified(result, reason="backend_dependency_unavailable", origin="mcp_gateway",
                                stage="tool_metadata_lookup", exit_code=1)
"""

from __future__ import annotations

from typing import Any

from pytest_dws.compare import Expected, render_diff
from pytest_dws.compare import message as _diff_lines

__all__ = ["Expected", "assert_equal", "render_diff"]

#: pytest rewrote this module (pytest_dws.plugin registers it before anything imports it): a failed plain
#: ``assert`` here is then explained by ``pytest_assertrepr_compare`` (pytest_dws.compare).
_REWRITTEN = "@py_builtins" in globals()


def _pytest_explains() -> bool:
    """Whether pytest renders a failed ``assert`` of this module right now (rewritten, inside a test); else the
    helpers raise the same deepdiff text themselves, so messages read the same outside pytest."""
    if not _REWRITTEN:
        return False
    try:
        from _pytest.assertion import util
    except ImportError:  # pragma: no cover - pytest without the private module: plain messages
        return False
    return getattr(util, "_reprcompare", None) is not None


def assert_equal(expected: Any, actual: Any, what: str, *, context: str = "") -> None:
    """``expected == actual``, else an AssertionError naming ``what`` with a deepdiff of the two (through
    ``pytest_assertrepr_compare`` under pytest, the same lines raised directly elsewhere). ``what`` ending in
    ``:`` is the whole headline; ``context`` (e.g. ``inv.describe()``) is added to the message.

    Example::

        assert_equal({"risk": "high", "confirmation": "user_required"},
                     {k: leaf.get(k) for k in ("risk", "confirmation")}, "safety of chat.recall_message")
    """
    __tracebackhide__ = True
    if expected == actual:
        return
    if _pytest_explains():  # the diff is rendered by pytest_dws.compare.explain
        assert Expected(expected, what, context) == actual
    raise AssertionError("\n".join([*_diff_lines(expected, actual, what), *context.strip("\n").splitlines()]))


# ---------------------------------------------------------------------------------------------------------
# D1 runtime: error classification, chat targets, aliases, result truthfulness (ERR / TGT / ALI / SMK / ACC).
# They take an Invocation of pytest_dws.target (or a list of fake_mcp Records) and judge typed fields only
# (exit code, error.reason/category/origin/stage/retryable/execution_started/details, result flags, wire
# arguments), never message text.
# ---------------------------------------------------------------------------------------------------------

from pytest_dws.judge import MISLEADING_ADVICE as _MISLEADING_ADVICE  # noqa: E402 - section imports stay here
from pytest_dws.judge import looks_like_cid  # noqa: E402

__all__ += [
    "ABSENT", "assert_alias_equivalent", "assert_call_count", "assert_calls", "assert_cid_never_searched",
    "assert_complete_is_truthful", "assert_conflict_rejected", "assert_error_classified", "assert_exit_code",
    "assert_fails_closed", "assert_name_never_in_id_args", "assert_no_business_calls", "assert_no_list_tools",
    "assert_no_misleading_hint", "assert_not_called", "assert_reaches_target", "looks_like_cid",
]


class _Absent:
    """Marker for "this key must not be present" (``origin={ABSENT, "unknown"}`` = absent or unknown)."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Any = _Absent()

#: Recovery advice that sends an agent to parameters or authentication (GATES.md ERR-NO-MISLEADING-HINT); the
#: judge (pytest_dws.judge, stdlib only) holds the one definition, like the CID shape below.
MISLEADING_HINT = _MISLEADING_ADVICE
#: Tools that only turn a name into an ID; every other tools/call is a business call.
NAME_RESOLUTION = frozenset({"search_groups", "search_contact_by_key_word"})


def _records(run: Any) -> list[Any]:
    return list(getattr(run, "transcript", run) or [])


def _tool_calls(run: Any) -> list[Any]:
    return [r for r in _records(run) if getattr(r, "rpc_method", None) == "tools/call"]


def _context(run: Any) -> str:
    describe = getattr(run, "describe", None)
    return "\n" + describe() if callable(describe) else ""


def _wire(records: list[Any]) -> list[str]:
    import json

    return [f"{r.product}/{r.tool} {json.dumps(r.arguments, ensure_ascii=False, sort_keys=True)}"
            for r in records]


def assert_exit_code(inv: Any, expected: int | set[int], what: str = "exit code") -> None:
    """The process exit code is ``expected`` (an int, or a set of allowed codes).

    Example: ``assert_exit_code(inv, 0, "+chat-members-list --group <CID>")``
    """
    __tracebackhide__ = True
    allowed = expected if isinstance(expected, (set, frozenset)) else {expected}
    if inv.exit_code not in allowed:
        want = " or ".join(map(str, sorted(allowed)))
        raise AssertionError(f"{what}: expected exit {want}, got {inv.exit_code}{_context(inv)}")


def _field_ok(error: dict[str, Any], key: str, expected: Any) -> bool:
    options = expected if isinstance(expected, (set, frozenset, tuple, list)) else (expected,)
    if key not in error:
        return any(o is ABSENT for o in options)
    return any(o is not ABSENT and error[key] == o for o in options)


def assert_error_classified(inv: Any, *, exit_code: int | None = None, category: Any = None, reason: Any = None,
                            origin: Any = None, stage: Any = None, retryable: Any = None,
                            execution_started: Any = None, details: dict[str, Any] | None = None,
                            no_misleading_hint: bool = False, what: str = "") -> None:
    """A typed JSON error on stderr with these fields. Each expectation is a value, a set of allowed values,
    or :data:`ABSENT` (inside a set: absent is allowed too). ``None`` = not checked.

    Example::

        assert_error_classified(inv, exit_code=1, category="api", reason="backend_dependency_unavailable",
                                origin="mcp_gateway", stage="tool_metadata_lookup", no_misleading_hint=True)
        assert_error_classified(inv, reason="business_error", origin={ABSENT, "unknown"},
                                execution_started=ABSENT)
    """
    __tracebackhide__ = True
    label = f"{what}: " if what else ""
    error = inv.error
    if error is None:
        raise AssertionError(f"{label}no JSON error object on stderr (expected {{\"error\": {{...}}}})"
                             f"{_context(inv)}")
    if exit_code is not None:
        assert_exit_code(inv, exit_code, f"{label}exit code")
    wanted = {"category": category, "reason": reason, "origin": origin, "stage": stage, "retryable": retryable,
              "execution_started": execution_started}
    wrong = {k: (v, error.get(k, ABSENT)) for k, v in wanted.items() if v is not None and not _field_ok(error, k, v)}
    for key, value in (details or {}).items():
        got = (error.get("details") or {}).get(key, ABSENT) if isinstance(error.get("details"), dict) else ABSENT
        if not _field_ok({key: got} if got is not ABSENT else {}, key, value):
            wrong[f"details.{key}"] = (value, got)
    if wrong:
        lines = "\n".join(f"  .error.{k}: expected {e!r}, got {g!r}" for k, (e, g) in wrong.items())
        raise AssertionError(f"{label}the error is not classified as required:\n{lines}{_context(inv)}")
    if no_misleading_hint:
        assert_no_misleading_hint(inv, what=what)


def assert_no_misleading_hint(inv: Any, what: str = "") -> None:
    """The error's ``hint`` and ``actions`` do not send the agent to parameters or authentication.

    Example: ``assert_no_misleading_hint(inv)`` after an internal-dependency failure.
    """
    __tracebackhide__ = True
    error = inv.error
    if error is None:
        raise AssertionError(f"{what + ': ' if what else ''}no JSON error object on stderr to judge the recovery "
                             f"advice of{_context(inv)}")
    texts = [("hint", error.get("hint"))] + [(f"actions[{i}]", a) for i, a in enumerate(error.get("actions") or [])]
    bad = [(k, t) for k, t in texts if isinstance(t, str) and MISLEADING_HINT.search(t)]
    if bad:
        shown = "; ".join(f".error.{k} = {t!r}" for k, t in bad)
        raise AssertionError(f"{what + ': ' if what else ''}the recovery advice points at parameters or "
                             f"authentication: {shown}{_context(inv)}")


def assert_no_business_calls(run: Any, *, resolution: frozenset[str] = NAME_RESOLUTION, what: str = "") -> None:
    """No tools/call other than name resolution reached the backend.

    Example: ``assert_no_business_calls(inv, what="ambiguous --group")``
    """
    __tracebackhide__ = True
    business = [r for r in _tool_calls(run) if r.tool not in resolution]
    if business:
        raise AssertionError(f"{what + ': ' if what else ''}{len(business)} business call(s) reached the backend, "
                             f"expected none: {'; '.join(_wire(business))}{_context(run)}")


def assert_calls(run: Any, expected: list[tuple[Any, dict[str, Any] | None]], what: str = "") -> None:
    """The tools/call sequence is exactly ``expected``: ``(tool, args_subset)`` pairs in order, where ``tool``
    is a name, or an object with ``matches(record)``; ``args_subset`` (or None) must be contained in the
    arguments (a value may be a callable predicate).

    Example::

        assert_calls(inv, [("search_groups", {"keyword": "项目群"}),
                           ("get_group_members", {"openconversation_id": cid})])
    """
    __tracebackhide__ = True
    calls = _tool_calls(run)
    problems = []
    if len(calls) != len(expected):
        problems.append(f"expected {len(expected)} backend call(s), got {len(calls)}")
    for i, (record, (tool, subset)) in enumerate(zip(calls, expected, strict=False)):
        ok = tool.matches(record) if hasattr(tool, "matches") else record.tool == tool
        if not ok:
            problems.append(f"call {i + 1}: expected {tool}, got {record.product}/{record.tool}")
            continue
        for key, want in (subset or {}).items():
            got = (record.arguments or {}).get(key, ABSENT)
            good = want(got) if callable(want) else got == want
            if not good:
                shown = getattr(want, "__doc__", None) if callable(want) else repr(want)
                problems.append(f"call {i + 1} {record.tool}: argument {key!r} expected {shown}, got {got!r}")
    if problems:
        listing = "\n".join(f"  {p}" for p in problems)
        raise AssertionError(f"{what + ': ' if what else ''}backend calls differ:\n{listing}{_context(run)}")


def _id_values(value: Any, keys: frozenset[str], path: str = "$") -> list[tuple[str, Any]]:
    """(json path, value) of every string under a stable-ID key, recursively, list members too."""
    found: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            sub = f"{path}.{k}"
            if k in keys:
                items = v if isinstance(v, list) else [v]
                found += [(sub if not isinstance(v, list) else f"{sub}[{i}]", x) for i, x in enumerate(items)]
            found += _id_values(v, keys, sub)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _id_values(v, keys, f"{path}[{i}]")
    return found


def assert_name_never_in_id_args(run: Any, names: set[str], id_keys: set[str] | frozenset[str],
                                 what: str = "") -> None:
    """No natural name of the run appears under a stable-ID argument key (recursively, list members too).

    Example: ``assert_name_never_in_id_args(inv, {"项目群甲"}, {"openconversation_id", "openConversationIds"})``
    """
    __tracebackhide__ = True
    keys = frozenset(id_keys)
    folded = {n.strip().casefold() for n in names if isinstance(n, str) and n.strip()}
    bad = []
    for r in _tool_calls(run):
        for where, value in _id_values(r.arguments or {}, keys):
            if isinstance(value, str) and value.strip().casefold() in folded:
                bad.append(f"{r.product}/{r.tool} {where} = {value!r}")
    if bad:
        raise AssertionError(f"{what + ': ' if what else ''}a natural name reached a stable-ID argument: "
                             f"{'; '.join(bad)}{_context(run)}")


def assert_cid_never_searched(run: Any, *, tool: str = "search_groups", keyword: str = "keyword",
                              what: str = "") -> None:
    """No name-resolution call carries a CID-shaped keyword.

    Example: ``assert_cid_never_searched(inv)``
    """
    __tracebackhide__ = True
    bad = [r for r in _tool_calls(run) if r.tool == tool and looks_like_cid((r.arguments or {}).get(keyword))]
    if bad:
        raise AssertionError(f"{what + ': ' if what else ''}a CID was sent to {tool} as the {keyword!r}: "
                             f"{'; '.join(_wire(bad))}{_context(run)}")


def assert_no_list_tools(run: Any, what: str = "") -> None:
    """The implementation discovered nothing at runtime: no ``tools/list`` (nor ``initialize``) request.

    Example: ``assert_no_list_tools(inv)``
    """
    __tracebackhide__ = True
    bad = [r for r in _records(run) if getattr(r, "rpc_method", None) in ("tools/list", "initialize")]
    if bad:
        listing = ", ".join(f"{r.rpc_method} on {r.path}" for r in bad)
        raise AssertionError(f"{what + ': ' if what else ''}runtime discovery requests were sent: {listing}"
                             f"{_context(run)}")


def _invocation_view(inv: Any) -> Any:
    calls = [(r.path, r.tool, r.arguments) for r in _tool_calls(inv)]
    if calls:
        return {"backend calls": calls}
    return {"dry-run preview": inv.stdout_json}


def assert_alias_equivalent(alias: Any, canonical: Any, what: str = "") -> None:
    """Both runs exit 0 and yield the same invocation: the same ordered (path, tool, arguments) backend calls,
    or, when neither sent any (a dry-run of a write), the same stdout preview document.

    Example: ``assert_alias_equivalent(dws_run(..., "--text", "k"), dws_run(..., "--query", "k"))``
    """
    __tracebackhide__ = True
    label = f"{what}: " if what else ""
    for name, inv in (("alias", alias), ("canonical", canonical)):
        if inv.exit_code != 0:
            raise AssertionError(f"{label}the {name} spelling failed (exit {inv.exit_code}){_context(inv)}")
    a, c = _invocation_view(alias), _invocation_view(canonical)
    if c == {"dry-run preview": None}:
        raise AssertionError(f"{label}the canonical run sent nothing and printed no JSON: nothing to compare"
                             f"{_context(canonical)}")
    assert_equal(c, a, f"{label}the alias yields another invocation than the canonical spelling (canonical -> alias):",
                 context=_context(alias))


def assert_conflict_rejected(inv: Any, what: str = "") -> None:
    """Rejected before any request: exit 3, ``.error.category == "validation"``, zero backend requests.

    Example: ``assert_conflict_rejected(dws_run("chat", "+search-msg", "--query", "a", "--text", "a"))``
    """
    __tracebackhide__ = True
    label = f"{what}: " if what else ""
    error = inv.error or {}
    problems = []
    if inv.exit_code != 3:
        problems.append(f"exit {inv.exit_code} (expected 3)")
    if error.get("category") != "validation":
        problems.append(f".error.category = {error.get('category', ABSENT)!r} (expected 'validation')")
    sent = [r for r in _records(inv) if getattr(r, "rpc_method", None) is not None]
    if sent:
        problems.append(f"{len(sent)} request(s) reached the backend: {'; '.join(_wire(sent))}")
    if problems:
        raise AssertionError(f"{label}not rejected as a conflict: {'; '.join(problems)}{_context(inv)}")


def assert_complete_is_truthful(result: Any, *, complete: bool | None = None, what: str = "") -> None:
    """A paginated result's completeness flags agree with each other (and with ``complete`` when given):
    complete => not partial, hasMore false, failedCount 0, no failures; failedCount == len(failures);
    failures present => not complete.

    Example: ``assert_complete_is_truthful(inv.stdout_json, complete=False)`` after a page-2 failure.
    """
    __tracebackhide__ = True
    label = f"{what}: " if what else ""
    if not isinstance(result, dict):
        raise AssertionError(f"{label}no JSON result object on stdout (got {type(result).__name__})")
    problems = []
    flag = result.get("complete", ABSENT)
    if not isinstance(flag, bool):
        problems.append(f".complete = {flag!r} (expected true or false)")
    failures = result.get("failures", [])
    failed = result.get("failedCount", ABSENT)
    if failed is not ABSENT and isinstance(failures, list) and failed != len(failures):
        problems.append(f".failedCount = {failed!r} but {len(failures)} failure(s) listed")
    if flag is True:
        for key, bad in (("partial", True), ("hasMore", True)):
            if result.get(key) is bad:
                problems.append(f".complete is true but .{key} = {bad}")
        if failures or (isinstance(failed, int) and failed > 0):
            problems.append(f".complete is true but failures are reported (failedCount {failed!r})")
    if flag is False and result.get("partial") is False and (failures or result.get("failedCount")):
        problems.append(".partial is false although failures are reported")
    if complete is not None and flag is not complete:
        problems.append(f".complete = {flag!r}, expected {complete}")
    if problems:
        shown = {k: result.get(k) for k in ("complete", "partial", "hasMore", "failedCount", "failures",
                                             "stopReason", "pagesFetched") if k in result}
        raise AssertionError(f"{label}the result is not truthful about completeness: {'; '.join(problems)}\n"
                             f"  flags: {shown}")


def _matching(run: Any, tool: Any) -> list[Any]:
    return [r for r in _tool_calls(run) if (tool.matches(r) if hasattr(tool, "matches") else r.tool == tool)]


def assert_call_count(run: Any, tool: Any, allowed: int | range, what: str = "") -> None:
    """``tool`` (a name, or an object with ``matches(record)``) was called ``allowed`` times (an int, or a range
    such as ``range(1, 3)`` = once, or once more as a retry).

    Example: ``assert_call_count(inv, "update_group_name", 1, what="write after HTTP 503: never retried")``
    """
    __tracebackhide__ = True
    sent = _matching(run, tool)
    ok = len(sent) in allowed if isinstance(allowed, range) else len(sent) == allowed
    if not ok:
        want = (f"{allowed.start}..{allowed.stop - 1}" if isinstance(allowed, range) else str(allowed))
        raise AssertionError(f"{what + ': ' if what else ''}{tool} was called {len(sent)} time(s), expected {want}"
                             f"{_context(run)}")


def assert_fails_closed(run: Any, *, resolution_allowed: bool = True, what: str = "") -> None:
    """The run failed (non-zero exit) before any business call; with ``resolution_allowed=False`` before any
    backend call at all (e.g. a natural name given to a stable-ID flag).

    Example: ``assert_fails_closed(dws_run("chat", "+chat-rename", "--group", "同名群", "--name", "x", "--yes"))``
    """
    __tracebackhide__ = True
    label = f"{what}: " if what else ""
    calls = _tool_calls(run)
    sent = [r for r in calls if r.tool not in NAME_RESOLUTION] if resolution_allowed else calls
    if run.exit_code == 0 or sent:
        kind = "business call" if resolution_allowed else "backend call"
        raise AssertionError(f"{label}must fail closed before any {kind} (exit {run.exit_code}, {len(sent)} "
                             f"{kind}(s){': ' + '; '.join(_wire(sent)) if sent else ''}){_context(run)}")


def assert_not_called(run: Any, tool: Any, what: str = "") -> None:
    """No tools/call of ``tool`` (a name, or an object with ``matches(record)``) was sent.

    Example: ``assert_not_called(inv, "search_groups", what="--group <CID> must not search")``
    """
    __tracebackhide__ = True
    bad = _matching(run, tool)
    if bad:
        raise AssertionError(f"{what + ': ' if what else ''}{tool} was called {len(bad)} time(s), expected never: "
                             f"{'; '.join(_wire(bad))}{_context(run)}")


def assert_reaches_target(run: Any, tool: Any, id_key: str, cids: list[str], *, args: dict[str, Any] | None = None,
                          what: str = "") -> None:
    """The business call ``tool`` was sent, and every such call carries exactly ``cids`` under ``id_key``
    (a list value is compared as a set) plus the ``args`` subset.

    Example: ``assert_reaches_target(inv, "get_group_members", "openconversation_id", [cid])``
    """
    __tracebackhide__ = True
    label = f"{what}: " if what else ""
    hits = _matching(run, tool)
    if not hits:
        raise AssertionError(f"{label}the business call {tool} was never sent{_context(run)}")
    problems = []
    for r in hits:
        value = (r.arguments or {}).get(id_key, ABSENT)
        got = value if isinstance(value, list) else [value]
        if sorted(map(str, got)) != sorted(cids) or len(got) != len(cids):
            problems.append(f"{r.tool} {id_key} = {value!r}, expected {cids[0] if len(cids) == 1 else cids!r}")
        for key, want in (args or {}).items():
            if (r.arguments or {}).get(key, ABSENT) != want:
                problems.append(f"{r.tool} {key} = {(r.arguments or {}).get(key, ABSENT)!r}, expected {want!r}")
    if problems:
        raise AssertionError(f"{label}the business call carries the wrong target: {'; '.join(problems)}"
                             f"{_context(run)}")


# ---------------------------------------------------------------------------------------------------------
# D2 schema command, help and regeneration (SCH / SCHCLI / FIN binary and source gates). File maps are
# {relative posix path: bytes}; an Invocation is one run of pytest_dws.target.
# ---------------------------------------------------------------------------------------------------------

__all__ += ["assert_byte_identical_regeneration", "assert_no_requests", "assert_summary_projects_leaf"]

#: ToolSpec.ToSummaryPayload (GATES.md SCHCLI-PROJECTION): a summary is the full leaf minus these keys.
SUMMARY_DROP_KEYS = frozenset({
    "parameters", "has_parameters", "parameter_count", "constraints", "positionals", "examples", "effect_source",
    "agent_source_refs", "field_provenance", "path", "source", "product_id", "display", "is_alias",
})


def assert_no_requests(run: Any, what: str = "") -> None:
    """The fake MCP server received nothing at all during this run (no tools/call, no discovery, no probe).

    Example: ``assert_no_requests(runner.run("--help", backend=srv, token=None, globals_=False))``
    """
    __tracebackhide__ = True
    records = _records(run)
    if records:
        listing = ", ".join(f"{getattr(r, 'rpc_method', None) or getattr(r, 'http_method', '?')} on "
                            f"{getattr(r, 'path', '?')}" for r in records[:10])
        raise AssertionError(f"{what + ': ' if what else ''}{len(records)} request(s) reached the fake server: "
                             f"{listing}{_context(run)}")
    egress = getattr(run, "egress", None)
    if egress:  # no network at all: it also tried to reach a host off the machine (refused by the proxy)
        raise AssertionError(f"{what + ': ' if what else ''}tried to leave the machine: {', '.join(egress)} (refused)"
                             f"{_context(run)}")


def assert_byte_identical_regeneration(expected: dict[str, bytes], actual: dict[str, bytes], what: str) -> None:
    """Two file maps are byte-identical: same relative paths, same bytes (first differing offset shown).

    Example: ``assert_byte_identical_regeneration(committed, regenerated, "regenerated catalog vs committed")``
    """
    __tracebackhide__ = True
    problems = [f"  only in the first: {p}" for p in sorted(set(expected) - set(actual))]
    problems += [f"  only in the second: {p}" for p in sorted(set(actual) - set(expected))]
    for path in sorted(set(expected) & set(actual)):
        a, b = expected[path], actual[path]
        if a != b:
            offset = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            line = a[:offset].count(b"\n") + 1
            problems.append(f"  differs: {path} (first difference at byte {offset}, line {line}; "
                            f"{len(a)} vs {len(b)} bytes)")
    if problems:
        more = f"\n  ... {len(problems) - 30} more" if len(problems) > 30 else ""
        raise AssertionError(f"{what}: {len(problems)} file difference(s):\n" + "\n".join(problems[:30]) + more)


def assert_summary_projects_leaf(summary: dict[str, Any], leaf: dict[str, Any], what: str) -> None:
    """A progressive summary equals its full leaf minus SUMMARY_DROP_KEYS (never assembled independently).

    Example: ``assert_summary_projects_leaf(product["tools"][0], full_leaf, "schema chat: chat.x")``
    """
    __tracebackhide__ = True
    expected = {k: v for k, v in leaf.items() if k not in SUMMARY_DROP_KEYS}
    assert_equal(expected, summary, f"{what}: the summary is not the projection of the full leaf (expected -> actual):")


# ---------------------------------------------------------------------------------------------------------
# D1 §6, §9, §10: judged outcomes and dataset runs (DS / MET / REL / FIT). They take an Invocation (or a
# pytest_dws.judge.Outcome) and pytest_dws.datasets.CaseResult lists; verdicts come from pytest_dws.judge.
# ---------------------------------------------------------------------------------------------------------

__all__ += ["assert_cases_pass", "assert_judged"]


def assert_judged(run: Any, klass: str, what: str = "") -> Any:
    """The judge puts this outcome in layer ``klass`` (D1 §6); returns the Judgement.

    Example: ``assert_judged(inv, "expected_resolution_stop")`` for a same-name group that must stop.
    """
    __tracebackhide__ = True
    from pytest_dws.judge import Outcome, judge

    outcome = run if isinstance(run, Outcome) else Outcome.from_invocation(run)
    verdict = judge(outcome)
    if verdict.klass != klass:
        shown = {k: v for k, v in verdict.evidence.items() if v not in (None, [], 0, False) or k == "exit_code"}
        raise AssertionError(f"{what or 'outcome'}: judged {verdict.klass}, expected {klass}\n  evidence: {shown}")
    return verdict


def assert_cases_pass(results: list[Any], what: str, *, replay: str = "", limit: int = 12) -> None:
    """Every dataset case had its expected outcome; the message lists the failing cases with their problems.

    Example: ``assert_cases_pass(run_cases(ctx, load_dataset("holdout")), "safety holdout")``.
    """
    __tracebackhide__ = True
    bad = [r for r in results if not r.passed and not r.not_applicable]
    if not bad:
        return
    lines = [f"{what}: {len(bad)} of {len(results)} cases did not have their expected outcome"
             + (f" ({replay})" if replay else "")]
    for r in bad[:limit]:
        lines.append(f"  {r.case.id}: {'; '.join(r.problems)}")
        lines.append(f"      argv: {' '.join(r.argv)}")
    if len(bad) > limit:
        lines.append(f"  ... {len(bad) - limit} more")
    raise AssertionError("\n".join(lines))


# ---- catalog / DATA gates (pytest_dws.catalog; D2 §5, §9) -----------------------------------------------
# The rules live in pytest_dws.catalog.checks as pure functions (problem lists), so the DATA gates (files)
# and the BIN gates (`dws schema` output) judge with the same code; these wrappers raise.

__all__ += [
    "assert_agent_fields", "assert_constraints_valid", "assert_counts",
    "assert_destructive_requires_confirmation",
    "assert_examples_safe", "assert_high_risk_confirmed", "assert_interface_facts_bounded",
    "assert_interface_ref", "assert_mcp_summary_unreviewed", "assert_no_credentials", "assert_no_problems",
    "assert_product_fields", "assert_same_keys",
]


def assert_no_problems(problems: list[str], what: str, *, limit: int = 30) -> None:
    """Fail listing ``problems`` (one per line) when there are any.

    Example::

        assert_no_problems(checks.examples(tool), f"examples of {tool['canonical_path']}")
    """
    __tracebackhide__ = True
    if problems:
        shown = "\n".join(f"  - {p}" for p in problems[:limit])
        more = f"\n  ... {len(problems) - limit} more" if len(problems) > limit else ""
        raise AssertionError(f"{what}: {len(problems)} problem(s)\n{shown}{more}")


def assert_agent_fields(tool: dict[str, Any], generation: str = "e81") -> None:
    """SCH-AGENT-FIELDS on one leaf (``generation`` "cf" also requires non-empty selection arrays and allows
    interface_mode "unavailable").

    Example::

        assert_agent_fields(schema_leaf, generation="e81")
    """
    __tracebackhide__ = True
    from pytest_dws.catalog import checks

    assert_no_problems(checks.agent_fields(tool, generation), f"agent fields of {tool.get('canonical_path')}")


def assert_product_fields(product: dict[str, Any]) -> None:
    """SCH-AGENT-FIELDS on one product: a non-empty agent_summary."""
    __tracebackhide__ = True
    from pytest_dws.catalog import checks

    assert_no_problems(checks.product_fields(product), f"agent fields of product {product.get('id')}")


def assert_interface_ref(tool: dict[str, Any], generation: str = "e81", snapshot_ref: Any = None) -> None:
    """SCH-INTERFACE-REF on one leaf; ``snapshot_ref`` (the pinned MCP snapshot's ref for this tool, if any)
    must equal the leaf's ref when the leaf is an mcp tool.

    Example::

        assert_interface_ref(leaf, "cf", snapshot_ref=mcp["tools"][key]["interface_ref"])
    """
    __tracebackhide__ = True
    from pytest_dws.catalog import checks

    problems = checks.interface_ref(tool, generation)
    if snapshot_ref is not None and tool.get("interface_mode") == "mcp" and tool.get("interface_ref") != snapshot_ref:
        problems.append("interface_ref differs from the pinned MCP snapshot (expected -> actual):\n"
                        + render_diff(snapshot_ref, tool.get("interface_ref")))
    assert_no_problems(problems, f"interface contract of {tool.get('canonical_path')}")


def assert_examples_safe(tool: dict[str, Any]) -> None:
    """SCH-EXAMPLES: every example starts with ``dws <primary_cli_path>`` and never contains ``--yes``."""
    __tracebackhide__ = True
    from pytest_dws.catalog import checks

    assert_no_problems(checks.examples(tool), f"examples of {tool.get('canonical_path')}")


def assert_destructive_requires_confirmation(tool: dict[str, Any]) -> None:
    """SCH-DESTRUCTIVE: effect=destructive => risk=high and confirmation=user_required (any other leaf passes).

    Example::

        assert_destructive_requires_confirmation(dws_tool("chat.recall_message"))
    """
    __tracebackhide__ = True
    from pytest_dws.catalog import checks

    found = checks.safety_expectation(tool)
    if found is not None:
        assert_equal(found[0], found[1], f"safety of destructive tool {tool.get('canonical_path')}")


def assert_high_risk_confirmed(tool: dict[str, Any], runtime_gate: str | None = None, gated: bool = False) -> None:
    """SCH-HIGH-RISK-CONFIRM: risk=high => user_required; ``gated`` adds the e81 runtime_gate truth."""
    __tracebackhide__ = True
    from pytest_dws.catalog import checks

    assert_no_problems(checks.high_risk_confirmation(tool, runtime_gate, gated),
                       f"confirmation of {tool.get('canonical_path')}")


def assert_constraints_valid(tool: dict[str, Any]) -> None:
    """SCH-CONSTRAINTS: known kinds, >= 2 members per group, members are parameters or positionals."""
    __tracebackhide__ = True
    from pytest_dws.catalog import checks

    assert_no_problems(checks.constraints(tool), f"constraints of {tool.get('canonical_path')}")


def assert_mcp_summary_unreviewed(tool: dict[str, Any]) -> None:
    """SCH-MCP-UNREVIEWED: an agent_summary derived from MCP is marked reviewed:false."""
    __tracebackhide__ = True
    from pytest_dws.catalog import checks

    assert_no_problems(checks.mcp_summary_unreviewed(tool), f"summary review of {tool.get('canonical_path')}")


def assert_interface_facts_bounded(tool: dict[str, Any]) -> None:
    """SCH-INTERFACE-FACTS-BOUNDED: no identity/safety/selection field decided by an MCP fact."""
    __tracebackhide__ = True
    from pytest_dws.catalog import checks

    assert_no_problems(checks.facts_bounded(tool), f"decision sources of {tool.get('canonical_path')}")


def assert_no_credentials(name: str, raw: bytes, data: Any) -> None:
    """SCH-NO-CREDENTIALS on one artifact: no endpoint/credential keys, no credential-looking text.

    Example::

        out = dws("schema", "--all").stdout_bytes
        assert_no_credentials("dws schema --all", out, json.loads(out))
    """
    __tracebackhide__ = True
    from pytest_dws.catalog.credentials import scan

    assert_no_problems(scan(raw, data), f"credential material in {name}")


def assert_counts(expected: dict[str, Any], actual: dict[str, Any], what: str) -> None:
    """Counts equal where ``expected`` pins them (None = not pinned: only ``actual`` is reported).

    Example::

        assert_counts({"tools": ctx.expect.get("tools")}, {"tools": len(release.tools)}, "catalog counts")
    """
    __tracebackhide__ = True
    pinned = {k: v for k, v in expected.items() if v is not None}
    observed = {k: actual.get(k) for k in pinned}
    assert_equal(pinned, observed, what)


def assert_same_keys(expected: Any, actual: Any, what: str, *, limit: int = 20) -> None:
    """Two key sets are equal; the message lists what is missing and what is extra (sorted)."""
    __tracebackhide__ = True
    expected, actual = set(expected), set(actual)
    if expected != actual:
        missing, extra = sorted(expected - actual), sorted(actual - expected)
        raise AssertionError(
            f"{what} differ: {len(missing)} missing, {len(extra)} extra\n"
            f"  missing: {missing[:limit]}{' ...' if len(missing) > limit else ''}\n"
            f"  extra:   {extra[:limit]}{' ...' if len(extra) > limit else ''}")
