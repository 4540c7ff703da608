"""Public assertion helpers: the ONE implementation of each check, used by the built-in gates and by
implementers' own tests. Each raises ``AssertionError`` with a readable, deepdiff-rendered message and hides
its own frame from tracebacks (``__tracebackhide__``).

Example::

    from pytest_dws.assertions import assert_error_classified

    def test_backend_outage_is_classified(dws_run, fake_mcp):
        result = dws_run("chat", "+conversation-list", "--page-all")
        assert_error_classified(result, reason="backend_dependency_unavailable", origin="mcp_gateway",
                                stage="tool_metadata_lookup", exit_code=1)
"""

from __future__ import annotations

from typing import Any

__all__ = ["assert_equal", "render_diff"]


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
            lines.append(f"  {kind}: {where}: {change}".rstrip(": "))
    more = len(lines) - limit
    return "\n".join(lines[:limit] + ([f"  ... {more} more differences"] if more > 0 else []))


def assert_equal(expected: Any, actual: Any, what: str) -> None:
    """``expected == actual``, else an AssertionError naming ``what`` with a deepdiff of the two."""
    __tracebackhide__ = True
    if expected != actual:
        raise AssertionError(f"{what} differs (expected -> actual):\n{render_diff(expected, actual)}")
