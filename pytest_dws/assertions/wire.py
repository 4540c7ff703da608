"""What reached the fake backend (D1 §4, §5, D2 §7): business calls, stable IDs, searches, alias equivalence."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fake_mcp.transcript import is_write_tool
from pytest_dws.assertions.core import assert_equal, context_of, facts_of, run_records, tool_calls, wire_lines
from pytest_dws.assertions.errors import ABSENT
from pytest_dws.core.errors import Finding
from pytest_dws.core.outcome import looks_like_cid

#: Tools that only turn a name into an ID; every other tools/call is a business call.
NAME_RESOLUTION = frozenset({"search_groups", "search_contact_by_key_word"})


def assert_no_business_calls(run: Any, *, resolution: frozenset[str] = NAME_RESOLUTION, what: str = "") -> None:
    """No tools/call other than name resolution reached the backend.

    Example: ``assert_no_business_calls(inv, what="ambiguous --group")``
    """
    __tracebackhide__ = True
    business = [r for r in tool_calls(run) if r.tool not in resolution]
    if business:
        raise Finding(f"{what + ': ' if what else ''}{len(business)} business call(s) reached the backend, "
                      f"expected none: {'; '.join(wire_lines(business))}{context_of(run)}", **facts_of(run))


def _matches(tool: Any, record: Any) -> bool:
    return bool(tool.matches(record)) if hasattr(tool, "matches") else record.tool == tool


def assert_resolved_then_called(run: Any, resolver: Any, keyword: str, names: Iterable[str], call: Any,
                                what: str = "", *, cids: Iterable[str] = (),
                                stable_keys: Iterable[str] = ()) -> None:
    """D1 §4 rule 2 as the order a run given natural names must keep: the names are resolved by search
    (``resolver`` calls whose ``keyword`` is each name: one page or many, in any order; nothing else searched), no
    write and no call carrying a resolved CID (``cids`` under ``stable_keys``) comes before the resolution ended
    (the CID is not known before), and the business call (``call``) follows it. Other read-only calls (a lookup
    that verifies the CID, an enrichment) may come anywhere: no sentence forbids them (issue 35 rule 2). Which CID
    the effect lands on is :func:`assert_target_effect`'s.

    Example: ``assert_resolved_then_called(inv, "search_groups", "keyword", ["项目群"], "get_group_members")``
    """
    __tracebackhide__ = True
    calls = tool_calls(run)
    searches = [r for r in calls if _matches(resolver, r)]
    last = max((i for i, r in enumerate(calls) if _matches(resolver, r)), default=-1)
    problems, breach = [], None
    searched = {str((r.arguments or {}).get(keyword)) for r in searches}
    missing = sorted(set(names) - searched)
    if missing:
        problems.append(f"never searched for {', '.join(map(repr, missing))} (searched: {sorted(searched)})")
        breach = "name-not-resolved"
    foreign = sorted(searched - set(names))
    if foreign:
        problems.append(f"searched for {', '.join(map(repr, foreign))}, which was not given as a name")
        breach = breach or "foreign-search"
    keys, wanted = frozenset(stable_keys), {str(c) for c in cids}
    early = [r for r in calls[:last] if not _matches(resolver, r)
             and (is_write_tool(r.tool) or wanted & {str(v) for _, v in _id_values(r.arguments or {}, keys)})]
    if early:
        problems.append(f"{len(early)} call(s) used the target or wrote before the resolution ended: "
                        f"{', '.join(f'{r.product}/{r.tool}' for r in early)}")
        breach = breach or "used-before-resolution"
    if not any(_matches(call, r) for r in calls[last + 1:]):
        problems.append(f"expected the business call {call} after the searches, got "
                        f"{[f'{r.product}/{r.tool}' for r in calls[last + 1:]] or 'none'}")
        breach = breach or "no-business-call"
    if problems:
        listing = "\n".join(f"  {p}" for p in problems)
        raise Finding(f"{what + ': ' if what else ''}name resolution then call:\n{listing}{context_of(run)}",
                      **facts_of(run), breach=breach)


def _cids_in(value: Any, world: frozenset[str]) -> set[str]:
    """Every string of ``value`` (recursively) that is one of the world's group IDs."""
    if isinstance(value, str):
        return {value} if value in world else set()
    if isinstance(value, dict):
        return {c for v in value.values() for c in _cids_in(v, world)}
    if isinstance(value, list):
        return {c for v in value for c in _cids_in(v, world)}
    return set()


def assert_target_effect(run: Any, call: Any, id_key: str, cids: list[str], *, stable_keys: Iterable[str],
                         world_cids: Iterable[str], args: dict[str, Any] | None = None, strict: bool = False,
                         what: str = "") -> None:
    """Where the effect lands (D1 §4, §7.2 b1/b2 "下层收到同一 CID" / "下层只收到 CID", effect reading:
    docs/contract.md R9): the business call ``call`` was sent; every target CID reached the backend under a
    stable-ID key (in the business call or in a read-only lookup that verifies it); no call carries another
    group's ID; the business call, where it carries ``id_key``, carries exactly the targets (and the ``args``
    subset); the result names no other group of the world (``world_cids``): a release that scopes a search's
    results itself obeys it, one that returns another group's rows does not. ``strict`` (``--dws-strict=
    scope-argument``): the business call itself carries the targets under ``id_key``.

    Example: ``assert_target_effect(inv, "get_group_members", "openconversation_id", [cid],
    stable_keys=prof.stable_keys, world_cids=all_cids)``
    """
    __tracebackhide__ = True
    label = f"{what}: " if what else ""
    hits = _matching(run, call)
    if not hits:
        raise Finding(f"{label}the business call {call} was never sent{context_of(run)}", **facts_of(run),
                      breach="no-business-call")
    keys, world, want = frozenset(stable_keys), frozenset(world_cids) | set(cids), set(cids)
    carried = {str(v) for r in tool_calls(run) for _, v in _id_values(r.arguments or {}, keys)
               if isinstance(v, str)}
    problems, breach = [], None
    missing = sorted(want - carried)
    if missing:
        problems.append(f"the target {', '.join(missing)} never reached the backend under a stable-ID key")
        breach = "target-not-received"
    other = sorted(c for c in carried - want if looks_like_cid(c))
    if other:
        problems.append(f"another group was targeted: {', '.join(other)}")
        breach = breach or "other-target"
    for r in hits:
        present = id_key in (r.arguments or {})
        if present or strict:
            value = (r.arguments or {}).get(id_key, ABSENT)
            got = value if isinstance(value, list) else [value]
            if sorted(map(str, got)) != sorted(cids) or len(got) != len(cids):
                problems.append(f"{r.tool} {id_key} = {value!r}, expected "
                                f"{cids[0] if len(cids) == 1 else cids!r}"
                                + ("" if present else " (--dws-strict=scope-argument)"))
                breach = breach or ("scope-argument" if not present else "wrong-target")
        for key, wanted in (args or {}).items():
            if (r.arguments or {}).get(key, ABSENT) != wanted:
                problems.append(f"{r.tool} {key} = {(r.arguments or {}).get(key, ABSENT)!r}, expected {wanted!r}")
                breach = breach or "arguments"
    out = getattr(run, "stdout_json", None)
    foreign = sorted(_cids_in(out, world) - want) if out is not None else []
    if foreign:
        problems.append(f"the result names another group: {', '.join(foreign)} (the output is not limited to "
                        "the target)")
        breach = breach or "out-of-scope"
    if problems:
        raise Finding(f"{label}the effect does not land on the target: {'; '.join(problems)}{context_of(run)}",
                      **facts_of(run), breach=breach)


def assert_calls(run: Any, expected: list[tuple[Any, dict[str, Any] | None]], what: str = "") -> None:
    """The tools/call sequence is exactly ``expected``: ``(tool, args_subset)`` pairs in order, where ``tool``
    is a name, or an object with ``matches(record)``; ``args_subset`` (or None) must be contained in the
    arguments (a value may be a callable predicate).

    Example::

        assert_calls(inv, [("search_groups", {"keyword": "项目群"}),
                           ("get_group_members", {"openconversation_id": cid})])
    """
    __tracebackhide__ = True
    calls = tool_calls(run)
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
        raise Finding(f"{what + ': ' if what else ''}backend calls differ:\n{listing}{context_of(run)}",
                      **facts_of(run))


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
    bad, fields = [], set()
    for r in tool_calls(run):
        for where, value in _id_values(r.arguments or {}, keys):
            if isinstance(value, str) and value.strip().casefold() in folded:
                bad.append(f"{r.product}/{r.tool} {where} = {value!r}")
                fields.add(where.rsplit(".", 1)[-1].split("[", 1)[0])
    if bad:
        raise Finding(f"{what + ': ' if what else ''}a natural name reached a stable-ID argument: "
                      f"{'; '.join(bad)}{context_of(run)}", **facts_of(run), fields=",".join(sorted(fields)))


def assert_cid_never_searched(run: Any, *, tool: str = "search_groups", keyword: str = "keyword",
                              what: str = "") -> None:
    """No name-resolution call carries a CID-shaped keyword.

    Example: ``assert_cid_never_searched(inv)``
    """
    __tracebackhide__ = True
    bad = [r for r in tool_calls(run) if r.tool == tool and looks_like_cid((r.arguments or {}).get(keyword))]
    if bad:
        raise Finding(f"{what + ': ' if what else ''}a CID was sent to {tool} as the {keyword!r}: "
                      f"{'; '.join(wire_lines(bad))}{context_of(run)}", **facts_of(run))


def assert_no_list_tools(run: Any, what: str = "") -> None:
    """The implementation discovered nothing at runtime: no ``tools/list`` (nor ``initialize``) request.

    Example: ``assert_no_list_tools(inv)``
    """
    __tracebackhide__ = True
    bad = [r for r in run_records(run) if getattr(r, "rpc_method", None) in ("tools/list", "initialize")]
    if bad:
        listing = ", ".join(f"{r.rpc_method} on {r.path}" for r in bad)
        raise Finding(f"{what + ': ' if what else ''}runtime discovery requests were sent: {listing}"
                      f"{context_of(run)}", **facts_of(run))


def _invocation_view(inv: Any) -> Any:
    calls = [(r.path, r.tool, r.arguments) for r in tool_calls(inv)]
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
            raise AssertionError(f"{label}the {name} spelling failed (exit {inv.exit_code}){context_of(inv)}")
    a, c = _invocation_view(alias), _invocation_view(canonical)
    if c == {"dry-run preview": None}:
        raise AssertionError(f"{label}the canonical run sent nothing and printed no JSON: nothing to compare"
                             f"{context_of(canonical)}")
    assert_equal(c, a, f"{label}the alias yields another invocation than the canonical spelling (canonical -> alias):",
                 context=context_of(alias))


def _matching(run: Any, tool: Any) -> list[Any]:
    return [r for r in tool_calls(run) if (tool.matches(r) if hasattr(tool, "matches") else r.tool == tool)]


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
        raise Finding(f"{what + ': ' if what else ''}{tool} was called {len(sent)} time(s), expected {want}"
                      f"{context_of(run)}", **facts_of(run), sent=len(sent))


def assert_fails_closed(run: Any, *, resolution_allowed: bool = True, what: str = "") -> None:
    """The run failed (non-zero exit) before any business call; with ``resolution_allowed=False`` before any
    backend call at all (e.g. a natural name given to a stable-ID flag).

    Example: ``assert_fails_closed(dws_run("chat", "+chat-rename", "--group", "同名群", "--name", "x", "--yes"))``
    """
    __tracebackhide__ = True
    label = f"{what}: " if what else ""
    calls = tool_calls(run)
    sent = [r for r in calls if r.tool not in NAME_RESOLUTION] if resolution_allowed else calls
    if run.exit_code == 0 or sent:
        kind = "business call" if resolution_allowed else "backend call"
        raise Finding(f"{label}must fail closed before any {kind} (exit {run.exit_code}, {len(sent)} "
                      f"{kind}(s){': ' + '; '.join(wire_lines(sent)) if sent else ''}){context_of(run)}",
                                           **facts_of(run))


def assert_not_called(run: Any, tool: Any, what: str = "") -> None:
    """No tools/call of ``tool`` (a name, or an object with ``matches(record)``) was sent.

    Example: ``assert_not_called(inv, "search_groups", what="--group <CID> must not search")``
    """
    __tracebackhide__ = True
    bad = _matching(run, tool)
    if bad:
        raise Finding(f"{what + ': ' if what else ''}{tool} was called {len(bad)} time(s), expected never: "
                      f"{'; '.join(wire_lines(bad))}{context_of(run)}", **facts_of(run))


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
        raise Finding(f"{label}the business call {tool} was never sent{context_of(run)}", **facts_of(run))
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
        raise Finding(f"{label}the business call carries the wrong target: {'; '.join(problems)}"
                      f"{context_of(run)}", **facts_of(run))


def assert_no_requests(run: Any, what: str = "") -> None:
    """The fake MCP server received nothing at all during this run (no tools/call, no discovery, no probe).

    Example: ``assert_no_requests(runner.run("--help", backend=srv, token=None, globals_=False))``
    """
    __tracebackhide__ = True
    records = run_records(run)
    if records:
        listing = ", ".join(f"{getattr(r, 'rpc_method', None) or getattr(r, 'http_method', '?')} on "
                            f"{getattr(r, 'path', '?')}" for r in records[:10])
        raise Finding(f"{what + ': ' if what else ''}{len(records)} request(s) reached the fake server: "
                      f"{listing}{context_of(run)}", **facts_of(run))
    egress = getattr(run, "service_egress", getattr(run, "egress", None))
    if egress:  # nor did it try to reach the service off the machine (refused by the proxy); other egress
        # (telemetry, an update check) is not a request to the service: the report lists it per host (issue 25)
        raise Finding(f"{what + ': ' if what else ''}tried to reach the service off the machine: "
                      f"{', '.join(egress)} (refused){context_of(run)}", **facts_of(run))
