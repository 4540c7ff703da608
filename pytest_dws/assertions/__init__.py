"""Public assertion helpers: the ONE implementation of each check, used by the built-in gates and by
implementers' own tests (guide: docs/writing-tests.md). Each raises ``AssertionError`` with a readable,
deepdiff-rendered message and hides its own frame from tracebacks (``__tracebackhide__``). Structural
comparisons go through ``pytest_assertrepr_compare`` (:mod:`pytest_dws.core.compare`; the plugin registers this
module for assertion rewriting) and raise the same lines themselves outside pytest. :class:`Expected` gives a
plain ``assert`` in your own test the same rendering.

Example::

    from pytest_dws.assertions import assert_error_classified

    def test_backend_outage_is_classified(dws_run, fake_mcp):
        result = dws_run("chat", "+conversation-list", "--page-all")
        assert_error_classified(result, reason="backend_dependency_unavailable", origin="mcp_gateway",
                                stage="tool_metadata_lookup", exit_code=1)

The helpers live in small modules by what they judge: :mod:`.core` (``assert_equal``), :mod:`.errors` (typed
errors), :mod:`.wire` (backend calls), :mod:`.results` (results, dataset verdicts, schema views),
:mod:`.catalog` (catalog leaves and release files). Import them from here.
"""

from __future__ import annotations

from pytest_dws.assertions.catalog import (
    assert_agent_fields,
    assert_constraints_valid,
    assert_counts,
    assert_destructive_requires_confirmation,
    assert_examples_safe,
    assert_high_risk_confirmed,
    assert_interface_facts_bounded,
    assert_interface_ref,
    assert_mcp_summary_unreviewed,
    assert_no_credentials,
    assert_no_problems,
    assert_product_fields,
    assert_same_keys,
)
from pytest_dws.assertions.core import _REWRITTEN as _REWRITTEN
from pytest_dws.assertions.core import assert_equal
from pytest_dws.assertions.errors import (
    ABSENT,
    MISLEADING_HINT,
    assert_conflict_rejected,
    assert_error_classified,
    assert_exit_code,
    assert_no_misleading_hint,
)
from pytest_dws.assertions.results import (
    SUMMARY_KEEP_KEYS,
    assert_byte_identical_regeneration,
    assert_cases_pass,
    assert_complete_is_truthful,
    assert_judged,
    assert_not_claimed_complete,
    assert_summary_projects_leaf,
)
from pytest_dws.assertions.wire import (
    NAME_RESOLUTION,
    assert_alias_equivalent,
    assert_call_count,
    assert_calls,
    assert_cid_never_searched,
    assert_fails_closed,
    assert_name_never_in_id_args,
    assert_no_business_calls,
    assert_no_list_tools,
    assert_no_requests,
    assert_not_called,
    assert_reaches_target,
    assert_resolved_then_called,
    assert_target_effect,
)
from pytest_dws.core.compare import Expected, render_diff
from pytest_dws.core.outcome import looks_like_cid

__all__ = [
    "ABSENT",
    "MISLEADING_HINT",
    "NAME_RESOLUTION",
    "SUMMARY_KEEP_KEYS",
    "Expected",
    "assert_agent_fields",
    "assert_alias_equivalent",
    "assert_byte_identical_regeneration",
    "assert_call_count",
    "assert_calls",
    "assert_cases_pass",
    "assert_cid_never_searched",
    "assert_complete_is_truthful",
    "assert_conflict_rejected",
    "assert_constraints_valid",
    "assert_counts",
    "assert_destructive_requires_confirmation",
    "assert_equal",
    "assert_error_classified",
    "assert_examples_safe",
    "assert_exit_code",
    "assert_fails_closed",
    "assert_high_risk_confirmed",
    "assert_interface_facts_bounded",
    "assert_interface_ref",
    "assert_judged",
    "assert_mcp_summary_unreviewed",
    "assert_name_never_in_id_args",
    "assert_no_business_calls",
    "assert_no_credentials",
    "assert_no_list_tools",
    "assert_no_misleading_hint",
    "assert_no_problems",
    "assert_no_requests",
    "assert_not_called",
    "assert_not_claimed_complete",
    "assert_product_fields",
    "assert_reaches_target",
    "assert_resolved_then_called",
    "assert_same_keys",
    "assert_summary_projects_leaf",
    "assert_target_effect",
    "looks_like_cid",
    "render_diff",
]
