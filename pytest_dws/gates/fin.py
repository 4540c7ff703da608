"""FIN-*: the final repository gates of D1 §7.4 / §11.2.

On a Go source tree they are pass-through runners of the upstream commands (gofmt, the focused `go test`
list, `go generate`, the policy scripts), always in a temporary copy with the offline environment; on any other
tree they are not applicable, with that reason. FIN-SKILL-COMMANDS and FIN-SKILL-VALIDATE are language-neutral
(Skill documents + the binary), and so is FIN-SCHEMA-CATALOG (GATES.md: "§1E gates [DATA+BIN]"): its
``catalog`` part is the aggregate verdict of the DATA gates of §1E over the release (files on disk, else the
binary's ``schema --all``), its ``script`` part the upstream script, run only on a Go tree.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pytest_dws.assertions import assert_byte_identical_regeneration, assert_no_problems
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.plans import plan_tool_gate
from pytest_dws.observe.binary.views import bin_schema, prefetch_selected, schema_profile, schema_subjects
from pytest_dws.observe.binary.worlds import plain
from pytest_dws.observe.calls import plans
from pytest_dws.observe.release_subjects import pin
from pytest_dws.observe.skills import cited_commands, help_resolves
from pytest_dws.observe.sourcetree import copy_tree, run_in_copy, source_tree, tree_digest
from pytest_dws.registry import Access, find, gate
from pytest_dws.verdict import attribution
from pytest_dws.verdict.baseline import entry_name
from pytest_dws.verdict.cases import CaseFailures, collect


def _go_tree(ctx: GateContext) -> Path:
    tree = source_tree(ctx)
    if not (tree / "go.mod").is_file():
        raise NotApplicable(f"Go pass-through gate: {tree} is not a Go module (no go.mod)",
                            wants="a Go module (go.mod)")
    if shutil.which("go") is None:
        raise NotApplicable("Go pass-through gate: no `go` toolchain on PATH", wants="a Go toolchain on PATH")
    return tree


def passthrough(ctx: GateContext, argv: list[str], what: str, *, env: dict[str, str] | None = None,
                need: str | None = None) -> str:
    """Run an upstream command in a temporary copy of the Go tree, offline; fail with its output tail."""

    tree = _go_tree(ctx)
    if need and not (tree / need).exists():
        raise NotApplicable(f"{need} is not in the tree", wants=f"{need} in the tree")
    before = tree_digest(tree)
    work = Path(tempfile.mkdtemp(prefix="fin-", dir=ctx.tmp_root))
    try:
        copy = copy_tree(tree, work / "tree")
        home = work / "home"
        home.mkdir()
        timeout = float(schema_profile(ctx).get("go_timeout", 1800))
        inv = run_in_copy(ctx, argv, copy, home, timeout, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert_byte_identical_regeneration(before, tree_digest(tree), "the target tree before vs after the gate")
    if inv.exit_code != 0:
        tail = "\n".join((inv.stdout + inv.stderr).strip().splitlines()[-25:])
        raise AssertionError(f"{what}: `{shlex.join(argv)}` exited {inv.exit_code}\n{tail}")
    return inv.stdout


@gate("FIN-GOFMT", doc="D1 §7.4", access={Access.SRC})
def gofmt_clean(ctx: GateContext) -> None:
    """Go files are gofmt-clean (`gofmt -l` lists nothing)."""
    out = passthrough(ctx, ["gofmt", "-l", "."], "gofmt")
    if out.strip():
        raise AssertionError("gofmt -l lists unformatted files:\n" + out.strip())


@gate("FIN-FOCUSED-TESTS", doc="D1 §7.4", access={Access.SRC})
def focused_tests(ctx: GateContext) -> None:
    """The focused `go test` list of D1 §7.4 passes."""
    pkgs = schema_profile(ctx)["focused_tests"]  # release facts (inputs/data/release_facts.toml)
    passthrough(ctx, ["go", "test", *pkgs], "focused go test", env={"DWS_PACKAGE_VERSION": "0.0.0-test"})


@gate("FIN-GO-GENERATE", doc="D1 §7.4", access={Access.SRC})
def go_generate(ctx: GateContext) -> None:
    """`go generate ./internal/cli` succeeds (offline, in a copy)."""
    passthrough(ctx, ["go", "generate", "./internal/cli"], "go generate", need="internal/cli")


@gate("FIN-DRIFT", doc="D1 §7.4; R7", access={Access.SRC})
def drift_script(ctx: GateContext) -> None:
    """`scripts/policy/check-generated-drift.sh` passes."""
    script = "scripts/policy/check-generated-drift.sh"
    passthrough(ctx, ["bash", script], "generated drift policy", need=script)


def catalog_verdicts(ctx: GateContext) -> dict[tuple[str, str | None], str]:
    """The verdicts of every DATA gate of §1E over the release, computed once per session by
    :func:`pytest_dws.observe.rejudge.judge` (the same gate functions, without pytest items)."""
    from pytest_dws.observe.rejudge import judge

    ctx.release()  # no catalog at all: NotApplicable with the option to set, before judging anything
    return ctx.memo(("fin", "catalog-verdicts"), lambda: judge(ctx))


#: Both parts of FIN-SCHEMA-CATALOG: the black-box judgement (§1E DATA gates) and the upstream script (R7).
_SCHEMA_CATALOG_DOC = "D1 §7.4, §11.2; docs/contract.md §1E, R7"


@gate("FIN-SCHEMA-CATALOG", doc=_SCHEMA_CATALOG_DOC, access={Access.DATA}, part="catalog")
def schema_catalog(ctx: GateContext) -> None:
    """The catalog passes every DATA gate of §1E (what check-schema-catalog.sh checks, judged black-box).

    A failing DATA item that the run's baseline lists is a known deviation, already reported as an xfail of its
    own gate; only the others fail this aggregate (so one baseline entry never has to hide the whole gate)."""
    verdicts = catalog_verdicts(ctx)
    if "passed" not in verdicts.values():
        raise NotApplicable("no DATA gate of §1E could judge this release",
                            wants="a DATA gate that judged this release")
    baseline = ctx.baseline  # DATA items it lists are already reported (xfail) under their own gate
    failed = sorted(g if s is None else f"{g}[{s}]" for (g, s), v in verdicts.items()
                    if v == "failed" and baseline.lookup(g, s) is None)
    assert_no_problems(failed, f"the catalog fails {len({f.split('[')[0] for f in failed})} DATA gate(s) of "
                               "§1E (each reported under its own id)")


@gate("FIN-SCHEMA-CATALOG", doc=_SCHEMA_CATALOG_DOC, access={Access.SRC}, part="script")
def schema_catalog_script(ctx: GateContext) -> None:
    """`scripts/policy/check-schema-catalog.sh` passes (Go tree with a toolchain only)."""
    script = "scripts/policy/check-schema-catalog.sh"
    passthrough(ctx, ["bash", script], "schema catalog policy", need=script)


@gate("FIN-GO-TEST-ALL", doc="D1 §7.4", access={Access.SRC})
def go_test_all(ctx: GateContext) -> None:
    """`go test ./...` is green."""
    passthrough(ctx, ["go", "test", "./..."], "go test ./...", env={"DWS_PACKAGE_VERSION": "0.0.0-test"})


@gate("FIN-SKILL-COMMANDS", doc="D1 §7.4, §11.2; scripts/policy/check-skill-commands.sh",
      access={Access.SRC, Access.BIN})
def skill_commands(ctx: GateContext) -> None:
    """Every command path a Skill cites resolves to an executable command (`--help` usage line)."""
    ctx.require(Access.BIN)
    prefetch_selected(ctx)
    paths = sorted({c.path for c in cited_commands(ctx) if not c.anti})
    problems = help_resolves(ctx, [(f"`dws {p}`", tuple(p.split()), p) for p in paths])
    collect([("commands resolve", lambda: assert_no_problems(problems, "Skill command paths")),
             # D1 §11.2 "1009 executable command paths": a silent change of the pinned count fails
             ("pinned count", lambda: pin(ctx, {"skill_command_paths": len(paths)}, "Skill command paths (pinned -> "
                                          "actual)"))])


plan_tool_gate("FIN-SKILL-VALIDATE", ("examples", "oneof"))  # the calls of SCH-EXAMPLES and SCH-ONEOF-BRANCH-DRYRUN


@gate("FIN-SKILL-VALIDATE", doc="D1 §11.2 (Agent examples contract)", access={Access.BIN, Access.MCP}, per_tool=True)
def skill_validate(ctx: GateContext) -> None:
    """The Agent example contract: every example and every one-of branch passes; the example total is pinned."""
    view = bin_schema(ctx)
    total = sum(len(t.get("examples") or []) for t in view.tools.values())
    pin(ctx, {"examples": total}, "Σ examples of `dws schema --all` (pinned -> actual)")
    checks: list[tuple[str, Any, list[str]]] = []
    for key in schema_subjects(ctx, cheap=True):  # every tool: dry runs (the costly Help only where needed)
        # The same judgement as SCH-EXAMPLES and SCH-ONEOF-BRANCH-DRYRUN: each failing case is caused by theirs.
        for gate_id, part, subject in (("SCH-EXAMPLES", "bin", "bin:" + key), ("SCH-ONEOF-BRANCH-DRYRUN", "", key)):
            try:
                find(gate_id, part).func(ctx, subject)
            except NotApplicable:
                continue
            except CaseFailures as exc:
                for case, message in exc.failures.items():
                    checks.append((f"{key}: {case}", attribution.failing(message),
                                   [entry_name(gate_id, subject, case)]))
            except AssertionError as exc:
                checks.append((key, attribution.failing(str(exc)), [entry_name(gate_id, subject)]))
    collect(checks, header="tools failing the example / one-of contract")



plans("FIN-SKILL-COMMANDS")(lambda ctx: [plain(*p.split(), "--help")
                                         for p in sorted({c.path for c in cited_commands(ctx) if not c.anti})])
