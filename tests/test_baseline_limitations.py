"""Issue 38 (3): a real-binary baseline entry is a deviation of the release (its document sentence and observed
field) or a SUITE LIMITATION that proves itself: what black-box input cannot exist and why, with the command that
shows it and where upstream's source says so. At most 3 such entries per baseline (the suite's world must run what
a signed-in user's machine runs); an unproved one fails here, whatever else it says."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

RELEASES = Path(__file__).resolve().parents[1] / "fixtures" / "releases"
#: the proof a SUITE LIMITATION reason must carry: the command (`dws …`) and the upstream source (a .go file)
COMMAND = re.compile(r"`dws [^`]+`")
SOURCE = re.compile(r"\binternal/[\w/]+\.go\b")
#: the document a deviation quotes: a D1/D2 section, a GATES.md R-section, or why the rule does not bind
DOCUMENT = re.compile(r"\bD[12] §|not a D2 rule|GATES\.md|\(R\d+(\.\d+)*\)")


def _reasons(commit: str) -> dict[str, str]:
    table = tomllib.loads((RELEASES / commit / "baseline-binary.toml").read_text(encoding="utf-8"))
    return {k: v["reason"] if isinstance(v, dict) else v for k, v in table["expected_failures"].items()}


@pytest.mark.parametrize("commit", ["81f67c8d", "cf8cf95"])
def test_every_suite_limitation_carries_its_proof(commit: str) -> None:
    limits = {k: r for k, r in _reasons(commit).items() if r.lstrip().startswith("SUITE LIMITATION")}
    assert len(limits) <= 3, f"{commit}: {len(limits)} SUITE LIMITATION entries (at most 3): {sorted(limits)[:5]}"
    unproved = [k for k, r in limits.items()
                if "Proof:" not in r or not COMMAND.search(r) or not SOURCE.search(r)]
    assert not unproved, f"{commit}: SUITE LIMITATION entries without their proof (Proof: the `dws …` command and " \
                         f"the upstream internal/….go that says why): {unproved}"


@pytest.mark.parametrize("commit", ["81f67c8d", "cf8cf95"])
def test_every_other_entry_quotes_its_document(commit: str) -> None:
    """A deviation names the document it breaks (D1/D2 §…, a GATES.md R-section) or why the rule does not bind
    this release."""
    vague = [k for k, r in _reasons(commit).items()
             if not r.lstrip().startswith("SUITE LIMITATION") and not DOCUMENT.search(r)]
    assert not vague, f"{commit}: entries that quote no document: {vague[:5]}"
