"""deepdiff rendering of ``==`` failures on the suite's own value types (the ``pytest_assertrepr_compare`` hook).

Why: a failed ``assert expected == actual`` on a nested catalog leaf or a list of backend calls is unreadable in
pytest's default rendering; a deepdiff names each changed path. Only values the suite owns are rendered: an
:class:`Expected` wrapper (the explicit opt-in), or a :class:`Diffable` view such as
:class:`pytest_dws.launch.CallList` (``Invocation.calls()`` / ``Invocation.call_tuples()``). Comparisons of
plain user dicts and lists keep pytest's own rendering.

Example (a user test)::

    from pytest_dws.assertions import Expected

    def test_request(dws_run, fake_mcp):
        inv = dws_run("chat", "+conversation-list")
        assert Expected({"limit": 100}, "first request") == inv.calls()[0].arguments
"""

from __future__ import annotations

import reprlib
from typing import Any

__all__ = ["Diffable", "Expected", "explain", "message", "render_diff"]


class Diffable:
    """Mixin marking a value type of the suite whose ``==`` failures are rendered with deepdiff."""

    __slots__ = ()

    def plain(self) -> Any:
        """The value as plain Python data (what the diff is computed on)."""
        raise NotImplementedError


class Expected(Diffable):
    """The expected side of a plain ``assert Expected(value, what) == actual``: compares like ``value`` and makes
    the failure a deepdiff of expected -> actual headed by ``what``."""

    __slots__ = ("context", "value", "what")
    __hash__ = None  # type: ignore[assignment]  # compares by value, like the dicts it usually wraps

    def __init__(self, value: Any, what: str = "", context: str = "") -> None:
        self.value = value
        self.what = what
        self.context = context  # shown after the diff, e.g. Invocation.describe()

    def __eq__(self, other: object) -> bool:
        return bool(self.value == _plain(other))

    def __repr__(self) -> str:
        return repr(self.value)

    def plain(self) -> Any:
        return _plain(self.value)


def _plain(value: Any) -> Any:
    return value.plain() if isinstance(value, Diffable) else value


def _short(value: Any) -> str:
    r = reprlib.Repr()
    r.maxstring, r.maxother, r.maxlist, r.maxdict, r.maxlevel = 40, 40, 4, 4, 2
    return r.repr(value)


def message(expected: Any, actual: Any, what: str = "", *, label: str = "expected -> actual") -> list[str]:
    """The explanation lines: a headline naming ``what`` (used as is when it ends with ``:``), then one deepdiff
    change per line."""

    head = what if what.endswith(":") else f"{what} differs ({label}):" if what else f"{label}:"
    return [head, *render_diff(_plain(expected), _plain(actual)).splitlines()]


def explain(op: str, left: Any, right: Any) -> list[str] | None:
    """``pytest_assertrepr_compare`` body: lines for ``==`` when either side is a :class:`Diffable`, else None."""
    if op != "==" or not (isinstance(left, Diffable) or isinstance(right, Diffable)):
        return None
    if isinstance(right, Expected) and not isinstance(left, Expected):
        expected, actual, label = right, left, "expected -> actual"
    else:
        expected, actual = left, right
        label = "expected -> actual" if isinstance(left, Expected) else "left -> right"
    what = expected.what if isinstance(expected, Expected) else ""
    context = expected.context.strip("\n").splitlines() if isinstance(expected, Expected) else []
    return [f"{_short(_plain(left))} == {_short(_plain(right))}", *message(expected, actual, what, label=label),
            *context]


def render_diff(expected: Any, actual: Any, *, limit: int = 40) -> str:
    """A short, stable deepdiff of ``expected`` vs ``actual`` (one change per line)."""
    from deepdiff import DeepDiff

    diff = DeepDiff(expected, actual, ignore_order=False, verbose_level=2)
    if not diff:
        return "(no difference)"
    lines = []
    for kind, changes in sorted(diff.items()):
        items = changes.items() if isinstance(changes, dict) else ((c, "") for c in changes)
        for where, change in items:
            lines.append(f"  {kind}: {where}: {_change(change)}".rstrip(": "))
    more = len(lines) - limit
    return "\n".join(lines[:limit] + ([f"  ... {more} more differences"] if more > 0 else []))


def _change(change: Any) -> str:
    """``old -> new`` for a changed value (with the types when they differ), the value itself otherwise."""
    short = reprlib.Repr()
    short.maxstring, short.maxother, short.maxlist, short.maxdict = 120, 120, 8, 8
    if isinstance(change, dict) and "new_value" in change and "old_value" in change:
        old, new = short.repr(change["old_value"]), short.repr(change["new_value"])
        if "new_type" in change:
            return f"{old} ({change['old_type'].__name__}) -> {new} ({change['new_type'].__name__})"
        return f"{old} -> {new}"
    return short.repr(change) if change != "" else ""
