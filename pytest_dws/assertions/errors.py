"""Typed errors of an invocation (D1 §3, §7.1): exit code, category, reason, origin, stage, hint; never text."""

from __future__ import annotations

from typing import Any

from pytest_dws.assertions.core import context_of, facts_of, run_records, wire_lines
from pytest_dws.core.errors import Finding
from pytest_dws.core.outcome import MISLEADING_ADVICE as _MISLEADING_ADVICE


class _Absent:
    """Marker for "this key must not be present" (``origin={ABSENT, "unknown"}`` = absent or unknown)."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Any = _Absent()

#: Recovery advice that sends an agent to parameters or authentication (GATES.md ERR-NO-MISLEADING-HINT); the
#: judge (pytest_dws.core.outcome, stdlib only) holds the one definition, like the CID shape below.
MISLEADING_HINT = _MISLEADING_ADVICE


def assert_exit_code(inv: Any, expected: int | set[int], what: str = "exit code") -> None:
    """The process exit code is ``expected`` (an int, or a set of allowed codes).

    Example: ``assert_exit_code(inv, 0, "+chat-members-list --group <CID>")``
    """
    __tracebackhide__ = True
    allowed = expected if isinstance(expected, (set, frozenset)) else {expected}
    if inv.exit_code not in allowed:
        want = " or ".join(map(str, sorted(allowed)))
        raise Finding(f"{what}: expected exit {want}, got {inv.exit_code}{context_of(inv)}", **facts_of(inv))


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
        raise Finding(f"{label}no JSON error object on stderr (expected {{\"error\": {{...}}}})"
                      f"{context_of(inv)}", **facts_of(inv, error="absent"))
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
        raise Finding(f"{label}the error is not classified as required:\n{lines}{context_of(inv)}",
                      **facts_of(inv, fields=",".join(sorted(wrong))))
    if no_misleading_hint:
        assert_no_misleading_hint(inv, what=what)


def assert_no_misleading_hint(inv: Any, what: str = "") -> None:
    """The error's ``hint`` and ``actions`` do not send the agent to parameters or authentication.

    Example: ``assert_no_misleading_hint(inv)`` after an internal-dependency failure.
    """
    __tracebackhide__ = True
    error = inv.error
    if error is None:
        raise Finding(f"{what + ': ' if what else ''}no JSON error object on stderr to judge the recovery "
                      f"advice of{context_of(inv)}", **facts_of(inv, error="absent"))
    texts = [("hint", error.get("hint"))] + [(f"actions[{i}]", a) for i, a in enumerate(error.get("actions") or [])]
    bad = [(k, t) for k, t in texts if isinstance(t, str) and MISLEADING_HINT.search(t)]
    if bad:
        shown = "; ".join(f".error.{k} = {t!r}" for k, t in bad)
        raise Finding(f"{what + ': ' if what else ''}the recovery advice points at parameters or "
                      f"authentication: {shown}{context_of(inv)}",
                      **facts_of(inv, fields=",".join(sorted({k.split("[")[0] for k, _ in bad}))))


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
    sent = [r for r in run_records(inv) if getattr(r, "rpc_method", None) is not None]
    if sent:
        problems.append(f"{len(sent)} request(s) reached the backend: {'; '.join(wire_lines(sent))}")
    if problems:
        raise Finding(f"{label}not rejected as a conflict: {'; '.join(problems)}{context_of(inv)}", **facts_of(inv))
