"""The three datasets of D1 §9.2 as data: observed, variant (generated) and safety holdout.

A case is a command line, a fake-backend scenario and the expected outcome, never code. Files live under
``fixtures/scenarios/<dataset>/*.json`` (override the root with env ``DWS_DATASETS_DIR``); one file holds
one failure pattern::

    {"pattern": "ambiguous_same_name", "group": "ambiguous_same_name", "doc": "D1 §1, §6", "weight": 37,
     "symbols": {"name_a": "评审群甲", "cid_a": "cidOBSamb0000001"},
     "world": {...fake_mcp world...},
     "cases": [{"id": "members", "argv": ["chat", "+chat-members-list", "--group", "{{name_a}}"],
                "overrides": [...], "dims": {"target_input": "same_name"},
                "expect": {"class": "expected_resolution_stop", "business_calls": 0}}]}

``{{symbol}}`` placeholders are replaced in argv, world, overrides and expect; the symbol's key prefix
(``cid_``, ``name_``, ``kw_``, ``text_``, ``trace_``, ``odid_``) says what it is, so every run can swap in
random synthetic values (FIT-NO-OVERFIT: nothing may depend on a fixed name or CID). The file's weight is
the count D1 gives for the pattern, split into whole numbers over its cases (:func:`case_weights`);
``manifest.toml`` beside the files pins the totals. The variant dataset is generated (end of this module):
hypothesis strategies over the D1 §9.3 matrix whose vocabulary (commands, target spellings, injected errors) is data in
``fixtures/scenarios/variant/matrix.json``; the expected outcome follows from the matrix point.

The package: :mod:`.symbols` (placeholders and random values), :mod:`.cases` (loading files and weights),
:mod:`.evaluate` (judging a case's outcome; the runs are
:func:`pytest_dws.observe.runtime.datasets.run_cases`), :mod:`.variants` (the generated matrix).
"""

from __future__ import annotations

from pytest_dws.inputs.datasets.cases import (
           DATASETS,
           EXPECT_KEYS,
           FORBIDDEN_LITERALS,
           Case,
           case_weights,
           check_weights,
           copy_case,
           default_root,
           load_cases,
           load_dataset,
           load_manifest,
           profile_selected,
           scenarios_root,
)
from pytest_dws.inputs.datasets.evaluate import REQUIREMENTS, CaseResult, evaluate, unsupported
from pytest_dws.inputs.datasets.symbols import (
           ID_CHARS,
           NAME_CHARS,
           NAME_TAIL,
           ROLE_MARKERS,
           SYMBOL_KINDS,
           random_symbols,
           random_value,
           render,
           symbol_kind,
)
from pytest_dws.inputs.datasets.variants import (
           DIMS,
           INFRA_ERRORS,
           Matrix,
           Point,
           arg_groups,
           build_case,
           coverage,
           covering_points,
           expected_for,
           generate_variants,
           point_strategy,
           symbol_strategy,
           variant_case_strategy,
)

__all__ = [
           "DATASETS",
           "DIMS",
           "EXPECT_KEYS",
           "FORBIDDEN_LITERALS",
           "ID_CHARS",
           "INFRA_ERRORS",
           "NAME_CHARS",
           "NAME_TAIL",
           "REQUIREMENTS",
           "ROLE_MARKERS",
           "SYMBOL_KINDS",
           "Case",
           "CaseResult",
           "Matrix",
           "Point",
           "arg_groups",
           "build_case",
           "case_weights",
           "check_weights",
           "copy_case",
           "coverage",
           "covering_points",
           "default_root",
           "evaluate",
           "expected_for",
           "generate_variants",
           "load_cases",
           "load_dataset",
           "load_manifest",
           "point_strategy",
           "profile_selected",
           "random_symbols",
           "random_value",
           "render",
           "scenarios_root",
           "symbol_kind",
           "symbol_strategy",
           "unsupported",
           "variant_case_strategy",
]
