"""Record a run, replay it offline (issue 26): the recording is the implementation under test.

A replay of the reference's recorded run gives the same verdict, subject by subject; an invocation missing from
the recording makes only the subjects that read it not applicable (never a pass or a failure), counted in the
report; bad recordings are usage errors (exit 4)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_dws.launch.recording import Recording, runs_of
from tests.conftest import WARM_START, reference_target

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "fixtures" / "reference"
FILES = ("--dws-source", str(REFERENCE), "--dws-expect", str(REFERENCE / "expectations.toml"),
         "--dws-generator", "{python} -I -S tools/generate_catalog.py")
LIVE = ("--dws-cli", f"{{python}} -I -S {REFERENCE / 'dws'}", *FILES)

pytestmark = pytest.mark.slow


def outcomes(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Every gate's per-subject outcomes: what a replay must reproduce item by item."""
    return {g: v.get("outcomes", {}) for g, v in report["gates"].items()}


def _record(cwd: Path, dest: Path, *args: str) -> dict[str, Any]:
    """A whole recorded contract run (a subprocess: its own pytest session) -> its report (the reference started as
    the main job starts it: tests/conftest.py)."""
    warm = [f"--dws-warm-start={WARM_START}"] if reference_target(list(args)) else []
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dws-contract", *args,
                           *warm, f"--dws-record={dest / 'rec'}", f"--dws-report={dest / 'live.json'}"],
                          cwd=cwd, capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads((dest / "live.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The default job recorded as a user records it (`pytest --dws-contract --dws-record DIR` in the repository:
    target, source, expectations and generator from the ini), once for every worker of the test run: the README's
    main job of tests/test_default_job.py, which runs recorded."""
    from tests.test_default_job import readme_main_job

    work = readme_main_job(tmp_path_factory)
    assert (work / "ret").read_text(encoding="utf-8") == "0", (work / "output.txt").read_text(encoding="utf-8")[-3000:]
    return work / "rec", json.loads((work / "report.json").read_text(encoding="utf-8"))


def _keys(rec: Path) -> set[str]:
    return set(Recording.load(rec).outcomes)


def test_two_recordings_of_the_default_job_hold_the_same_keys(recorded: tuple[Path, dict[str, Any]],
                                                               run_contract: Callable[..., Any],
                                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    """Issue 37 (2): every key is stable (uploads, file servers, tree copies, generated files: by content, never by
    a port, a temporary name or a time): the same job recorded again, from another folder with the same options
    given on the command line, asks for exactly the same invocations. The second recording is the conforming
    default job the mutation matrices record anyway (tests/targeted.py: another process, folder and ports, its
    options on the command line; issue 44: one whole live job fewer)."""
    from tests.targeted import pristine
    from tests.test_mutation_matrix import DEFAULT_JOB

    assert DEFAULT_JOB == list(LIVE), "not the same job"
    rec, _ = recorded
    first = _keys(rec)
    second = _keys(pristine(run_contract, tmp_path_factory, "default-job", DEFAULT_JOB).recording)
    assert first == second, (sorted(first - second)[:5], sorted(second - first)[:5])


def test_a_replay_alone_gives_the_recorded_run_verdict_item_by_item(recorded: tuple[Path, dict[str, Any]],
                                                                    run_contract: Callable[..., Any]) -> None:
    """Issue 37 (1): `--dws-replay DIR` alone (another folder, no ini target) re-judges with the recorded run's
    options (source, expectations, generator from the recorded ini): every item as live, nothing not recorded."""
    rec, live = recorded
    run = run_contract("--dws-replay", str(rec))
    assert run.ret == 0, run.output()[-3000:]
    notes = {g: v.get("notes") for g, v in run.report["gates"].items() if v["status"] != live["gates"][g]["status"]}
    assert outcomes(run.report) == outcomes(live), notes
    assert run.report["summary"] == live["summary"]
    assert run.report["invocations"]["not_recorded"]["count"] == 0
    assert run.report["datasets"]["seed"] == live["datasets"]["seed"]  # the recording fixed the random draws
    # nothing of the implementation ran ("other": the source tree's generator, run live in temporary copies)
    assert all(v["cpu"] == 0 for k, v in run.report["invocations"]["kinds"].items() if k != "other")
    assert "from the recording: --dws-source" in run.output()


def test_an_option_given_again_overrides_the_recorded_one_and_a_missing_path_is_named(
        recorded: tuple[Path, dict[str, Any]], run_contract: Callable[..., Any], tmp_path: Path) -> None:
    """The command line wins over the recording; a recorded source tree that is not here is named, and the gates
    that need it are not applicable with that reason (never failed)."""
    rec, _ = recorded
    moved = tmp_path / "rec"
    moved.mkdir()
    (moved / "parts").symlink_to(rec / "parts")
    manifest = json.loads((rec / "manifest.json").read_text(encoding="utf-8"))
    manifest["options"]["source"] = {"path": str(tmp_path / "gone"), "relative": "../gone", "digest": "0"}
    (moved / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    run = run_contract("--dws-replay", str(moved), "--dws-sample", "2")
    assert run.ret == 0, run.output()[-3000:]
    assert "(recorded; not here)" in run.output() and run.report["sampling"]["sample"] == 2
    src_gates = [g for g, v in run.report["gates"].items()
                 if any("recorded --dws-source" in n for n in v.get("notes", []))]
    assert src_gates and all("not_applicable" in run.report["gates"][g]["outcomes"].values() for g in src_gates)
    assert run.report["gates"]["SCH-NO-DRIFT"]["status"] == "not_applicable"
    assert not any(v["status"] in ("failed", "error") for v in run.report["gates"].values())


def _without(rec: Path, dest: Path, pick: Callable[[dict[str, Any]], bool]) -> list[str]:
    """A copy of ``rec`` without the invocations ``pick`` selects; returns their argv."""
    (dest / "parts").mkdir(parents=True)
    (dest / "manifest.json").write_text((rec / "manifest.json").read_text(encoding="utf-8"), encoding="utf-8")
    removed: list[str] = []
    for part in (rec / "parts").glob("*.jsonl.gz"):
        with gzip.open(part, "rt", encoding="utf-8") as src, gzip.open(dest / "parts" / part.name, "wt",
                                                                         encoding="utf-8") as out:
            for line in src:
                doc = json.loads(line)
                if "key" in doc and not removed and pick(doc):
                    removed = doc["request"]["argv"]
                    continue
                out.write(line)
    return removed


def test_an_invocation_missing_from_the_recording_makes_its_subject_not_applicable(
        recorded: tuple[Path, dict[str, Any]], run_contract: Callable[..., Any], tmp_path: Path) -> None:
    rec, live = recorded
    gone = _without(rec, tmp_path / "cut", lambda d: d["kind"] == "schema" and len(d["request"]["argv"]) == 6)
    assert gone, "the recording holds no `schema <tool>` invocation"
    tool = gone[-1]
    run = run_contract("--dws-replay", str(tmp_path / "cut"))
    assert run.ret == live_exit(live), run.output()[-3000:]
    missing = run.report["invocations"]["not_recorded"]
    assert missing["count"] >= 1 and gone in missing["argv"]
    changed = {(g, s): (o, outcomes(run.report)[g].get(s)) for g, subj in outcomes(live).items()
               for s, o in subj.items() if outcomes(run.report)[g].get(s) != o}
    assert changed, "removing an invocation changed nothing: the replay did not read the recording"
    assert all(new == "not_applicable" for _, new in changed.values()), changed
    assert any(tool in s or "not recorded" in " ".join(run.report["gates"][g].get("notes", []))
               for g, s in changed), changed
    assert "invocations not recorded" in run.output()


def live_exit(live: dict[str, Any]) -> int:
    return 1 if any(v["status"] in ("failed", "error") for v in live["gates"].values()) else 0


def test_recording_show_lists_counts_and_one_invocation(recorded: tuple[Path, dict[str, Any]]) -> None:
    rec, _ = recorded
    show = subprocess.run([sys.executable, "-m", "pytest_dws", "recording", "show", str(rec)],
                          capture_output=True, text=True, check=False)
    assert show.returncode == 0, show.stderr
    assert "invocations:" in show.stdout and "per kind:" in show.stdout and "seed" in show.stdout
    with gzip.open(next((rec / "parts").glob("*.jsonl.gz")), "rt", encoding="utf-8") as fh:
        key = next(json.loads(line)["key"] for line in fh if '"key"' in line)
    one = subprocess.run([sys.executable, "-m", "pytest_dws", "recording", "show", str(rec), "--invocation", key],
                         capture_output=True, text=True, check=False)
    assert one.returncode == 0, one.stderr
    doc = json.loads(one.stdout)
    doc = doc[0] if isinstance(doc, list) else doc
    assert doc["key"] == key and "exit_code" in doc["outcome"] and doc["request"]["argv"][0] == "<dws>"


@pytest.mark.parametrize("extra", [(), ("--dws-cli", "{python} fixtures/reference/dws")])
def test_a_replay_of_no_recording_or_beside_a_live_cli_is_a_usage_error(run_contract: Callable[..., Any],
                                                                       tmp_path: Path,
                                                                       extra: tuple[str, ...]) -> None:
    (tmp_path / "norec").mkdir()
    run = run_contract("--dws-replay", str(tmp_path / "norec"), *extra)
    assert run.ret == 4, run.output()[-2000:]
    missing = subprocess.run([sys.executable, "-m", "pytest_dws", "recording", "show", str(tmp_path / "norec")],
                             capture_output=True, text=True, check=False)
    assert missing.returncode == 4 and missing.stderr.startswith("ERROR:") and "Traceback" not in missing.stderr


def test_a_recorded_path_is_found_beside_a_moved_recording_and_a_changed_one_is_said_to_differ(
        tmp_path: Path) -> None:
    """The manifest's paths are looked for where they were, then relative to the recording (moved together with
    its tree); a file found with other content is used and said to differ; the command line wins."""
    from pytest_dws.inputs.recorded import options_of, take_back
    from pytest_dws.inputs.settings import Settings

    old = tmp_path / "old"
    (old / "rec").mkdir(parents=True)
    (old / "tree").mkdir()
    (old / "tree" / "a.txt").write_text("a", encoding="utf-8")
    (old / "expect.toml").write_text("x = 1\n", encoding="utf-8")
    made = Settings(source=old / "tree", expect=old / "expect.toml", env={"K": "v"}, keyword="SCH")
    manifest = {"options": options_of(made, old / "rec")}
    old.rename(tmp_path / "new")
    new = tmp_path / "new"
    (new / "expect.toml").write_text("x = 2\n", encoding="utf-8")
    s = Settings(env={"K": "mine"})
    take_back(s, manifest, new / "rec", given=set())
    assert s.source == (new / "tree").resolve() and s.expect == (new / "expect.toml").resolve()
    assert "differs" in s.from_recording["expect"] and "differs" not in s.from_recording["source"]
    assert s.env == {"K": "mine"} and s.keyword == "SCH" and not s.missing_recorded
    given = Settings()
    take_back(given, manifest, new / "rec", given={"source", "keyword"})
    assert given.source is None and given.keyword is None and given.expect is not None


def test_two_shards_recorded_apart_and_merged_replay_as_the_unsharded_live_run(
        recorded: tuple[Path, dict[str, Any]], tmp_path: Path, run_contract: Callable[..., Any]) -> None:
    """Issue 37 (4): a CI matrix records each shard into its own folder; `recording merge` joins them, and the
    merged folder's replay (alone: the shards differ, so it runs unsharded) gives the live unsharded verdict."""
    _, live = recorded
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for k in (1, 2):
        (tmp_path / f"s{k}").mkdir()
        _record(tmp_path, tmp_path / f"s{k}", *LIVE, "--dws-shard", f"{k}/2")
    merged = subprocess.run([sys.executable, "-m", "pytest_dws", "recording", "merge", str(tmp_path / "s1" / "rec"),
                             str(tmp_path / "s2" / "rec"), "-o", str(tmp_path / "both")],
                            capture_output=True, text=True, check=False)
    assert merged.returncode == 0, merged.stderr
    run = run_contract("--dws-replay", str(tmp_path / "both"))
    assert run.ret == 0, run.output()[-3000:]
    assert outcomes(run.report) == outcomes(live)
    assert run.report["invocations"]["not_recorded"]["count"] == 0
    again = subprocess.run([sys.executable, "-m", "pytest_dws", "recording", "merge", str(tmp_path / "s1" / "rec"),
                            str(tmp_path / "s2" / "rec"), "-o", str(tmp_path / "both")],
                           capture_output=True, text=True, check=False)
    assert again.returncode == 4 and again.stderr.startswith("ERROR:") and "Traceback" not in again.stderr


def test_append_grows_a_recording_and_new_refuses_to_overwrite_one(tmp_path: Path,
                                                                  run_contract: Callable[..., Any]) -> None:
    """`--dws-record-mode append` replays what the folder holds and records only what it lacks (one build's
    recording grown family by family); `new` (the default) refuses a folder that holds a recording, and append
    refuses another build's: both exit 4, one line."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    first = _record(tmp_path, tmp_path, *LIVE, "-m", "dws_err")
    rec = tmp_path / "rec"
    size = len(Recording.load(rec))
    second = _record(tmp_path, tmp_path, *LIVE, "-m", "dws_err or dws_schcli", "--dws-record-mode", "append")
    grown = Recording.load(rec)
    assert len(grown) > size and len(runs_of(grown.manifest)) == 2
    assert second["invocations"]["total"]["cpu"] > 0  # the SCHCLI gates' calls ran live ...
    assert {g: v["outcomes"] for g, v in second["gates"].items() if g.startswith("ERR")} == \
        {g: v["outcomes"] for g, v in first["gates"].items()}  # ... the ERR ones were replayed, same verdict
    run = run_contract("--dws-replay", str(rec), "-m", "dws_err or dws_schcli")
    assert run.ret == 0 and run.report["invocations"]["not_recorded"]["count"] == 0, run.output()[-2000:]
    assert outcomes(run.report) == outcomes(second)
    show = subprocess.run([sys.executable, "-m", "pytest_dws", "recording", "show", str(rec)],
                          capture_output=True, text=True, check=False)
    assert "runs:        2" in show.stdout and "read by gate" in show.stdout and "SCHCLI-PROGRESSIVE" in show.stdout
    for mode, cli in (("new", LIVE), ("append", ("--dws-cli", f"{{python}} -I -S -B {REFERENCE / 'dws'}"))):
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dws-contract",
                               *cli, "--dws-record", str(rec), "--dws-record-mode", mode, "-m", "dws_err"],
                              cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300)
        assert proc.returncode == 4 and "Traceback" not in proc.stderr, (mode, proc.stderr[-1000:])
