"""``python -m pytest_dws merge R1.json ... RN.json``: the JSON reports of the N shards of one run as one.

Why: ``--dws-shard K/N`` lets a CI matrix split the costly per-tool calls; the release verdict is still one.
Each shard judges a disjoint part of every per-tool list and all of the fixed gates; the merge adds the shards
up subject by subject (a subject's outcome is the worst any shard gave it), recounts every gate from its
subjects, and judges the gate-wide baseline entries a shard could not judge alone (stale only when no shard
saw the gate fail). Exit 0 when every gate passed (or is accepted / not applicable), 1 when one failed or the
baseline has a problem, 4 for bad input (a file that is not a shard report, a shard missing or given twice).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema

from pytest_dws.cli.output import read_json, write_output
from pytest_dws.core.errors import DwsInputError
from pytest_dws.launch.plan import merge_ledgers
from pytest_dws.verdict.fold import ORDER

#: What the merge reads of a shard report (pytest_dws.session.report.Recorder.as_json).
REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["suite", "target", "gates", "baseline_problems", "baseline_use", "sampling"],
    "properties": {
        "suite": {"const": "pytest-dws"},
        "gates": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["status", "family", "outcomes"],
            "properties": {"status": {"enum": list(ORDER)},
                           "outcomes": {"type": "object", "additionalProperties": {"enum": list(ORDER)}}}}},
        "baseline_problems": {"type": "array", "items": {"type": "string"}},
        "baseline_use": {"type": "object", "required": ["failed", "deferred_stale"]},
        "sampling": {"type": "object", "required": ["shard"],
                     "properties": {"shard": {"type": ["string", "null"], "pattern": r"^[0-9]+/[0-9]+$"}}},
    },
}


def load(path: Path) -> dict[str, Any]:
    """One shard report, validated (a one-line input error naming the file and the JSON path otherwise)."""
    doc = read_json(path)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(REPORT_SCHEMA).iter_errors(doc))
    if error is not None:
        raise DwsInputError(path, error.json_path, error.message)
    return doc


def merge(reports: list[tuple[Path, dict[str, Any]]]) -> dict[str, Any]:
    """The merged report of the shards (see the module docstring)."""
    _check_shards(reports)
    first = reports[0][1]
    gates: dict[str, dict[str, Any]] = {}
    for _, doc in reports:  # a shard reports only the gate parts it judges (a fixed gate is shard 1's)
        for gate_id, g in doc["gates"].items():
            m = gates.setdefault(gate_id, {k: g.get(k) for k in ("family", "doc", "rule")} | {
                "outcomes": {}, "notes": set(), "wants": set(), "cases": {}})
            for label, outcome in g["outcomes"].items():
                before = m["outcomes"].get(label)
                m["outcomes"][label] = outcome if before is None else min(before, outcome, key=ORDER.index)
            m["notes"].update(g.get("notes") or [])
            m["wants"].update(g.get("wants") or [])
            m["cases"].update(g.get("cases") or {})
    out_gates = {gate_id: _recount(gate_id, m) for gate_id, m in sorted(gates.items())}
    failed = sorted({e for _, d in reports for e in d["baseline_use"]["failed"]})
    unseen = set.intersection(*(set(d["baseline_use"].get("not_evaluated") or []) for _, d in reports))
    problems = sorted({p for _, d in reports for p in d["baseline_problems"]})
    deferred = set.intersection(*(set(d["baseline_use"]["deferred_stale"]) for _, d in reports))
    problems += [f"stale baseline entry {e!r}: it passes in every shard now; remove it"
                 for e in sorted(deferred - set(failed))]
    return {
        "suite": "pytest-dws",
        "target": first["target"],
        "merged_from": [str(p) for p, _ in reports],
        "summary": dict(sorted(Counter(g["status"] for g in out_gates.values()).items())),
        "gates": out_gates,
        "observed": first.get("observed", {}),
        "baseline_problems": problems,
        # an entry the merged run did not evaluate: no shard evaluated it
        "baseline_use": {"failed": failed, "deferred_stale": [], "not_evaluated": sorted(unseen),
                         "not_recorded": sorted(unseen & {e for _, d in reports
                                                          for e in d["baseline_use"].get("not_recorded") or []})},
        "invocations": merge_ledgers(d.get("invocations") or {} for _, d in reports),
        "sampling": {**first["sampling"], "shard": None,
                     "shards": sorted((d["sampling"]["shard"] for _, d in reports), key=_shard_key)},
    }


def _recount(gate_id: str, m: dict[str, Any]) -> dict[str, Any]:
    outcomes: dict[str, str] = m["outcomes"]
    counts = Counter(outcomes.values())
    entry: dict[str, Any] = {
        "status": next((o for o in ORDER if counts.get(o)), "not_applicable"),
        "family": m["family"], "doc": m["doc"], "rule": m["rule"],
        "items": dict(sorted(counts.items())),
        "failed_items": sorted(k for k, o in outcomes.items() if o in ("failed", "error")),
        "xfailed_items": sorted(k for k, o in outcomes.items() if o == "xfailed"),
        "outcomes": dict(sorted(outcomes.items())),
    }
    if m["notes"]:
        entry["notes"] = sorted(m["notes"])
    if m["wants"] and entry["status"] == "not_applicable":
        entry["wants"] = sorted(m["wants"])
    if m["cases"]:
        entry["cases"] = m["cases"]
    return entry


def _shard_key(value: str) -> tuple[int, int]:
    k, _, n = value.partition("/")
    return int(n), int(k)


def _check_shards(reports: list[tuple[Path, dict[str, Any]]]) -> None:
    """Every report is a shard K/N of the same N and the same target, each K exactly once."""
    if not reports:
        raise DwsInputError("merge", "", "no report given")
    seen: dict[tuple[int, int], Path] = {}
    for path, doc in reports:
        shard = doc["sampling"]["shard"]
        if shard is None:
            raise DwsInputError(path, "$.sampling.shard", "not a shard report (run with --dws-shard K/N)")
        key = _shard_key(shard)
        if key in seen:
            raise DwsInputError(path, "$.sampling.shard", f"shard {shard} is also {seen[key]}")
        seen[key] = path
        if _target(doc) != _target(reports[0][1]):
            raise DwsInputError(path, "$.target", f"another target than {reports[0][0]}")
    sizes = {n for n, _ in seen}
    if len(sizes) != 1:
        raise DwsInputError("merge", "", f"shards of different runs: N = {sorted(sizes)}")
    n = sizes.pop()
    missing = sorted(set(range(1, n + 1)) - {k for _, k in seen})
    if missing:
        raise DwsInputError("merge", "", f"shard(s) {', '.join(f'{k}/{n}' for k in missing)} missing")


def _target(doc: dict[str, Any]) -> dict[str, Any]:
    """The target a report judged, by file names (each CI runner may check out to another directory)."""
    def name(v: Any) -> Any:
        return [name(x) for x in v] if isinstance(v, list) else Path(v).name if isinstance(v, str) else v

    return {k: name(v) for k, v in (doc.get("target") or {}).items()}


def verdict(merged: dict[str, Any]) -> int:
    """0 when nothing failed and the baseline is clean, else 1."""
    bad = any(g["status"] in ("failed", "error") for g in merged["gates"].values())
    return 1 if bad or merged["baseline_problems"] else 0


def add_parser(sub: Any) -> None:
    m = sub.add_parser("merge", help="the JSON reports of the --dws-shard K/N runs of one run as one report")
    m.add_argument("reports", nargs="+", help="every shard's --dws-report file")
    m.add_argument("-o", "--output", help="write the merged report here instead of stdout")


def run(args: argparse.Namespace) -> int:
    """Exit as :func:`verdict`; a :class:`DwsInputError` (exit 4) for a report that is not a shard of this run."""
    paths: list[str] = args.reports
    merged = merge([(Path(p), load(Path(p))) for p in paths])
    write_output(json.dumps(merged, ensure_ascii=False, indent=2) + "\n", args.output)
    failing = sorted(g for g, v in merged["gates"].items() if v["status"] in ("failed", "error"))
    print(f"merged {len(paths)} shards: {len(merged['gates'])} gates, {merged['summary']}"
          + (f"; failing: {', '.join(failing)}" if failing else "")
          + (f"; {len(merged['baseline_problems'])} baseline problem(s)" if merged["baseline_problems"] else ""),
          file=sys.stderr)
    return verdict(merged)
