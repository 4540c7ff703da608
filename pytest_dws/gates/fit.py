"""FIT-NO-OVERFIT, dynamic half: nothing may depend on the datasets' fixed names, CIDs, keywords or trace IDs.

The observed and holdout datasets run twice: with the synthetic values written in their files, and with fresh
random values of the same kind (seeded, printed). A case that passes only with the file's values is fitted
to them; a failing or stopping scenario that exits 0 is a non-zero exit turned into success (D1 §9.1).
The variant dataset is random by construction (DS-VARIANT-MATRIX). The static half (grep of the source for
case labels and fixed literals) is another part of this gate id.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.outcome import FAILURE_CLASSES
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.profile import active_profile
from pytest_dws.observe.runtime import datasets as ds
from pytest_dws.observe.skills import skill_files, source_files
from pytest_dws.observe.sourcetree import tree_text
from pytest_dws.registry import Access, gate
from pytest_dws.verdict import attribution
from pytest_dws.verdict.cases import collect

_STOPS = FAILURE_CLASSES | {"expected_resolution_stop"}


@gate("FIT-NO-OVERFIT", doc="D1 §9.1, §8.3", access={Access.MCP}, part="dynamic")
def no_overfit_dynamic(ctx: GateContext) -> None:
    """Every observed/holdout verdict holds with randomised names and IDs; failing scenarios keep non-zero exits."""
    prof = active_profile(ctx)
    checks: list[tuple[str, Any, list[str]]] = []
    compared = 0  # cases that could show a fit: passed with the fixed values, or a stop that ran to an exit
    for name in ("observed", "holdout"):
        fixed = {r.case.id: r for r in ds.results(ctx, name)}
        for r in ds.randomised(ctx, name):
            if r.not_applicable:
                continue
            base = fixed.get(r.case.id)
            exit_code = r.judgement.evidence.get("exit_code")
            compared += bool(base is not None and base.passed) or (isinstance(exit_code, int) and exit_code >= 0)
            if not r.passed and base is not None and base.passed:
                fitted = (f"passes only with the dataset's fixed values; with random values: {'; '.join(r.problems)} "
                          f"(argv: {' '.join(r.argv)})")
                checks.append((r.case.id, attribution.failing(fitted), []))
                continue
            expected_stop = r.expect.get("class") in _STOPS and r.expect.get("result") != "partial"
            if expected_stop and r.judgement.evidence.get("exit_code") == 0:
                # The exit 0 is that case's own failure (e.g. a retried write that then succeeded): its cause.
                message = f"a {r.expect['class']} scenario exited 0 (argv: {' '.join(r.argv)})"
                checks.append((r.case.id, attribution.failing(message), attribution.dataset_causes(prof, r)))
    if not compared:  # a target that passes nothing and exits nowhere cannot show a fit: nothing was judged
        raise NotApplicable("no dataset case passed with its fixed values and none ran to an exit: "
                            "nothing to compare with random values")
    collect(checks, header=f"results depend on fixed names/IDs or hide failures ({ds.replay(ctx)}):")



# -- FIT-NO-OVERFIT (static half) -------------------------------------------------------------------------------------
FIT_PATTERNS = {
    "fixed test-group name": re.compile(r"dws测试群\d+"),
    "CID literal": re.compile(r"\bcid[A-Za-z0-9+/=]{10,}"),
    "evaluation case label": re.compile(r"""["'`][^"'`\n]*\bH\d{1,2}\b[^"'`\n]*["'`]"""),
    "fixed trace ID": re.compile(r"""(?i)trace[_-]?id["']?\s*[:=]\s*["'][A-Za-z0-9_-]{6,}["']"""),
}


CODE_SUFFIXES = (".go", ".py", ".js", ".ts", ".rs", ".java", ".kt", ".sh", ".rb")


TEST_DIRS = {"test", "tests", "testdata", "__tests__", "spec", "mock_mcp", "fixtures"}


def runtime_files(tree: Path) -> list[Path]:
    """Non-test runtime code plus the Skill documents."""
    out = list(skill_files(tree))
    for p in sorted(tree.rglob("*")):
        rel = p.relative_to(tree)
        if not p.is_file() or p.suffix not in CODE_SUFFIXES or set(rel.parts[:-1]) & (TEST_DIRS | {".git"}):
            continue
        name = p.name
        if name.endswith(("_test.go", "_test.py", ".test.ts", ".spec.ts")) or name.startswith("test_") \
                or name == "conftest.py":
            continue
        out.append(p)
    return out


@gate("FIT-NO-OVERFIT", doc="D1 §9.1, §8.3", access={Access.SRC}, part="src")
def no_overfit_static(ctx: GateContext) -> None:
    """No fitting in runtime code or Skills: no fixed test groups, case labels, CID or trace-ID literals."""
    tree, files = source_files(ctx, runtime_files, "runtime code or Skill documents to scan")
    hits = []
    for path in files:
        for lineno, line in enumerate(tree_text(ctx, tree, path).splitlines(), 1):
            for what, rx in FIT_PATTERNS.items():
                m = rx.search(line)
                if m:
                    hits.append(f"{path.relative_to(tree).as_posix()}:{lineno}: {what}: {m.group(0)[:60]}")
    ctx.observe("fit_scanned_files", len(files))
    if hits:
        raise AssertionError(f"{len(hits)} fitted literal(s) in runtime code / Skills:\n" + "\n".join(hits[:40]))
