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
                            "nothing to compare with random values", wants="a dataset case that ran to an exit")
    collect(checks, header=f"results depend on fixed names/IDs or hide failures ({ds.replay(ctx)}):")



# -- FIT-NO-OVERFIT (static half) -------------------------------------------------------------------------------------
#: D1 §9.1 "禁止拟合": case numbers, the test-group literals, fixed CIDs / user IDs / trace IDs of the evaluation, and
#: string branches on one prompt (a condition that compares a prompt-like input with a literal sentence).
FIT_PATTERNS = {
    "fixed test-group name": re.compile(r"dws测试群\d+"),
    "CID literal": re.compile(r"\bcid[A-Za-z0-9+/=]{10,}"),
    "evaluation case label": re.compile(r"""["'`][^"'`\n]*\bH\d{1,2}\b[^"'`\n]*["'`]"""),
    "fixed trace ID": re.compile(r"""(?i)trace[_-]?id["']?\s*[:=]\s*["'][A-Za-z0-9_-]{6,}["']"""),
    # an ID value (at least three digits: not a flag or key name) assigned to a user-ID key
    "fixed user ID": re.compile(r"""(?i)\b(?:user|staff|union|open_?ding_?talk|sender)_?ids?["']?\s*[:=]\s*\[?\s*["']"""
                                r"""(?=(?:[^"'\d\s]*\d){3})[A-Za-z0-9$:_-]{6,}["']"""),
    "prompt-string branch": re.compile(r"""(?i)^\s*(?:}\s*)?(?:if|elif|else if|case|switch|when)\b"""
                                       r"""(?=[^\n]*\b\w*(?:prompt|instruction|utterance|user_?input|question)\w*\b)"""
                                       r"""[^\n]*["'`][^"'`\n]{8,}["'`]"""),
}
#: In a test snapshot (D1 §9.2 "不把真实业务数据写入测试快照") a value is synthetic when it says so: a CID, user ID
#: or trace ID without one of these markers is taken for real business data.
SYNTHETIC = re.compile(r"(?i)test|synth|fake|mock|example|dummy|sample|fixture")


CODE_SUFFIXES = (".go", ".py", ".js", ".ts", ".rs", ".java", ".kt", ".sh", ".rb")


TEST_DIRS = {"test", "tests", "testdata", "__tests__", "spec", "mock_mcp", "fixtures"}
#: Where a tree keeps the recorded outputs its tests compare against (snapshots, golden files, testdata).
SNAPSHOT_DIRS = {"__snapshots__", "snapshots", "snapshot", "golden", "testdata", "recordings"}


#: Test code by its name wherever it lives (a Go test sits beside the code it tests).
TEST_NAMES = ("_test.go", "_test.py", ".test.ts", ".spec.ts", ".test.js", ".spec.js")


def is_test_code(rel: Path) -> bool:
    """A test source: named as one (``*_test.go``, ``test_*.py`` ...) or code under a test directory."""
    name = rel.name
    return rel.suffix in CODE_SUFFIXES and (name.endswith(TEST_NAMES) or name.startswith("test_")
                                            or name == "conftest.py" or bool(set(rel.parts[:-1]) & TEST_DIRS))


def runtime_files(tree: Path) -> list[Path]:
    """Non-test runtime code plus the Skill documents (test code is judged with the snapshots)."""
    out = list(skill_files(tree))
    for p in sorted(tree.rglob("*")):
        rel = p.relative_to(tree)
        if not p.is_file() or p.suffix not in CODE_SUFFIXES or ".git" in rel.parts[:-1] or is_test_code(rel):
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


def _binary(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return b"\0" in fh.read(8192)
    except OSError:
        return False


def snapshot_files(tree: Path) -> list[Path]:
    """What the tests keep and compare against (D1 §9.2), on every path: every text file under a snapshot or test
    directory whatever its suffix, and every test source wherever it lives (a Go test holding a recorded CID or a
    test-group name is a snapshot written as code). Binary files (a NUL in the first 8 KiB) hold no such text."""
    out = []
    for p in sorted(tree.rglob("*")):
        rel = p.relative_to(tree)
        dirs = set(rel.parts[:-1])
        if not p.is_file() or ".git" in dirs:
            continue
        if (dirs & (SNAPSHOT_DIRS | TEST_DIRS) or is_test_code(rel)) and not _binary(p):
            out.append(p)
    return out


#: The real-data patterns of a snapshot: the test-group names and the ID literals of FIT_PATTERNS.
SNAPSHOT_PATTERNS = {k: FIT_PATTERNS[k] for k in ("fixed test-group name", "CID literal", "fixed trace ID",
                                                   "fixed user ID")}


@gate("FIT-NO-OVERFIT", doc="D1 §9.1, §9.2 (\"不把真实业务数据写入测试快照\")", access={Access.SRC}, part="snapshots")
def no_real_data_in_snapshots(ctx: GateContext) -> None:
    """No test snapshot or test source holds real business data: no evaluation test-group name, and no CID, user ID
    or trace ID that does not say it is synthetic (D1 §9.2: unit tests and local MCP E2E use synthetic stable IDs)."""
    tree, files = source_files(ctx, snapshot_files, "test snapshots to scan")
    hits = []
    for path in files:
        for lineno, line in enumerate(tree_text(ctx, tree, path).splitlines(), 1):
            for what, rx in SNAPSHOT_PATTERNS.items():
                for m in rx.finditer(line):
                    if what != "fixed test-group name" and SYNTHETIC.search(m.group(0)):
                        continue
                    hits.append(f"{path.relative_to(tree).as_posix()}:{lineno}: {what}: {m.group(0)[:60]}")
    ctx.section("fit_snapshots", {"scanned_files": len(files)})
    if hits:
        raise AssertionError(f"{len(hits)} real-looking value(s) in test snapshots:\n" + "\n".join(hits[:40]))
