"""SCHCLI-CORRUPT on a tree that embeds its catalog at build time (issue 43): the tampered copy is rebuilt by the
release's ``[schema] tree_build`` and the built CLI judged.

No Go toolchain on CI: the tree here is a stand-in whose "build" (a small Python script) bakes the catalog file's
bytes into the launcher it writes at ``{out}``, as ``//go:embed`` bakes them into a Go binary; the launcher reads
only what it was built with. So every path of the new code is covered: the build, the built CLI's runs and their
judgement (fails closed: passed; serves the tampered catalog: failed), a failing build, no toolchain, and a replay
that builds nothing. The real Go build is the live run (RULINGS §7), never a test.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

GATE = "SCHCLI-CORRUPT"

#: The build stand-in: writes ``{out}`` (``--fail``: exits 2 first; ``--trusting``: a launcher that never checks).
BUILD = '''\
import json, os, sys
args = sys.argv[1:]
if "--fail" in args:
    print("catalog: build refused", file=sys.stderr)
    sys.exit(2)
out = args[-1]
embedded = open("embed/catalog.json", "rb").read()  # the copy's file, as the build embeds it
launcher = open("launcher.py", encoding="utf-8").read()
with open(out, "w", encoding="utf-8") as fh:
    fh.write(f"#!{sys.executable} -I\\nEMBEDDED = {embedded!r}\\nTRUSTING = {'--trusting' in args!r}\\n{launcher}")
os.chmod(out, 0o755)
'''

#: The built CLI: `--help`, `schema` and `schema <key>` from the embedded bytes; a checking build fails closed.
LAUNCHER = '''\
import hashlib, json, sys


def tools_hash(tools):
    return hashlib.sha256(json.dumps(tools, sort_keys=True).encode()).hexdigest()


def fail(message):
    err = {"code": 5, "category": "internal", "reason": "schema_catalog_invalid", "message": message}
    print(json.dumps({"error": err}), file=sys.stderr)
    sys.exit(5)


args = sys.argv[1:]
if not args or args[0] in ("--help", "-h"):
    print("Usage: dws [command]\\n  schema   the embedded catalog")
    sys.exit(0)
try:
    doc = json.loads(EMBEDDED)
except ValueError as exc:
    if not TRUSTING:
        fail(f"decode embedded catalog: {exc}")
    doc = {"tools": {"demo.echo": {"description": EMBEDDED.decode("utf-8", "replace")}}}
if not TRUSTING and doc.get("source_hash") != tools_hash(doc.get("tools")):
    fail("source_hash mismatch")
tools = doc["tools"]
if len(args) > 1:
    print(json.dumps(tools[args[1]], ensure_ascii=False))
else:
    print(json.dumps({"count": len(tools), "tools": tools}, ensure_ascii=False))
'''


def _tree(root: Path) -> Path:
    """A tree that embeds `embed/catalog.json` at build time (its `build.py`); no catalog layout the suite knows,
    so the file is named by ``[schema] catalog_file``."""
    import hashlib

    tools = {"demo.echo": {"description": "回显"}, "demo.ping": {"description": "ping"}}
    digest = hashlib.sha256(json.dumps(tools, sort_keys=True).encode()).hexdigest()
    (root / "embed").mkdir(parents=True)
    (root / "embed" / "catalog.json").write_text(
        json.dumps({"version": 1, "source_hash": digest, "tools": tools}, ensure_ascii=False, indent=2),
        encoding="utf-8")
    (root / "build.py").write_text(BUILD, encoding="utf-8")
    (root / "launcher.py").write_text(LAUNCHER, encoding="utf-8")
    return root


def _expect(root: Path, build: str) -> Path:
    path = root / "expectations.toml"
    path.write_text(textwrap.dedent(f"""\
        [release]
        name = "built-tree"
        [schema]
        tree_build = {json.dumps(build)}
        catalog_file = "embed/catalog.json"
        """), encoding="utf-8")
    return path


@pytest.fixture
def tree(pytester: pytest.Pytester) -> Path:
    return _tree(pytester.path / "tree")


def _run(run_contract, tree: Path, build: str, *more: str):
    return run_contract("--dws-source", tree, "--dws-expect", _expect(tree.parent, build), "-k", GATE, *more)


def test_a_rebuilt_copy_that_fails_closed_passes(run_contract, tree) -> None:
    run = _run(run_contract, tree, "{python} build.py {out}")
    assert run.status(GATE) == "passed", run.result.stdout.str()[-2000:]
    builds = run.report["tree_builds"]
    assert {b["exit_code"] for b in builds.values()} == {0} and len(builds) == 2  # one build per variant
    seen = run.report["schcli_corrupt"]
    assert len(seen) == 3  # value: schema + schema <key>; truncated: schema
    assert {(s["exit_code"], s["category"], s["requests"], s["served_tampered"]) for s in seen.values()} \
        == {(5, "internal", 0, False)}


def test_a_rebuilt_copy_serving_the_tampered_catalog_fails(run_contract, tree) -> None:
    run = _run(run_contract, tree, "{python} build.py --trusting {out}")
    assert run.status(GATE) == "failed"
    assert any(s["served_tampered"] and s["exit_code"] == 0 for s in run.report["schcli_corrupt"].values())


def test_a_build_that_fails_is_not_applicable_with_its_exit_code(run_contract, tree) -> None:
    run = _run(run_contract, tree, "{python} build.py --fail {out}")
    assert run.status(GATE) == "not_applicable"
    assert run.gates[GATE]["wants"] == ["a tampered tree copy that builds ([schema] tree_build)"]
    assert [b["exit_code"] for b in run.report["tree_builds"].values()] == [2]  # the first variant stops it
    assert tree.joinpath("build.py").read_text(encoding="utf-8") == BUILD  # the tree itself is never touched


def test_no_go_toolchain_is_not_applicable(run_contract, tree, monkeypatch, tmp_path) -> None:
    empty = tmp_path / "no-go"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # the suite's PATH has no `go`
    run = _run(run_contract, tree, "go build -trimpath -o {out} ./cmd")
    assert run.status(GATE) == "not_applicable"
    assert run.gates[GATE]["wants"] == ["a Go toolchain on PATH"]
    assert "tree_builds" not in run.report  # nothing was built


def test_a_replay_answers_the_rebuilt_copy_without_building(run_contract, tree, tmp_path) -> None:
    import subprocess
    import sys

    target = tmp_path / "dws"  # the release's own build (--dws-cli), as a live run of a real tree is given
    subprocess.run([sys.executable, "build.py", str(target)], cwd=tree, check=True)
    recording = tmp_path / "rec"
    recorded = _run(run_contract, tree, "{python} build.py {out}", "--dws-cli", target, "--dws-record", recording)
    assert recorded.status(GATE) == "passed"
    # the same verdict from the recording alone: nothing built (no build of the replay in the report)
    replayed = run_contract("--dws-replay", recording, "-k", GATE)
    assert replayed.status(GATE) == "passed", replayed.result.stdout.str()[-2000:]
    assert "tree_builds" not in replayed.report
    assert replayed.report["schcli_corrupt"] == recorded.report["schcli_corrupt"]
