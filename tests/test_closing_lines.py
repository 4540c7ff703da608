"""The closing block's lines read (issue 46 (4)): a not-applicable line names what is missing as a phrase ("not
applicable for want of a reviewed contract snapshot"), from the typed ``wants`` a gate gives with its
NotApplicable, never the reason's sentence; and the usage error of a run whose rootdir pytest chose from an option's
value (``--dws-agent /abs/path/agent``) says so and gives the ``--dws-agent=VALUE`` spelling."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_dws.session.summary import build, wanting
from tests.conftest import REPO

#: Finite verbs and openings of a sentence: a phrase naming what is missing has none of them.
_SENTENCE = re.compile(r"^(no|not|none|the implementation|this|it)\b|\b(is|are|has|have|does|do|was|were|must|"
                       r"cannot|can|say|says|lists|names)\b|: |…|\.\s*$", re.I)


def reads_as_phrase(what: str) -> bool:
    """A noun phrase or an option, short, with no verb of its own (what "for want of ..." expects)."""
    return bool(what) and len(what) <= 80 and _SENTENCE.search(what) is None


def assert_lines_read(report: dict[str, Any]) -> None:
    """Every not-applicable gate carries its typed phrase, and every line of the block reads."""
    gates = report["gates"]
    untyped = sorted(g for g, v in gates.items() if v["status"] == "not_applicable" and not v.get("wants"))
    assert not untyped, f"not applicable without a typed `wants`: {untyped}"
    block = build(report)
    assert block.not_applicable
    for what, listed in block.not_applicable:
        assert reads_as_phrase(what), (what, listed)


def test_the_lines_of_a_tree_only_run_read_as_phrases(tmp_path: Path) -> None:
    """A run with only the reference's tree: most gates lack the binary, the Go toolchain, a generator (2 s)."""
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "--dws-contract", "-p", "no:cacheprovider", "-q",
                           f"--dws-source={REPO / 'fixtures' / 'reference'}", f"--dws-report={report}"],
                          cwd=REPO, capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert_lines_read(json.loads(report.read_text(encoding="utf-8")))


def test_a_report_without_wants_never_shows_the_note_as_the_phrase() -> None:
    """An older report (no ``wants``): the option its note names, else a phrase sending the reader to the notes."""
    old = {"status": "not_applicable", "notes": ["no reviewed snapshot /x/__snapshots__/S.json: run once with "
                                                 "--snapshot-update, review it, commit it"]}
    assert reads_as_phrase(wanting(old)) and "snapshot" not in wanting(old)
    bare = {"status": "not_applicable", "notes": ["x is a `dws schema --all` document, not the stored catalog"]}
    assert reads_as_phrase(wanting(bare))
    assert reads_as_phrase(wanting({"status": "not_applicable", "wants": ["reviewed safety hints"]}))
    assert not reads_as_phrase("no reviewed safety hints (internal/cli/schema_hints/destructive-safety.json)")
    assert not reads_as_phrase("dws schema --all is a `dws schema --all` document, not the stored catalog")


def test_an_option_value_taken_for_the_rootdir_is_said_with_the_spelling_that_avoids_it(tmp_path: Path) -> None:
    agent = tmp_path / "agents" / "agent"
    agent.parent.mkdir()
    agent.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    agent.chmod(0o755)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--dws-contract", "-p", "no:cacheprovider",
                           "--dws-agent", str(agent)], cwd=REPO, capture_output=True, text=True, check=False,
                          timeout=120)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert "--dws-agent=VALUE" in errors[0] and str(agent.parent) in errors[0], errors
    # with `=`, pytest keeps the repository's rootdir and its ini target: no such line
    same = subprocess.run([sys.executable, "-m", "pytest", "--dws-contract", "-p", "no:cacheprovider", "--co", "-q",
                           f"--dws-agent={agent}"], cwd=REPO, capture_output=True, text=True, check=False, timeout=120)
    assert "--dws-agent=VALUE" not in same.stdout + same.stderr
