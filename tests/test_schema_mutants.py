"""Mutation matrix of the schema / help / regeneration gates (tests/mutation_matrix_schema.toml).

The conforming reference passes every judged gate; each mutant makes EXACTLY its listed gates fail; every
judged gate is killed by at least one mutant or by a named violating input elsewhere.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from tests.targeted import MUTANT_ENV, pristine, targeted, unreached

REPO = Path(__file__).resolve().parents[1]
REF = REPO / "fixtures" / "reference"
MATRIX = tomllib.loads((Path(__file__).with_name("mutation_matrix_schema.toml")).read_text(encoding="utf-8"))
JUDGED = set(MATRIX["run"]["judged"])
#: pytest -k: only the judged gates (and, for ids that also have a data part, only the binary/source part).
SELECT = " or ".join(MATRIX["run"]["parts"].get(g, g)
                     for g in sorted(JUDGED))


def reference_args(*extra: str, tree: Path = REF, generator: str | None = None, select: str | None = None,
                   sample: tuple[str, ...] = ("--dws-sample", "all")) -> list[str]:
    """Contract options naming a reference tree as the whole target (binary, source, expectations, generator),
    judging the gates ``select`` (a pytest -k expression; default: the judged gates of the matrix). Every tool
    is judged (``--dws-sample all``): a mutant breaks one tool, and the matrix pins which gates see it."""
    return ["--dws-cli", f"{{python}} -I -S {tree / 'dws'}", "--dws-source", str(tree), *sample,
            "--dws-expect", str(tree / "expectations.toml"), "--dws-generator", generator or MATRIX["run"]["generator"],
            "-m", MATRIX["run"]["markers"], "-k", select or SELECT, *extra]


def failing(run) -> set[str]:
    return run.failing() & JUDGED


def _mutants() -> dict[str, str]:
    sys.path.insert(0, str(REF))
    try:
        from refdws.mutants import MUTANTS
    finally:
        sys.path.remove(str(REF))
    return MUTANTS


def test_matrix_is_consistent() -> None:
    """Every matrix entry is a real mutant, kills only judged ids, and every judged gate can fail."""
    known = _mutants()
    assert set(MATRIX["mutants"]) <= set(known), sorted(set(MATRIX["mutants"]) - set(known))
    killed = {g for m in MATRIX["mutants"].values() for g in m["kills"]}
    assert killed <= JUDGED, sorted(killed - JUDGED)
    assert JUDGED == killed | set(MATRIX["run"]["killed_elsewhere"]), sorted(JUDGED - killed)


@pytest.mark.slow
def test_conforming_reference_passes(run_contract, tmp_path_factory) -> None:
    run = pristine(run_contract, tmp_path_factory, "schema", reference_args()).run  # recorded once (tests/targeted.py)
    assert run.ret == 0, run.output()[-3000:]
    statuses = {g: run.status(g) for g in JUDGED}
    assert statuses == dict.fromkeys(JUDGED, "passed"), statuses


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(MATRIX["mutants"]))
def test_mutant_kills_exactly(run_contract, tmp_path_factory, mutant: str) -> None:
    conforming = pristine(run_contract, tmp_path_factory, "schema", reference_args())
    run = run_contract(*reference_args("--dws-env", f"DWS_REF_MUTANT={mutant}", *targeted(conforming)))
    assert failing(run) == set(MATRIX["mutants"][mutant]["kills"]), \
        unreached(conforming, MUTANT_ENV, mutant) + run.output()[-4000:]


STRICT = [(reading, m) for reading, table in MATRIX.get("strict", {}).items() for m in table]


@pytest.mark.slow
@pytest.mark.parametrize(("reading", "mutant"), STRICT, ids=[f"{r}:{m}" for r, m in STRICT])
def test_a_strict_reading_also_kills_what_its_default_accepts(run_contract, tmp_path_factory, reading: str,
                                                              mutant: str) -> None:
    """Issue 35 (5): a reviewed alias listed in the schema passes by default (D2 §4) and fails only under the named
    strict reading (`--dws-strict=alias-absent`): the mutant kills its default gates plus the strict ones."""
    conforming = pristine(run_contract, tmp_path_factory, "schema", reference_args())
    run = run_contract(*reference_args("--dws-env", f"DWS_REF_MUTANT={mutant}", f"--dws-strict={reading}",
                                       *targeted(conforming)))
    want = set(MATRIX["mutants"][mutant]["kills"]) | set(MATRIX["strict"][reading][mutant])
    assert failing(run) == want, run.output()[-4000:]
    assert run.report["target"]["strict"] == [reading]


@pytest.mark.slow
def test_default_sample_reads_the_help_of_a_tool_whose_probe_disagrees(run_contract) -> None:
    """The default (coverage) sample leaves `chat +conversation-list` out. With `help-only-flag` its Help shows a
    --sort its schema lacks (cf8cf95's `aisearch enterprise` did this with inherited flags, outside the
    sample): its cheap parse probe lists --sort, so the default run reads that Help too and SCH-HELP-EQ-SCHEMA
    fails on exactly that tool. The conforming reference has no such tool: no Help beyond the sample."""
    tool = "chat.shortcut_conversation_list"
    conforming = run_contract(*reference_args(select="SCH-HELP-EQ-SCHEMA", sample=()))
    assert conforming.ret == 0, conforming.output()[-3000:]
    assert conforming.report["sampling"]["probe_suspects"] == []
    assert tool not in conforming.gates["SCH-HELP-EQ-SCHEMA"]["outcomes"]  # outside the coverage sample
    mutant = run_contract(*reference_args("--dws-env", "DWS_REF_MUTANT=help-only-flag", select="SCH-HELP-EQ-SCHEMA",
                                          sample=()))
    assert mutant.report["sampling"]["probe_suspects"] == [tool]
    assert mutant.gates["SCH-HELP-EQ-SCHEMA"]["failed_items"] == [tool], mutant.output()[-3000:]
