"""Coverage-targeted contract runs (issue 44; pytest_dws.launch.targeting, tests/targeted.py): the reference reports
the switch points each invocation consulted, and a run judging one mutant takes from the recorded conforming run
every invocation that never reached the mutant's switch. These tests prove the parts and the whole: the probe
changes nothing the target prints, the side channel says what it must, the choice of what is answered follows the
rules, and (the proof) a drawn mutant and variant get item by item the verdict of their fully live run."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.core.identity import target_digest
from pytest_dws.launch.recording import Recording
from pytest_dws.launch.targeting import CONSULTED_ENV, Targeting, read_consulted
from tests.conftest import reference_copy
from tests.targeted import MUTANT_ENV, VARIANT_ENV, pristine, targeted, verdicts

REPO = Path(__file__).resolve().parents[1]
REF = REPO / "fixtures" / "reference"
sys.path.insert(0, str(REF))


def _dws(tmp_path: Path, *argv: str, coverage: bool,
         launcher: Path = REF / "dws") -> tuple[subprocess.CompletedProcess[str], list[str] | None]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "HTTP_PROXY": "http://127.0.0.1:1",
           "HTTPS_PROXY": "http://127.0.0.1:1", "NO_PROXY": "127.0.0.1,localhost,::1", "DWS_DISABLE_KEYCHAIN": "1"}
    log = tmp_path / "consulted"
    if coverage:
        env[CONSULTED_ENV] = str(log)
    proc = subprocess.run([sys.executable, "-I", "-S", str(launcher), *argv], capture_output=True, text=True,
                          env=env, timeout=30, check=False)
    return proc, read_consulted(log)


@pytest.mark.parametrize("argv", [("--help",), ("schema", "chat.shortcut_search_msg"), ("chat", "+search-msg",
                                  "--help"), ("--token", "t", "chat", "+chat-messages", "--group", "x")])
def test_the_probe_changes_nothing_the_target_prints(tmp_path: Path, argv: tuple[str, ...]) -> None:
    """Every switch point instrumented (the coverage channel on) and the same exit, stdout and stderr."""
    plain, none = _dws(tmp_path, *argv, coverage=False)
    probed, lines = _dws(tmp_path, *argv, coverage=True)
    assert none is None and lines
    assert (probed.returncode, probed.stdout, probed.stderr) == (plain.returncode, plain.stdout, plain.stderr)


#: The mutants whose patch edits the command tree (refdws.mutants.patch(edits=...)): reached where a process reads
#: an entry they change.
TREE_EDIT_MUTANTS = {"cli-requires-optional", "fallback-override", "fallback-unhide", "flag-not-in-cli",
                     "help-only-flag"}


def test_the_side_channel_declares_its_variables_and_names_only_what_was_reached(tmp_path: Path) -> None:
    """`--help` reaches every start's mutants (a wrapper of main) and the tree edit whose entry the root's help reads
    (a hidden fallback product root, un-hidden by fallback-unhide), not the others: the classifier's mutants, the
    edits of leaves, the help mutant's listing of aliases (the root lists no command with one), the mutants guarded
    where they depart (a flag set, a target check, a retry, a search scope, a result with failures); every mutant's
    patch is wrapping or a tree edit (none is reported by every start for being more); of the variants only those
    whose block is more than rebinding functions (a connection at start) are, and the paging and schema ones are not
    (small-pages rebinds the function that says the page size, read where a search pages)."""
    from refdws import coverage, deviations_d1, deviations_d2, deviations_targets, mutants, variants  # noqa: F401

    _, lines = _dws(tmp_path, "--help", coverage=True)
    assert lines is not None and {MUTANT_ENV, VARIANT_ENV} <= set(lines)
    reached = {line.partition("=")[2] for line in lines if line.startswith(MUTANT_ENV + "=")}
    always = {name for name, apply in mutants.PATCHES.items() if not coverage.wraps_only(apply)}
    assert always == TREE_EDIT_MUTANTS == set(mutants.EDITS)
    assert {"startup-gateway", "startup-discovery", "fallback-unhide"} <= reached
    assert not reached & {"no-permission", "pick-first", "drop-trace", "schema-group-level", "alias-in-help",
                          "scope-scan-lies", "scope-unfiltered", "prefix-unknown-text", "prefix-cid-group-rejected",
                          "direct-query-accepted", "name-as-id", "no-read-retry", "partial-as-complete",
                          "example-fails", "oneof-first-only", *(TREE_EDIT_MUTANTS - {"fallback-unhide"})}
    points = coverage.switch_points(variants.__file__)  # (variants_shown's too, through its install call)
    whole = {name for name in variants.VARIANTS if points.get(name) is None}
    assert whole == {"telemetry", "catalog-extra", "alias-in-group", *variants.TREE_EDITS}
    assert {line.partition("=")[2] for line in lines if line.startswith(VARIANT_ENV + "=")} == whole
    assert points["small-pages"] == [("resolver", "paging")]
    guard = "when:switches.alias_given"  # its rebinding through coverage.guarded: reached where an alias is given
    assert points["alias-notice"] == [("parse", "merge_aliases", guard), ("cli", "merge_aliases", guard)]


@pytest.mark.parametrize(("argv", "edits"), [
    (("chat", "+conversation-list", "--help"), {"flag-not-in-cli", "help-only-flag"}),
    (("calendar", "event", "list", "--help"), {"cli-requires-optional"}),
    (("chat", "message", "send", "--help"), {"fallback-override"}),
    (("chat", "--help"), set()),  # lists its commands: their names and summaries, no flags
    (("--token", "t", "chat", "+at-me", "--group", "x"), set())])
def test_a_tree_edit_is_reached_where_its_entry_is_read(tmp_path: Path, argv: tuple[str, ...],
                                                        edits: set[str]) -> None:
    """A mutant that edits the command tree is reached by a process that reads an entry it changes (a leaf's flags
    by its help or its parse, a group's command by the path through it), not by one that reads the nodes around
    it (refdws.nodes.Node)."""
    _, lines = _dws(tmp_path, *argv, coverage=True)
    reached = {line.partition("=")[2] for line in lines or [] if line.startswith(MUTANT_ENV + "=")}
    assert reached & TREE_EDIT_MUTANTS == edits


def test_a_watched_node_reads_as_a_dict_and_reports_every_way_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """refdws.nodes.Node: the same JSON, copies, comparisons and lookups as the dict it holds; an entry read by
    key reports the mutants editing that entry only, a walk or a copy reports every watcher."""
    from refdws import coverage, jsonc
    from refdws.nodes import Node

    seen: list[str] = []
    monkeypatch.setattr(coverage, "consulted", lambda variable, name="": seen.append(name))
    plain = {"kind": "leaf", "flags": [{"name": "a"}], "hidden": False}
    node = Node(plain)
    node.watch("flags", "m")
    reads: list[Callable[[], Any]] = [lambda: node["kind"], lambda: node.get("hidden"), lambda: "kind" in node]
    for read in reads:
        read()
    assert seen == []  # entries nobody edits
    every: list[Callable[[], Any]] = [
        lambda: node["flags"], lambda: node.get("flags"), lambda: "flags" in node, lambda: list(node),
        lambda: len(node), lambda: node.keys(), lambda: node.values(), lambda: node.items(), lambda: node.copy(),
        lambda: dict(node), lambda: {**node}, lambda: (lambda **kw: kw)(**node), lambda: jsonc.dumps(node),
        lambda: node == plain, lambda: node != plain]
    for n, read in enumerate(every):
        before = len(seen)
        read()
        assert len(seen) > before and set(seen) == {"m"}, n
    assert jsonc.dumps(node) == jsonc.dumps(plain) and dict(node) == plain and {**node} == plain == node


def test_a_guarded_switch_is_reached_only_by_the_calls_its_guard_names(tmp_path: Path, fake: Any) -> None:
    """A variant or mutant wrapping a function every command calls reports its switch only where its guard
    (refdws.switches) holds: a read carrying a stable ID reaches validate-first, not member-pages nor the scoped
    search; an alias spelling reaches alias-notice; the retry boundary (retry-not-started and the retry-budget
    mutants) is reached by a transient failure only, of the kind of call each one retries; a trusted endpoint never
    reaches untrusted-auth."""
    from tests.refdws_harness import CID_A, NETWORK, T_ARGS, dws

    def reached(target: Any, *argv: str) -> set[str]:
        log = tmp_path / "consulted"
        run = dws(target, *argv, consulted=log)
        lines = read_consulted(log)
        assert lines is not None, run.stderr
        return {line for line in lines if "=" in line}

    def on(variable: str, *names: str) -> set[str]:
        return {f"{variable}={n}" for n in names}

    served = reached(fake, "chat", "+chat-messages", "--group", CID_A, *T_ARGS)
    assert on(VARIANT_ENV, "validate-first") <= served
    assert not on(VARIANT_ENV, "member-pages", "scope-client", "alias-notice", "id-format", "retry-not-started") \
        & served
    assert not on(MUTANT_ENV, "no-read-retry", "retry-writes", "untrusted-auth", "members-incomplete-lies") & served
    retry = on(VARIANT_ENV, "retry-not-started") | on(MUTANT_ENV, "no-read-retry", "read-retry-twice", "retry-writes")
    failed = reached(None, "chat", "+chat-messages", "--group", CID_A, *T_ARGS)  # no endpoint: no budget retries it
    assert not retry & failed
    fake.on("list_conversation_message_v2", {"payload": NETWORK})  # a transient failure of a read
    read = reached(fake, "chat", "+chat-messages", "--group", CID_A, *T_ARGS)
    assert retry & read == on(MUTANT_ENV, "no-read-retry", "read-retry-twice")
    fake.on("send_personal_message", {"payload": {**NETWORK, "execution_started": False}})  # of a write, not started
    write = reached(fake, "chat", "+send-to-group", "--group", CID_A, "--text", "x", "--yes")
    assert retry & write == on(VARIANT_ENV, "retry-not-started") | on(MUTANT_ENV, "retry-writes")
    aliased = reached(fake, "chat", "+chat-messages", "--group", CID_A, *T_ARGS, "--page-size", "5")
    assert on(VARIANT_ENV, "alias-notice") <= aliased


def test_the_saved_switch_point_plan_is_the_analysis_of_these_sources() -> None:
    """The reference reads its switch-point analysis from refdws/switch_points.json when that was made from its
    current sources (a recorded start would otherwise parse the deviation modules: ~45 ms each); the saved plan is
    the analysis itself, and the probe's answer is the same with it and without it."""
    import json

    from refdws import coverage, deviations_d1, deviations_d2, deviations_targets, mutants, variants  # noqa: F401

    saved = json.loads(Path(coverage.PLAN_FILE).read_text(encoding="utf-8"))
    assert saved == coverage.make_plan(mutants.PATCHES, variants.__file__), \
        "refdws/switch_points.json is not current: run python fixtures/reference/tools/switch_points.py"


def test_a_stale_switch_point_plan_is_ignored(tmp_path: Path) -> None:
    """A plan made from other sources changes nothing the probe reports (it is ignored, the analysis runs); the
    same plan made from these sources is read (here: every patch said to be more than wrapping, so every mutant
    is reported consulted by the start, but the tree edits: their probe is the nodes they change, whatever the
    plan says, and the root's help reads one of them, fallback-unhide's)."""

    copy = tmp_path / "reference"
    reference_copy(copy)
    plan = copy / "refdws" / "switch_points.json"
    data = json.loads(plan.read_text(encoding="utf-8"))
    never = {name: False for name in data["wraps_only"]}
    reports = []
    for digest in ("0" * 64, data["digest"]):
        plan.write_text(json.dumps({**data, "digest": digest, "wraps_only": never}), encoding="utf-8")
        reports.append(_dws(tmp_path, "--help", coverage=True, launcher=copy / "dws")[1] or [])
    assert reports[0] == _dws(tmp_path, "--help", coverage=True)[1]
    reached = {line.partition("=")[2] for line in reports[1] if line.startswith(MUTANT_ENV + "=")}
    assert reached == set(never) - TREE_EDIT_MUTANTS | {"fallback-unhide"}
    assert reached > {line.partition("=")[2] for line in reports[0] if line.startswith(MUTANT_ENV + "=")}


def test_a_mutant_is_switched_only_through_its_patch_or_is_on() -> None:
    """The coverage of a mutant is its patch's wrap points or its is_on checks: a switch read any other way (the
    active set itself) would be invisible to the probe, and a run answered from the recording could not see it."""
    readers = [f"{p.relative_to(REPO)}:{n}" for p in [*REF.rglob("*.py"), REF / "dws"]
               if p.name not in ("mutants.py", "variants.py")
               for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"\b(mutants|variants)\.active\(|DWS_REF_(MUTANT|VARIANT)|\b_active\b",
                            line.partition("#")[0])]  # (a comment may name them)
    assert not readers, readers


def _recording(tmp_path: Path, docs: dict[str, list[list[str] | None]], env: dict[str, str] | None = None
               ) -> Recording:
    rec = Recording(tmp_path, {"digest": "d", "options": {"env": env} if env else {}})
    rec.outcomes = {key: [{"key": key, "outcome": {"consulted": c} if c is not None else {}} for c in asks]
                    for key, asks in docs.items()}
    return rec


def test_what_a_recording_answers(tmp_path: Path) -> None:
    """The rules of pytest_dws.launch.targeting, one by one."""
    rec = _recording(tmp_path, {"k": [["V", "V=a", "W"]]}, env={"W": "x"})
    t = Targeting(rec, {"V": "b", "W": "x", "OTHER": "1"}, [])
    t.differ = frozenset()  # the same build (no file of the launcher folder differs)
    assert t.variables == {"V", "W"} and t.changed == {"V=b"}
    assert t.lookup_env({"V": "b", "W": "y", "OTHER": "1"}) == {"W": "x", "OTHER": "1"}  # switch variables as recorded
    doc: dict[str, Any] = rec.outcomes["k"][0]
    assert t.answers(doc, fresh=True)  # b never consulted
    assert not t.answers(doc, fresh=False)  # a backend that served before: its state is not in the key
    assert not Targeting(rec, {"V": "a"}, []).answers(doc, fresh=True)  # another build (the digest differs)
    on_a = Targeting(rec, {"V": "a", "W": "x"}, [])
    on_a.differ = frozenset()
    assert not on_a.answers(doc, fresh=True)  # a was consulted
    off_w = Targeting(rec, {}, [])
    off_w.differ = frozenset()
    assert off_w.changed == {"W=x"} and not off_w.answers({"outcome": {"consulted": ["V"]}}, fresh=True)  # W undeclared
    assert not off_w.answers({"outcome": {}}, fresh=True)  # no coverage reported: live
    assert not off_w.answers(None, fresh=True)  # not recorded: live
    assert (t.replayed, t.live) == (1, 1)
    # the same program in a folder where some files differ: answered when the twin declared its reads and read none
    t.differ = frozenset({"internal/catalog.json", "internal/tools/new.json"})
    reads = ["V", "W", "DWS_READ", "DWS_READ=dws", "DWS_READ=pkg/mod.py"]
    assert t.answers({"outcome": {"consulted": reads}}, fresh=True)
    assert not t.answers({"outcome": {"consulted": [*reads, "DWS_READ=internal/catalog.json"]}}, fresh=True)
    assert not t.answers({"outcome": {"consulted": [*reads, "DWS_READ=internal/tools/"]}}, fresh=True)  # listed
    assert not t.answers({"outcome": {"consulted": [*reads, "DWS_READ=internal/"]}}, fresh=True)
    assert not t.answers({"outcome": {"consulted": ["V", "W", "DWS_READ=dws"]}}, fresh=True)  # reads undeclared
    assert "DWS_READ" not in t.variables


def test_which_files_of_a_launcher_folder_differ(tmp_path: Path) -> None:
    """The recorded folder's files by content against this one's: changed, added and removed paths; a recording
    without them, or a launcher of several folders, answers nothing by file."""
    from pytest_dws.launch.targeting import launcher_files

    (tmp_path / "dws").write_text("x", encoding="utf-8")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.json").write_text("1", encoding="utf-8")
    (tmp_path / "data" / "gone.json").write_text("2", encoding="utf-8")
    before = launcher_files([str(tmp_path / "dws")])
    (tmp_path / "data" / "a.json").write_text("3", encoding="utf-8")
    (tmp_path / "data" / "gone.json").unlink()
    (tmp_path / "data" / "new.json").write_text("4", encoding="utf-8")
    rec = _recording(tmp_path, {})
    rec.facts["launcher_files"] = before
    rec.manifest["digest"] = target_digest([str(tmp_path / "dws")])
    t = Targeting(rec, {}, [str(tmp_path / "dws")])
    assert not t.same_build and t.differ == {"data/a.json", "data/gone.json", "data/new.json"}
    assert t.summary()["files_differ"] == 3
    rec.facts.pop("launcher_files")
    assert Targeting(rec, {}, [str(tmp_path / "dws")]).differ is None


MATRIX = tomllib.loads((REPO / "tests" / "mutation_matrix.toml").read_text(encoding="utf-8"))
SCHEMA = tomllib.loads((REPO / "tests" / "mutation_matrix_schema.toml").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_a_drawn_mutant_and_variant_get_their_fully_live_verdict_item_by_item(run_contract: Any,
                                                                            tmp_path_factory: Any) -> None:
    """Issue 44 (3): the proof that nothing changed. A runtime mutant, a schema mutant and a conforming variant are
    drawn (seeded: DWS_TARGETED_SEED replays a draw) and each is judged twice, fully live and coverage-targeted:
    the same status, failing items and per-subject outcomes for every gate. A tree variant is the default job on a
    copy of the tree that says it, answered from the conforming default job file by file. The fully live run starts
    every invocation cold, the targeted run warm (--dws-warm-start): the proof covers both."""
    from tests.test_mutation_matrix import CLI, MARK
    from tests.test_schema_mutants import reference_args

    seed = int(os.environ.get("DWS_TARGETED_SEED") or random.SystemRandom().randrange(2**32))
    print(f"DWS_TARGETED_SEED={seed}")
    rng = random.Random(seed)
    from tests.test_conforming_variants import TREE_VARIANTS, variant_tree
    from tests.test_mutation_matrix import DEFAULT_JOB

    runtime = ["--dws-cli", CLI, "-m", MARK]
    schema = reference_args()
    mutant, schema_mutant, variant = (rng.choice(sorted(MATRIX["mutants"])), rng.choice(sorted(SCHEMA["mutants"])),
                                      rng.choice(sorted(_variants())))
    # (matrix, its conforming run's options, the options of the run judged both ways, what is switched on)
    drawn = [("runtime", runtime, [*runtime, "--dws-env", f"{MUTANT_ENV}={mutant}"], f"{MUTANT_ENV}={mutant}"),
             ("schema", schema, [*schema, "--dws-env", f"{MUTANT_ENV}={schema_mutant}"],
              f"{MUTANT_ENV}={schema_mutant}"),
             ("runtime", runtime, [*runtime, "--dws-env", f"{VARIANT_ENV}={variant}"], f"{VARIANT_ENV}={variant}")]
    if variant in TREE_VARIANTS:  # a copy of the tree says it: the default job on that tree, answered file by file
        drawn[2] = ("default-job", DEFAULT_JOB, variant_tree(variant, tmp_path_factory.mktemp("tree") / "tree"),
                    f"tree variant {variant}")
    for matrix, args, judged, name in drawn:
        conforming = pristine(run_contract, tmp_path_factory, matrix, args)
        live = run_contract(*judged, warm=False)  # every invocation live, each a new interpreter
        aimed = run_contract(*judged, *targeted(conforming))  # what runs live starts warm (tests/test_warm_start.py)
        print(f"{name}: {aimed.report.get('targeted_replay')}")
        differ = {g: (v, verdicts(aimed).get(g)) for g, v in verdicts(live).items() if verdicts(aimed).get(g) != v}
        assert not differ and set(verdicts(aimed)) == set(verdicts(live)), \
            f"DWS_TARGETED_SEED={seed} {name}: the targeted run's verdicts differ: {differ}"
        assert aimed.ret == live.ret, f"DWS_TARGETED_SEED={seed} {name}"


def _variants() -> dict[str, str]:
    from refdws.variants import VARIANTS

    return dict(VARIANTS)
