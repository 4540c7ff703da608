"""Catalog leaves and release files (D2 §5, §9): agent fields, safety, interface references, counts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_dws.assertions.core import assert_equal
from pytest_dws.core.compare import render_diff


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


def assert_agent_fields(tool: dict[str, Any], generation: str = "e81", vocab: Any = None) -> None:
    """SCH-AGENT-FIELDS on one leaf (``generation`` "cf" also requires non-empty selection arrays and allows
    interface_mode "unavailable").

    Example::

        assert_agent_fields(schema_leaf, generation="e81")
    """
    __tracebackhide__ = True
    from pytest_dws.inputs.catalog import checks

    assert_no_problems(checks.agent_fields(tool, generation, vocab), f"agent fields of {tool.get('canonical_path')}")


def assert_product_fields(product: dict[str, Any]) -> None:
    """SCH-AGENT-FIELDS on one product: a non-empty agent_summary."""
    __tracebackhide__ = True
    from pytest_dws.inputs.catalog import checks

    assert_no_problems(checks.product_fields(product), f"agent fields of product {product.get('id')}")


def assert_interface_ref(tool: dict[str, Any], generation: str = "e81", snapshot_ref: Any = None) -> None:
    """SCH-INTERFACE-REF on one leaf; ``snapshot_ref`` (the pinned MCP snapshot's ref for this tool, if any)
    must equal the leaf's ref when the leaf is an mcp tool.

    Example::

        assert_interface_ref(leaf, "cf", snapshot_ref=mcp["tools"][key]["interface_ref"])
    """
    __tracebackhide__ = True
    from pytest_dws.inputs.catalog import checks

    problems = checks.interface_ref(tool, generation)
    if snapshot_ref is not None and tool.get("interface_mode") == "mcp" and tool.get("interface_ref") != snapshot_ref:
        problems.append("interface_ref differs from the pinned MCP snapshot (expected -> actual):\n"
                        + render_diff(snapshot_ref, tool.get("interface_ref")))
    assert_no_problems(problems, f"interface contract of {tool.get('canonical_path')}")


def assert_examples_safe(tool: dict[str, Any]) -> None:
    """SCH-EXAMPLES: every example starts with ``dws <primary_cli_path>`` and never contains ``--yes``."""
    __tracebackhide__ = True
    from pytest_dws.inputs.catalog import checks

    assert_no_problems(checks.examples(tool), f"examples of {tool.get('canonical_path')}")


def assert_destructive_requires_confirmation(tool: dict[str, Any]) -> None:
    """SCH-DESTRUCTIVE: effect=destructive => risk=high and confirmation=user_required (any other leaf passes).

    Example::

        assert_destructive_requires_confirmation(dws_tool("chat.recall_message"))
    """
    __tracebackhide__ = True
    from pytest_dws.inputs.catalog import checks

    found = checks.safety_expectation(tool)
    if found is not None:
        assert_equal(found[0], found[1], f"safety of destructive tool {tool.get('canonical_path')}")


def assert_high_risk_confirmed(tool: dict[str, Any], runtime_gate: str | None = None, gated: bool = False) -> None:
    """SCH-HIGH-RISK-CONFIRM: risk=high => user_required; ``gated`` adds the e81 runtime_gate truth."""
    __tracebackhide__ = True
    from pytest_dws.inputs.catalog import checks

    assert_no_problems(checks.high_risk_confirmation(tool, runtime_gate, gated),
                       f"confirmation of {tool.get('canonical_path')}")


def assert_constraints_valid(tool: dict[str, Any], hidden: Iterable[str] = ()) -> None:
    """SCH-CONSTRAINTS: known kinds, >= 2 members per group, members are parameters, positionals or the tool's
    ``hidden`` compatibility spellings (the contract profile's aliases)."""
    __tracebackhide__ = True
    from pytest_dws.inputs.catalog import checks

    assert_no_problems(checks.constraints(tool, hidden), f"constraints of {tool.get('canonical_path')}")


def assert_mcp_summary_unreviewed(tool: dict[str, Any]) -> None:
    """SCH-MCP-UNREVIEWED: an agent_summary derived from MCP is marked reviewed:false."""
    __tracebackhide__ = True
    from pytest_dws.inputs.catalog import checks

    assert_no_problems(checks.mcp_summary_unreviewed(tool), f"summary review of {tool.get('canonical_path')}")


def assert_interface_facts_bounded(tool: dict[str, Any], vocab: Any = None) -> None:
    """SCH-INTERFACE-FACTS-BOUNDED: no identity/safety/selection field decided by an MCP fact (``vocab``: the
    release's vocabularies, :mod:`pytest_dws.inputs.vocabularies`; default the packaged ones)."""
    __tracebackhide__ = True
    from pytest_dws.inputs.catalog import checks

    assert_no_problems(checks.facts_bounded(tool, vocab), f"decision sources of {tool.get('canonical_path')}")


def assert_no_credentials(name: str, raw: bytes, data: Any) -> None:
    """SCH-NO-CREDENTIALS on one artifact: no endpoint/credential keys, no credential-looking text.

    Example::

        out = dws("schema", "--all").stdout_bytes
        assert_no_credentials("dws schema --all", out, json.loads(out))
    """
    __tracebackhide__ = True
    from pytest_dws.inputs.catalog.credentials import scan

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
