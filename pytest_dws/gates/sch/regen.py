"""SCH gates of regeneration (D2 §4, §7 b5, §8, §9 b13; docs/contract.md R7): byte-identical, drift-free, offline,
reviewed inputs untouched. The runs: :mod:`pytest_dws.observe.regeneration`."""

from __future__ import annotations

from pytest_dws.assertions import assert_byte_identical_regeneration
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.regeneration import regen, replay_runs
from pytest_dws.registry import Access, gate
from pytest_dws.verdict.cases import collect, not_judged


@gate("SCH-BYTE-IDENTICAL", doc="D2 §4; check-generated-drift.sh", access={Access.SRC}, part="src")
def byte_identical(ctx: GateContext) -> None:
    """Consecutive generations (and a second clean copy) are byte-identical."""
    r = regen(ctx)
    r.check_tree()
    r.check_ran()
    a1, a2, b1 = r.runs
    assert_byte_identical_regeneration(a1.outputs, a2.outputs, "generation A#1 vs the next run A#2 in the same copy")
    assert_byte_identical_regeneration(a1.outputs, b1.outputs, "generation in copy A vs generation in copy B")


@gate("SCH-NO-DRIFT", doc="D2 §9 b13, §8; check-generated-drift.sh", access={Access.SRC})
def no_drift(ctx: GateContext) -> None:
    """The generated catalog and metadata equal the committed files."""
    r = regen(ctx)
    r.check_tree()
    r.check_ran()
    ctx.observe("generated_files", len(r.committed))
    if not r.committed:
        raise AssertionError(f"none of the generated paths exists in the tree: {r.generated}")
    assert_byte_identical_regeneration(r.committed, r.runs[0].outputs, "committed (expected) vs regenerated")


@gate("SCH-SURFACE-REVIEWED-INPUT", doc="D2 §8, §3 table; e81 Makefile generate-schema", access={Access.SRC})
def reviewed_inputs_untouched(ctx: GateContext) -> None:
    """Generation never rewrites the reviewed surface or hint inputs."""
    r = regen(ctx)
    r.check_tree()
    if not r.reviewed_before:
        raise AssertionError(f"none of the reviewed inputs exists in the tree: {r.reviewed}")
    ctx.observe("reviewed_input_files", len(r.reviewed_before))
    for run in r.runs:
        assert_byte_identical_regeneration(r.reviewed_before, run.reviewed_after,
                                           f"reviewed inputs before vs after generation {run.label}")


@gate("SCH-GEN-OFFLINE", doc="D2 §7 b5", access={Access.SRC})
def generation_offline(ctx: GateContext) -> None:
    """Generation needs no login, network, token or cache: offline it succeeds and reproduces the commit."""
    r = regen(ctx)
    r.check_tree()
    r.check_ran()
    leaked = sorted({p for run in r.runs for p in run.leaked})
    if leaked:
        raise AssertionError(f"generated files embed the machine's temporary paths (HOME/working copy): {leaked}")
    assert_byte_identical_regeneration(r.committed, r.runs[-1].outputs,
                                       "committed (expected) vs generated offline in a clean copy")


@gate("SCH-BYTE-IDENTICAL", doc="D2 §4 (byte-identical output of the catalog); a tree that assembles it at build time",
      access={Access.BIN}, part="bin")
def byte_identical_bin(ctx: GateContext) -> None:
    """Where the catalog is assembled at build or run time (no committed catalog), what the build prints is the
    generation: two `dws schema --all` of one build are byte-identical."""
    ctx.release()  # where the DATA gates' catalog comes from (the report's ``catalog`` section)
    if "catalog" not in ctx.sections:
        raise NotApplicable("the tree commits its catalog (or none is configured): regeneration is judged by "
                            "SCH-BYTE-IDENTICAL[src]", wants="a tree that assembles its catalog")
    runner = ctx.cli()
    first, second = (runner.run("schema", "--all", token=None, globals_=False) for _ in range(2))
    assert_byte_identical_regeneration({"schema --all": first.stdout.encode()},
                                       {"schema --all": second.stdout.encode()},
                                       "two `dws schema --all` of the same build")


@gate("SCH-NO-SELF-REPLAY", doc="D2 §4 (\"generator 不依赖上一次 Catalog 自回放\"), §5 (\"禁止从上一版 Catalog 自举\")",
      access={Access.SRC}, part="regen")
def no_self_replay_regen(ctx: GateContext) -> None:
    """Generation does not replay the previous catalog: regenerated from a copy whose committed catalog is removed,
    and from one where it is tampered (other selection semantics, descriptions and parameters), the output equals
    what the same generator makes from the untouched tree. A generator that refuses to run (fail-closed) leaves
    that case not judged; one whose own output is not reproducible is SCH-BYTE-IDENTICAL's finding."""
    base, runs = replay_runs(ctx)
    base.check_tree()
    base.check_ran()
    a1, a2, b1 = base.runs
    if a1.outputs != a2.outputs or a1.outputs != b1.outputs:
        raise NotApplicable("the generator's own output is not reproducible (SCH-BYTE-IDENTICAL): no reference "
                            "output to compare a regeneration without its previous catalog with",
                            wants="a reproducible generator output")
    checks = []
    for run in runs:
        if run.exit_code != 0:  # fail-closed (e.g. a build that embeds the catalog): nothing produced to compare
            not_judged([run.label])
            ctx.section("self_replay_not_judged", {run.label: f"the generator exited {run.exit_code}"})
            continue
        checks.append((run.label, lambda run=run: assert_byte_identical_regeneration(
            a1.outputs, run.outputs, f"generated from the untouched tree (expected) vs with the {run.label}")))
    if not checks:
        raise NotApplicable("the generator refused to run without its previous catalog and with a tampered one "
                            "(fail-closed): there is no output to compare",
                            wants="a generator output without its previous catalog")
    collect(checks)
