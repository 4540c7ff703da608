"""``python -m pytest_dws release init REPORT.json --from releases/<previous> -o releases/<new>``: start the folder
of a new release from a run's JSON report and the previous release's folder (issue 27 (3); anchors: WPT's
``update-expectations``, syrupy's ``--snapshot-update`` then review).

It writes ``expectations.toml`` (the previous file's tables, the counts the run observed), the baseline (the
previous entries that still fail, with their reasons; the ones that pass now are dropped and listed; every new
failure as an entry whose reason reads ``TRIAGE: <the gate's first reason>``), and the run's agent-contract diff
beside them. A contract run refuses a baseline that still holds a TRIAGE reason (exit 4): a person reviews each.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import tomli_w

from pytest_dws.cli.output import read_report
from pytest_dws.core.errors import DwsInputError, read_toml
from pytest_dws.verdict.baseline import TRIAGE, entry_name, split_entry

BASELINES = ("baseline-binary.toml", "baseline.toml")


def add_parser(sub: Any) -> None:
    s = sub.add_parser("release", help="start a release folder from a run's report and the previous folder")
    actions = s.add_subparsers(dest="action", required=True)
    init = actions.add_parser("init", help="write expectations, baseline (carried / dropped / TRIAGE) and the diff")
    init.add_argument("report", help="the --dws-report JSON of the new release's run")
    init.add_argument("--from", dest="previous", required=True, help="the previous release's folder")
    init.add_argument("-o", "--output", required=True, help="the new release's folder (created)")


def run(args: argparse.Namespace) -> int:
    report = read_report(Path(args.report))
    previous, out = Path(args.previous), Path(args.output)
    if not previous.is_dir():
        raise DwsInputError(previous, "", "the previous release folder does not exist")
    expect = read_toml(previous / "expectations.toml", "expectations file") \
        if (previous / "expectations.toml").is_file() else {}
    name = next((n for n in BASELINES if (previous / n).is_file()), BASELINES[0])
    old = read_toml(previous / name, "baseline file").get("expected_failures", {}) \
        if (previous / name).is_file() else {}
    carried, dropped, triage = plan(report, old)
    try:
        out.mkdir(parents=True, exist_ok=True)
        counts = {k: v for k, v in sorted((report.get("observed") or {}).items())
                  if isinstance(v, int) and not isinstance(v, bool)}
        expect = {**{k: v for k, v in expect.items() if k != "counts"}, "counts": counts}
        (out / "expectations.toml").write_text(tomli_w.dumps(expect), encoding="utf-8")
        baseline = {"expected_failures": {**carried, **triage}}
        (out / name).write_text(_BANNER + tomli_w.dumps(baseline), encoding="utf-8")
        if report.get("contract_diff") is not None:
            (out / "contract-diff.json").write_text(json.dumps(report["contract_diff"], ensure_ascii=False,
                                                               indent=2, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        raise DwsInputError(out, "", f"cannot write the release folder: {exc.strerror or exc}") from None
    print(f"{out}: {len(counts)} counts, {len(carried)} baseline entries carried, {len(dropped)} dropped (they pass "
          f"now), {len(triage)} new failures to triage")
    for entry in dropped:
        print(f"  dropped: {entry}")
    for entry in triage:
        print(f"  TRIAGE: {entry}")
    return 0


def plan(report: dict[str, Any], old: dict[str, Any]) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """(carried entries with their reasons, dropped entries, new TRIAGE entries) from a run's report."""
    use = report.get("baseline_use") or {}
    failed, unseen = set(use.get("failed") or []), set(use.get("not_evaluated") or [])
    carried: dict[str, Any] = {e: r for e, r in old.items() if e in failed or e in unseen}  # unseen: kept
    facts = observed_facts(report)
    carried = {e: _bound(r, facts.get(e)) for e, r in carried.items()}
    dropped = sorted(set(old) - set(carried))
    renamed = _renamed(old, use.get("unknown_cases") or {})
    triage: dict[str, Any] = {}
    for gate_id, g in sorted((report.get("gates") or {}).items()):
        if g.get("status") not in ("failed", "error"):
            continue
        first = " ".join(str((g.get("reasons") or [g.get("rule") or "failed"])[0]).split())[:300]
        for entry in _new_entries(gate_id, g):
            if entry not in old:  # a previous entry is carried (it failed) or dropped (it failed as stale)
                was = renamed.get(_owner(entry))
                reason = f"{TRIAGE} {first}" + (f" (was {was[0]!r}: {was[1]})" if was else "")
                triage[entry] = _bound(reason, facts.get(entry))
    return carried, dropped, triage


def _owner(entry: str) -> tuple[str, str | None]:
    """(gate, subject) of an entry: ``G[subject/case]`` -> (G, subject); ``G[case]`` and ``G`` -> (G, None)."""
    gate_id, inner = split_entry(entry)
    return gate_id, inner.split("/", 1)[0] if inner and "/" in inner else None


def _renamed(old: dict[str, Any], unknown: dict[str, Any]) -> dict[tuple[str, str | None], tuple[str, str]]:
    """(gate, subject) -> (old entry, its reason) of the old entries whose case this suite no longer produces (a
    case renamed or split, e.g. per flag): a new failure of the same gate and subject quotes it, still to triage."""
    out = {}
    for entry in sorted(unknown):
        value = old.get(entry)
        reason = value.get("reason") if isinstance(value, dict) else value
        if isinstance(reason, str):
            out[_owner(entry)] = (entry, " ".join(reason.split())[:300])
    return out


def observed_facts(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Baseline entry -> the typed facts its failure showed in this run (the report's ``cases.*.facts``)."""
    out: dict[str, dict[str, Any]] = {}
    for gate_id, g in (report.get("gates") or {}).items():
        for label, sub in (g.get("cases") or {}).items():
            for case, facts in ((sub or {}).get("facts") or {}).items():
                out[entry_name(gate_id, label or None, case or None)] = facts
    return out


def _bound(value: Any, facts: dict[str, Any] | None) -> Any:
    """An entry's value with the fingerprint of the failure it accepts (the migration of an old baseline)."""
    reason = value.get("reason") if isinstance(value, dict) else value
    if not facts:
        return value
    return {"reason": reason, "fingerprint": dict(sorted(facts.items()))}


def _new_entries(gate_id: str, g: dict[str, Any]) -> list[str]:
    """The finest entries of a failing gate: its failing cases per subject, else its failing subjects."""
    out: list[str] = []
    cases = g.get("cases") or {}
    stale = set(g.get("stale_items") or [])
    for item in g.get("failed_items") or []:
        if item in stale:
            continue
        label = None if item == gate_id else item
        found = cases.get(label or "")
        if isinstance(found, dict) and "failed" in found:  # broken into cases: only its failing ones (not stale)
            out += [entry_name(gate_id, label, c) for c in found.get("failed") or []]
        else:
            out.append(entry_name(gate_id, label))
    return out


_BANNER = ("# Written by `python -m pytest_dws release init`: review every TRIAGE entry (a run refuses them) and\n"
           "# write the document sentence it breaks and the observed field instead.\n\n")
