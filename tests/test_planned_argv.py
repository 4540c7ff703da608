"""Every per-tool run the suite plans has the shape its schema declares (issue 42, item 2).

Why: the suite itself once passed one positional value twice (`dev doc search synthetic-value synthetic-value`), and the
real binary answered `accepts at most 1 arg(s), received 2`: a false failure of SCH-ONEOF-BRANCH-DRYRUN on four tools
of 81f67c8d. Here every planned run (help, probes, dry runs, required-flag runs, one-of branches, examples, the
confirmation runs) of every tool is checked against the schema's own positional arity
(:func:`pytest_dws.observe.binary.argv.positional_tokens`), over the reference's catalog and, in the real-binary tier,
over the catalogs the real builds answered (`dws schema --all` and `dws schema <tool>` in their recordings).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pytest_dws.gates  # noqa: F401  (registers the per-tool call kinds)
from pytest_dws.observe.binary.argv import positional_arity, positional_tokens
from pytest_dws.observe.binary.confirm import confirmed_call, unconfirmed_call, user_confirmed
from pytest_dws.observe.binary.plans import KINDS
from pytest_dws.observe.binary.views import primary_path

REPO = Path(__file__).resolve().parents[1]
RECORDINGS = Path(os.environ.get("DWS_RECORDINGS_DIR") or REPO.parent / "shared" / "recordings")


def _leaves(doc: dict[str, Any], extra: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    tools = {t["canonical_path"]: t for p in doc.get("products") or [] for t in p.get("tools") or []
             if isinstance(t, dict) and isinstance(t.get("canonical_path"), str)}
    return {k: (extra or {}).get(k, t) for k, t in tools.items()}


def _recorded_catalog(commit: str) -> dict[str, dict[str, Any]]:
    """The leaves a real build answered in its recording: `schema --all`, with `schema <tool>` for a catalog whose
    --all carries summaries (cf8cf95)."""
    blobs: dict[str, str] = {}
    records = []
    for part in sorted((RECORDINGS / commit / "parts").glob("*.jsonl.gz")):
        for line in gzip.open(part, "rt", encoding="utf-8"):
            doc = json.loads(line)
            if "blob" in doc:
                blobs[doc["blob"]] = doc["text"]
            elif doc.get("kind") in ("schema", "schema --all"):
                records.append(doc)

    def stdout(rec: dict[str, Any]) -> Any:
        out = rec["outcome"].get("stdout")
        text = blobs.get(out, out) if isinstance(out, str) else ""
        try:
            return json.loads(text)
        except ValueError:
            return None

    full = next(d for r in records if r["kind"] == "schema --all" and isinstance(d := stdout(r), dict)
                and d.get("products"))
    singles = {r["request"]["argv"][-1]: stdout(r) for r in records if r["kind"] == "schema"
               and len(r["request"]["argv"]) == 3}
    return _leaves(full, {k: v for k, v in singles.items() if isinstance(v, dict) and "parameters" in v})


def _reference_catalog() -> dict[str, dict[str, Any]]:
    out = subprocess.run([sys.executable, "-I", "-S", str(REPO / "fixtures" / "reference" / "dws"), "schema",
                          "--all"], capture_output=True, text=True, timeout=60, check=True).stdout
    return _leaves(json.loads(out))


def _misshapen(leaves: dict[str, dict[str, Any]]) -> list[str]:
    """Every planned run whose positionals break its tool's declared arity (examples excepted: their shape is the
    release's text, judged by SCH-EXAMPLES)."""
    bad = []
    for key, leaf in leaves.items():
        if "parameters" not in leaf:
            continue
        path = primary_path(leaf).split()
        calls = [c for kind, build in KINDS.items() if kind != "examples" for c in build(leaf, True)]
        if user_confirmed(leaf):
            calls += [unconfirmed_call(leaf), confirmed_call(leaf)]
        least, most = positional_arity(leaf)
        for call in calls:
            args = list(call.args)
            if args[:len(path)] != path or "--help" in args or "schema" == args[0]:
                continue
            found = positional_tokens(args[len(path):], leaf)
            executes = not any(a.startswith("--dws-contract-probe") for a in args)
            if (most is not None and len(found) > most) or (executes and len(found) < least and not found):
                bad.append(f"{key}: {' '.join(args)} ({len(found)} positionals; the schema declares "
                           f"{least}..{'*' if most is None else most})")
    return bad


def test_every_planned_run_of_the_reference_has_its_declared_arity() -> None:
    leaves = _reference_catalog()
    assert sum(1 for leaf in leaves.values() if leaf.get("positionals")) >= 1, "the reference has no positional"
    assert _misshapen(leaves) == []


def test_positional_tokens_read_flags_by_their_schema_types() -> None:
    leaf = {"parameters": {"group": {"type": "string"}, "yes": {"type": "boolean"}},
            "positionals": [{"name": "content", "index": 0}]}
    assert positional_tokens(["--group", "g", "--yes", "hello"], leaf) == ["hello"]
    assert positional_tokens(["--group=g", "a", "b"], leaf) == ["a", "b"]
    assert positional_tokens(["--", "--not-a-flag"], leaf) == ["--not-a-flag"]
    assert positional_arity(leaf) == (0, 1)
    assert positional_arity({"positionals": [{"name": "k", "required": True, "variadic": True}]}) == (1, None)


@pytest.mark.real_binaries
@pytest.mark.parametrize("commit", ["81f67c8d", "cf8cf95", "2a8c6c87"])
def test_every_planned_run_of_a_real_catalog_has_its_declared_arity(commit: str) -> None:
    if os.environ.get("DWS_REAL_BINARIES", "") not in ("1", "required"):
        pytest.skip("real-binary tier not run: not enabled (DWS_REAL_BINARIES=1 reads ../shared/recordings)")
    if not (RECORDINGS / commit / "manifest.json").is_file():
        pytest.skip(f"real-binary tier not run: no recording of {commit} in {RECORDINGS}")
    leaves = _recorded_catalog(commit)
    assert sum(1 for leaf in leaves.values() if leaf.get("positionals")) >= 1
    assert _misshapen(leaves) == []
