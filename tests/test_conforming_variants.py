"""Conforming variants (issue 25): the reference implementation with one rule obeyed by another valid mechanism
(refdws.variants) must get the same verdict as the reference itself, gate by gate. A gate that fails a variant,
or cannot judge it where it judged the reference, judged one release's mechanism instead of the document's rule.

The mutants (tests/test_mutation_matrix*.py) prove that every gate can fail; this matrix proves that the gates pass
what obeys them. Its size: variants x every registered gate of the README's main job."""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import reference_copy

REPO = Path(__file__).resolve().parents[1]
REF = REPO / "fixtures" / "reference"
CLI = f"{{python}} -I -S {REF / 'dws'}"


def _variants_module() -> Any:
    spec = importlib.util.spec_from_file_location("_refdws_variants", REF / "refdws" / "variants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference_variants() -> dict[str, str]:
    return dict(_variants_module().VARIANTS)


VARIANTS = reference_variants()
#: Variants that are a property of the source tree: named in its refdws/VARIANTS file, or a reviewed change of its
#: inputs (refdws.variants.TREE_EDITS); judged on a regenerated copy of the tree.
TREE_EDITS = _variants_module().TREE_EDITS
TREE_VARIANTS = {"catalog-extra", "alias-in-group", *TREE_EDITS}


def variant_error_keys() -> dict[str, str]:
    """The error-keys variant's names of the typed fields (refdws.variants_shown.ERROR_KEYS)."""
    import tests.refdws_harness  # noqa: F401  (puts the reference on sys.path)

    return dict(importlib.import_module("refdws.variants_shown").ERROR_KEYS)


def error_keys_profile(folder: Path) -> Path:
    """The packaged default profile whose ``[errors]`` section names the error-keys variant's envelope (its typed
    error under ``failure``, each field under :func:`variant_error_keys`): the release's profile data."""
    from pytest_dws.inputs.profile import DEFAULT_PROFILE

    section = "[errors]\nobject = \"failure\"\n\n[errors.keys]\n" + "".join(
        f'{field} = "{key}"\n' for field, key in variant_error_keys().items()) + "\n"
    text, n = re.subn(r"^\[errors\]\n.*?(?=^# -- )", lambda _: section, DEFAULT_PROFILE.read_text(encoding="utf-8"),
                      flags=re.MULTILINE | re.DOTALL)
    assert n == 1, "the default profile's [errors] section moved"
    path = folder / "profile-error-keys.toml"
    path.write_text(text, encoding="utf-8")
    return path


#: Variant -> the options it is judged with besides the main job's: the release data a variant needs (a profile
#: naming its envelope); the verdict must still be the reference's, gate by gate.
VARIANT_ARGS: dict[str, Callable[[Path], list[str]]] = {
    "error-keys": lambda folder: ["--dws-profile", str(error_keys_profile(folder))],
}


def main_job_args(tree: Path) -> list[str]:
    """The main job's options on the reference's tree at ``tree`` (its dws, source, expectations, generator)."""
    return ["--dws-cli", f"{{python}} -I -S {tree / 'dws'}", "--dws-source", str(tree), "--dws-expect",
            str(tree / "expectations.toml"), "--dws-generator", "{python} -I -S tools/generate_catalog.py"]


def _main_job(run_contract: Any, *extra: str) -> Any:
    return run_contract(*main_job_args(REF), *extra)


def variant_tree(variant: str, tree: Path) -> list[str]:
    """The main job's options on a copy of the reference's tree at ``tree`` that says tree variant ``variant`` (its
    refdws/VARIANTS file, or a reviewed change of its inputs), with its catalog regenerated (the committed one too)."""
    import subprocess
    import sys

    reference_copy(tree)
    if variant in TREE_EDITS:
        TREE_EDITS[variant](tree)
    else:
        (tree / "refdws" / "VARIANTS").write_text(variant + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-I", "-S", "tools/generate_catalog.py"], cwd=tree, check=True, capture_output=True)
    return main_job_args(tree)


@pytest.fixture
def conforming(run_contract: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Gate id -> status of the reference itself (the verdict every variant must get): the main job with these
    options, the recorded conforming default job the default-job mutation matrix starts from too (tests/targeted.py:
    made once per test run, shared by the xdist workers)."""
    from tests.targeted import pristine
    from tests.test_mutation_matrix import DEFAULT_JOB

    gates = pristine(run_contract, tmp_path_factory, "default-job", DEFAULT_JOB).run.gates
    statuses = {g: v["status"] for g, v in gates.items()}
    assert "failed" not in statuses.values() and "passed" in statuses.values(), statuses
    return statuses


@pytest.mark.slow  # no xdist group: the reference's own verdict is recorded once for every worker (tests/targeted.py),
@pytest.mark.parametrize("variant", sorted(VARIANTS))  # so the ~20 whole jobs spread over the workers
def test_a_conforming_variant_gets_the_references_verdict(variant: str, run_contract: Any, tmp_path: Path,
                                                         conforming: dict[str, str], answered: list[str]) -> None:
    # answered from the recorded conforming job wherever the variant's switch is not reached and, for a tree variant,
    # no file of the tree that differs was read (tests/conftest.py answered, pytest_dws.launch.targeting)
    if variant in TREE_VARIANTS:  # the tree says it; its catalog is regenerated with it (the committed one too)
        run = run_contract(*variant_tree(variant, tmp_path / "tree"), *answered)
    else:
        extra = VARIANT_ARGS[variant](tmp_path) if variant in VARIANT_ARGS else []
        run = _main_job(run_contract, f"--dws-env=DWS_REF_VARIANT={variant}", *answered, *extra)
    assert run.report, run.output()[-3000:]
    got = {g: v["status"] for g, v in run.gates.items()}
    differ = {g: (conforming.get(g), got.get(g)) for g in sorted(set(got) | set(conforming))
              if got.get(g) != conforming.get(g)}
    reasons = {g: run.gates.get(g, {}).get("reasons") for g in differ}
    assert not differ, f"variant {variant!r} ({VARIANTS[variant]}) changed verdicts (reference, variant): {differ}\n" \
                       f"{reasons}"
    assert run.ret == 0


@pytest.mark.slow
def test_egress_that_is_not_discovery_is_reported_per_host_and_judged_by_no_gate(run_contract: Any) -> None:
    """Issue 25 (3): the telemetry variant's connection is named in the report's egress, with its kind, and the
    no-discovery gates pass; an attempt to reach the service's gateway is discovery's business (the unit test)."""
    run = run_contract("--dws-cli", CLI, "-k", "NO-DISCOVERY or NO-LISTTOOLS", "--dws-env=DWS_REF_VARIANT=telemetry")
    egress = run.report.get("egress") or {}
    assert egress.get("telemetry.refdws.invalid:443", {}).get("kind") == "other", egress
    judged = {g: v["status"] for g, v in run.gates.items()}
    assert judged and all(s == "passed" for s in judged.values()), judged
    assert "egress off the machine" in run.output()


def test_the_kind_of_an_egress_attempt() -> None:
    from fake_mcp.egress import parse_request
    from pytest_dws.inputs.profile import DEFAULT_PROFILE, load_profile

    prof = load_profile(DEFAULT_PROFILE)
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    plain = parse_request(b"POST http://example.test/mcp HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    assert plain is not None and prof.egress_kind(plain.host, plain.seen_kind) == "mcp-discovery"
    gateway = parse_request(b"CONNECT mcp-gw.dingtalk.com:443 HTTP/1.1\r\n\r\n")
    assert gateway is not None and prof.egress_kind(gateway.host, gateway.seen_kind) == "mcp"
    other = parse_request(b"CONNECT telemetry.example.test:443 HTTP/1.1\r\n\r\n")
    assert other is not None and prof.egress_kind(other.host, other.seen_kind) == "other"


@pytest.mark.slow
def test_the_strict_scope_argument_reading_fails_client_side_scoping_and_nothing_else(run_contract: Any,
                                                                                      answered: list[str]) -> None:
    """docs/contract.md R9: the scope-client variant passes by default (the effect lands on the target); the named
    strict reading `--dws-strict=scope-argument` ('下层收到同一 CID' read as the business call's ID argument) fails
    exactly the +search-msg cases whose business call no longer carries the CID, and the reference still passes it."""
    select = ("-m", "dws_tgt or dws_smk or dws_acc")
    strict = run_contract("--dws-cli", CLI, *select, "--dws-env=DWS_REF_VARIANT=scope-client",
                          "--dws-strict=scope-argument", *answered)
    assert strict.ret == 1 and strict.report["target"]["strict"] == ["scope-argument"], strict.output()[-2000:]
    failed = {g: v.get("failed_items") for g, v in strict.gates.items() if v["status"] == "failed"}
    assert failed and all(items and set(items) <= {"+search-msg"} for g, items in failed.items()
                          if g.startswith("TGT-")), failed
    assert "TGT-GROUP-CID" in failed and "(--dws-strict=scope-argument)" in strict.output()
    reference = run_contract("--dws-cli", CLI, *select, "--dws-strict=scope-argument", *answered)
    assert reference.ret == 0, reference.output()[-2000:]


def test_the_strict_alias_absent_reading_fails_a_reviewed_alias_listed_in_the_schema(run_contract: Any,
                                                                                      tmp_path: Path) -> None:
    """docs/contract.md R9: the alias-listed variant (a reviewed hidden alias among its canonical tool's aliases)
    passes ALI-NO-SECOND-ENTRY by default (D2 §4) and fails it under `--dws-strict=alias-absent`."""
    args = (*variant_tree("alias-listed", tmp_path / "tree"), "-k", "ALI-NO-SECOND-ENTRY")
    default = run_contract(*args)
    assert default.ret == 0 and default.status("ALI-NO-SECOND-ENTRY") == "passed", default.output()[-1500:]
    strict = run_contract(*args, "--dws-strict=alias-absent")
    assert strict.ret == 1 and strict.status("ALI-NO-SECOND-ENTRY") == "failed", strict.output()[-1500:]
    assert "chat +chat-rename (listed as an alias)" in strict.output()


@pytest.mark.slow
def test_the_error_keys_variant_fails_without_the_profile_that_names_its_keys(run_contract: Any,
                                                                               answered: list[str]) -> None:
    """Issue 42: the mapping is what makes error-keys pass. Judged with the default profile (the typed error under
    .error), its errors are no typed errors at all: the error-shape gates fail; with its profile they pass."""
    select = ("-k", "ERR-STABLE-FIELDS or ERR-JSON-CONSISTENT")
    plain = run_contract("--dws-cli", CLI, *select, "--dws-env=DWS_REF_VARIANT=error-keys", *answered)
    assert plain.ret == 1, plain.output()[-2000:]
    assert {plain.status(g) for g in ("ERR-STABLE-FIELDS", "ERR-JSON-CONSISTENT")} == {"failed"}, plain.gates
    assert "no JSON error object on stderr" in plain.output()


def test_the_judge_reads_a_renamed_envelope_through_the_profile(tmp_path: Path) -> None:
    """The judge (core.outcome, used on recorded files) and an Invocation read the error-keys variant's envelope
    through the profile's [errors]: the same class and typed evidence as the reference's; without it, none."""
    import json

    from pytest_dws.core.outcome import Outcome, judge
    from pytest_dws.inputs.profile import load_profile
    from pytest_dws.launch.invocation import Invocation

    canonical = {"code": 3, "category": "validation", "message": "m", "reason": "flag_conflict", "hint": "h",
                 "details": {"given": ["query", "text"]}}
    keys = variant_error_keys()
    shown = json.dumps({"failure": {keys.get(k, k): v for k, v in canonical.items()}})
    envelope = load_profile(error_keys_profile(tmp_path)).errors
    reference = judge(Outcome(3, "", json.dumps({"error": canonical})))
    assert judge(Outcome(3, "", shown), envelope) == reference and reference.evidence["reason"] == "flag_conflict"
    assert judge(Outcome(3, "", shown)).evidence["rule"] == "no-error-envelope"
    assert Invocation(["dws"], 3, "", shown, envelope=envelope).error == canonical
    assert Invocation(["dws"], 3, "", shown).error is None


@pytest.mark.slow
def test_a_replayed_recording_is_read_through_the_profile_it_is_judged_with(run_contract: Any, tmp_path: Path) -> None:
    """Issue 42: a recorded invocation is read through the envelope of the run that replays it: the error-keys
    variant recorded with its profile passes replayed alone (the recording keeps --dws-profile) and fails when the
    replay is given the default profile back (the same recorded stderr, read as R4.1's .error)."""
    from pytest_dws.inputs.profile import DEFAULT_PROFILE

    rec, select = tmp_path / "rec", ("-k", "ERR-STABLE-FIELDS")
    live = run_contract("--dws-cli", CLI, *select, "--dws-env=DWS_REF_VARIANT=error-keys", "--dws-profile",
                        str(error_keys_profile(tmp_path)), "--dws-record", str(rec))
    assert live.ret == 0 and live.status("ERR-STABLE-FIELDS") == "passed", live.output()[-2000:]
    replayed = run_contract("--dws-replay", str(rec))
    assert replayed.ret == 0 and replayed.status("ERR-STABLE-FIELDS") == "passed", replayed.output()[-2000:]
    plain = run_contract("--dws-replay", str(rec), "--dws-profile", str(DEFAULT_PROFILE))
    assert plain.ret == 1 and plain.status("ERR-STABLE-FIELDS") == "failed", plain.output()[-2000:]
