"""What every helper builds on: ``assert_equal`` with a deepdiff message, and reading a run's transcript."""

from __future__ import annotations

from typing import Any

from pytest_dws.core.compare import Expected
from pytest_dws.core.compare import message as _diff_lines
from pytest_dws.core.outcome import reading

#: pytest rewrote this module (pytest_dws.plugin registers it before anything imports it): a failed plain
#: ``assert`` here is then explained by ``pytest_assertrepr_compare`` (pytest_dws.core.compare).
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
    if _pytest_explains():  # the diff is rendered by pytest_dws.core.compare.explain
        assert Expected(expected, what, context) == actual
    raise AssertionError("\n".join([*_diff_lines(expected, actual, what), *context.strip("\n").splitlines()]))


def run_records(run: Any) -> list[Any]:
    return list(getattr(run, "transcript", run) or [])


def tool_calls(run: Any) -> list[Any]:
    return [r for r in run_records(run) if getattr(r, "rpc_method", None) == "tools/call"]


def facts_of(run: Any, **more: Any) -> dict[str, Any]:
    """The typed facts of a run a failure is fingerprinted by: its exit code, its outcome's reading (refused,
    ran, crashed ...: :func:`pytest_dws.core.outcome.reading`), the backend tools it called (``product/tool``,
    comma-joined) and its error's reason and category (those it has), plus ``more`` (the failing fields)."""
    error = getattr(run, "error", None) if hasattr(run, "stderr") else None
    facts: dict[str, Any] = {"exit": getattr(run, "exit_code", None)}
    if callable(getattr(run, "calls", None)):
        facts["outcome"] = reading(run)
        if getattr(run, "limited", None):  # which limit (only then: the other fingerprints stay as they were)
            facts["limited"] = ",".join(run.limited)
        facts["calls"] = ",".join(sorted({f"{r.product}/{r.tool}" for r in tool_calls(run)})) or "none"
    if isinstance(error, dict):
        facts.update({k: error.get(k) for k in ("reason", "category") if isinstance(error.get(k), str)})
    return {**facts, **more}


def context_of(run: Any) -> str:
    describe = getattr(run, "describe", None)
    return "\n" + describe() if callable(describe) else ""


def wire_lines(records: list[Any]) -> list[str]:
    import json

    return [f"{r.product}/{r.tool} {json.dumps(r.arguments, ensure_ascii=False, sort_keys=True)}"
            for r in records]
