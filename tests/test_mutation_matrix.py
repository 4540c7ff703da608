"""Mutation matrix of the D1 runtime gates: every gate can fail, and fails for the right deviation.

For each mutant listed in ``tests/mutation_matrix.toml`` a whole contract session judges the reference
implementation with that one deviation switched on; the runtime gate ids that fail in the JSON report must be
exactly the listed set. The conforming reference fails none and passes every runtime gate. A static check
proves that every runtime gate is killed by at least one mutant and that every mutant exists.

Cost: one session per mutant, answered from the recorded conforming session wherever an invocation never reached
the mutant's switch point (tests/targeted.py: about 160 invocations, of which a mutant's own run makes 1 to 160
live); spread over workers with ``-n 2``.
"""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

from pytest_dws.registry import all_gates
from tests.targeted import MUTANT_ENV, pristine, targeted, unreached

REPO = Path(__file__).resolve().parents[1]
MATRIX_FILE = Path(__file__).with_name("mutation_matrix.toml")
MATRIX = tomllib.loads(MATRIX_FILE.read_text(encoding="utf-8"))
#: -S: the reference is stdlib only; skipping site (editable-install .pth hooks) halves its start-up time.
CLI = f"{{python}} -I -S {REPO / 'fixtures' / 'reference' / 'dws'}"
MARK = "dws_err or dws_tgt or dws_ali or dws_smk or dws_acc or dws_wire"
RUNTIME_FAMILIES = {"ERR", "TGT", "ALI", "SMK", "ACC", "WIRE"}
#: The ALI gates judged on the binary's schema and the Skills (ALI-SCHEMA-FACTS ...): the schema matrix's.
#: The default job's matrix: mutants the whole `pytest --dws-contract` must fail (exit 1), with the exact gates.
DEFAULT_MATRIX = tomllib.loads(MATRIX_FILE.with_name("mutation_matrix_default.toml").read_text(encoding="utf-8"))[
    "mutants"]
SCHEMA_JUDGED = set(tomllib.loads(MATRIX_FILE.with_name("mutation_matrix_schema.toml").read_text(encoding="utf-8"))
                    ["run"]["judged"])


#: Runtime gates judged elsewhere: the opt-in real smoke (tests/test_live_smoke.py, against a loopback stand-in).
ELSEWHERE = {"SMK-LIVE"}


def runtime_gates() -> set[str]:
    """Gate ids of the runtime families that this matrix judges (the schema-side ALI gates are the schema
    matrix's, tests/mutation_matrix_schema.toml)."""
    return {g.id for g in all_gates() if g.family in RUNTIME_FAMILIES} - SCHEMA_JUDGED - ELSEWHERE


def reference_mutants() -> dict[str, str]:
    path = REPO / "fixtures" / "reference" / "refdws" / "mutants.py"
    spec = importlib.util.spec_from_file_location("_refdws_mutants", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.MUTANTS)


def test_matrix_kills_every_runtime_gate_with_known_mutants() -> None:
    gates = runtime_gates()
    known = reference_mutants()
    matrix = MATRIX["mutants"]
    assert MATRIX["conforming"]["fails"] == []
    unknown = sorted(set(matrix) - set(known))
    assert not unknown, f"{MATRIX_FILE.name} names mutants the reference does not have: {unknown}"
    foreign = {m: sorted(set(ids) - gates) for m, ids in matrix.items() if set(ids) - gates}
    assert not foreign, f"{MATRIX_FILE.name} lists ids that are not runtime gates: {foreign}"
    empty = sorted(m for m, ids in matrix.items() if not ids)
    assert not empty, f"mutants that kill nothing do not belong in the matrix: {empty}"
    survivors = sorted(gates - {g for ids in matrix.values() for g in ids})
    assert not survivors, f"runtime gates no mutant kills (add a mutant): {survivors}"
    required = {"prefix-unknown-text", "prefix-cid-group-rejected", "prefix-business-error", "pick-first",
                "retry-writes", "name-as-id", "partial-as-complete", "alias-in-help", "alias-conflict-accepted"}
    assert required <= set(matrix), f"required mutants missing: {sorted(required - set(matrix))}"


@pytest.mark.slow
@pytest.mark.parametrize("mutant", ["", *sorted(MATRIX["mutants"])], ids=lambda m: m or "conforming")
def test_mutant_fails_exactly_its_gates(run_contract, tmp_path_factory, mutant: str) -> None:
    args = ["--dws-cli", CLI, "-m", MARK]
    conforming = pristine(run_contract, tmp_path_factory, "runtime", args)  # the conforming run, recorded once
    finding = unreached(conforming, MUTANT_ENV, mutant) if mutant else ""
    run = run_contract(*args, "--dws-env", f"DWS_REF_MUTANT={mutant}", *targeted(conforming)) if mutant \
        else conforming.run
    gates = runtime_gates()
    assert run.report, f"no JSON report (exit {run.ret}):\n{run.output()[-3000:]}"
    missing = sorted(gates - set(run.gates))
    assert not missing, f"runtime gates absent from the report: {missing}\n{run.output()[-2000:]}"
    failing = run.failing() & gates
    expected = set(MATRIX["mutants"].get(mutant, []))
    if failing != expected:
        line = f'{mutant or "conforming"} = {sorted(failing)}'.replace("'", '"')
        details = "\n".join(f"  {g}: {run.gates[g].get('failed_items')}" for g in sorted(failing ^ expected)
                            if g in run.gates)
        pytest.fail(f"{finding}mutant {mutant or '(none)'}: failing runtime gates differ from {MATRIX_FILE.name}\n"
                    f"  unexpected: {sorted(failing - expected)}\n  not failing: {sorted(expected - failing)}\n"
                    f"{details}\n  actual, as a matrix line: {line}", pytrace=False)
    if not mutant:
        statuses = {g: run.status(g) for g in gates}
        not_passed = {g: s for g, s in statuses.items() if s != "passed"}
        assert not not_passed, f"the conforming reference must pass every runtime gate: {not_passed}"


#: The default job: the repository's own target (pyproject.toml [tool.pytest.ini_options]), every gate.
REF = REPO / "fixtures" / "reference"
DEFAULT_JOB = ["--dws-cli", CLI, "--dws-source", str(REF), "--dws-expect", str(REF / "expectations.toml"),
               "--dws-generator", "{python} -I -S tools/generate_catalog.py"]


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(DEFAULT_MATRIX))
def test_default_job_fails_exactly_its_gates(run_contract, tmp_path_factory, mutant: str) -> None:
    """A build that breaks a sentence never gets through the default job: exit 1, and the closing block names
    every gate the deviation fails (the exact set is pinned, so a gate that stops failing is noticed)."""
    conforming = pristine(run_contract, tmp_path_factory, "default-job", DEFAULT_JOB)
    finding = unreached(conforming, MUTANT_ENV, mutant)
    run = run_contract(*DEFAULT_JOB, "--dws-env", f"DWS_REF_MUTANT={mutant}", *targeted(conforming))
    expected = set(DEFAULT_MATRIX[mutant])
    failing = run.failing()
    if failing != expected:
        line = f'"{mutant}" = {sorted(failing)}'.replace("'", '"')
        pytest.fail(f"{finding}mutant {mutant}: failing gates of the default job differ from "
                    f"mutation_matrix_default.toml\n  unexpected: {sorted(failing - expected)}\n  not failing: "
                    f"{sorted(expected - failing)}\n  actual, as a matrix line: {line}\n{run.output()[-3000:]}",
                    pytrace=False)
    assert run.ret == 1, run.output()[-3000:]
    out = run.output()
    missing = sorted(g for g in expected if f"FAIL {g} " not in out)
    assert not missing, f"the closing block does not name {missing}\n{out[-3000:]}"


def test_every_reference_mutant_is_judged() -> None:
    """Issue 34 (1): every deviation the reference can be switched to is in a matrix, with the gates it must fail
    (runtime families, schema families, or the whole default job). One left out needs a test proving it is
    invisible from outside, named in tests/mutation_matrix.toml [invisible]."""
    schema = tomllib.loads(MATRIX_FILE.with_name("mutation_matrix_schema.toml").read_text(encoding="utf-8"))
    judged = set(MATRIX["mutants"]) | set(DEFAULT_MATRIX) | set(schema["mutants"])
    invisible = dict(MATRIX.get("invisible", {}))
    known = set(reference_mutants())
    assert not (set(DEFAULT_MATRIX) - known), sorted(set(DEFAULT_MATRIX) - known)
    assert all(DEFAULT_MATRIX.values()), "a default-job mutant that fails nothing does not belong there"
    missing = sorted(known - judged - set(invisible))
    assert not missing, f"reference mutants no matrix judges (add them with the gates they must fail): {missing}"
    tests = Path(__file__).parent
    for mutant, test in invisible.items():
        module, _, name = test.partition("::")
        assert f"def {name}(" in (tests / module).read_text(encoding="utf-8"), f"{mutant}: no test {test}"
