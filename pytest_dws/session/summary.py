"""The closing block of a run, built from its JSON report alone (the report is built apart from how it is drawn):
the exit and what it means, the D1 §10 verdict, per family what failed / was accepted / did not apply, each
failing gate with its first reason in one line, what was not applicable grouped by what is missing, and what
was not judged. The terminal, ``--dws-summary FILE.md`` and ``python -m pytest_dws summary REPORT.json`` draw the
same block, so a CI step summary says what the terminal said.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from pytest_dws.verdict import release as release_verdict
from pytest_dws.verdict.fold import first_line

STATUSES = ("failed", "error", "xfailed", "not_applicable", "passed")
_OPTION = re.compile(r"--dws-[a-z-]+|\bgo\.mod\b|Skill documents|Go toolchain|`go`|a committed catalog")


@dataclass
class Block:
    """What the closing block says, before it is drawn (text or Markdown)."""

    exit_code: int
    exit_meaning: str
    target: str
    release: str | None
    families: list[tuple[str, dict[str, int]]]
    failing: list[tuple[str, str, str]] = field(default_factory=list)  # (gate, doc, first reason)
    accepted: list[tuple[str, int]] = field(default_factory=list)  # (gate, accepted subjects)
    not_applicable: list[tuple[str, list[str]]] = field(default_factory=list)  # (what is missing, gates)
    not_judged: list[str] = field(default_factory=list)
    evaluation: list[str] = field(default_factory=list)  # the agent evaluation (pytest_dws.session.evalview)


def build(report: dict[str, Any]) -> Block:
    gates: dict[str, dict[str, Any]] = report.get("gates") or {}
    problems = report.get("baseline_problems") or []
    failing = sorted(g for g, v in gates.items() if v.get("status") in ("failed", "error"))
    code = 1 if failing or problems else 0
    meaning = (f"{len(failing)} gate(s) failed that the baseline does not accept"
               + (f", {len(problems)} baseline problem(s)" if problems else "") if code
               else "nothing failed that the baseline does not accept")
    if gates and all(v.get("status") == "not_applicable" for v in gates.values()):
        code, meaning = 4, "nothing was judged: every selected gate was not applicable (see what each one wants)"
    unknown = (report.get("baseline_use") or {}).get("unknown_cases") or {}
    if unknown:  # a misspelled case entry: bad input, whatever the gates said
        code, meaning = 4, f"the baseline names {len(unknown)} case(s) no gate produced: {', '.join(sorted(unknown))}"
    per_family: dict[str, Counter[str]] = defaultdict(Counter)
    for v in gates.values():
        per_family[str(v.get("family"))][str(v.get("status"))] += 1
    block = Block(code, meaning, _target(report), _release(report),
                  [(f, dict(c)) for f, c in sorted(per_family.items())])
    for g in failing:
        v = gates[g]
        block.failing.append((g, str(v.get("doc", "")), first_line(_reason(g, v), 160)))
    block.accepted = [(g, len(v.get("xfailed_items") or []) or 1) for g, v in sorted(gates.items())
                      if v.get("status") == "xfailed"]
    missing: dict[str, list[str]] = defaultdict(list)
    for g, v in sorted(gates.items()):
        if v.get("status") == "not_applicable":
            missing[wanting(v)].append(g)
    block.not_applicable = sorted(missing.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    block.not_judged = _not_judged(report)
    from pytest_dws.session.evalview import lines

    block.evaluation = lines(report)
    return block


def wanting(gate: dict[str, Any]) -> str:
    """What a not-applicable gate lacks, as a phrase for "not applicable for want of ...": the typed phrase the
    gate gave (the report's ``wants``, from NotApplicable.wants); for a report without it (an older one), the option
    its note names; else a phrase that sends the reader to the notes, never the note's sentence itself."""
    wants = gate.get("wants") or []
    if wants:
        return " or ".join(str(w) for w in wants)
    found = _OPTION.search(" ".join(gate.get("notes") or []))
    return found.group(0) if found else "an input named in the gate's notes"


def _reason(gate_id: str, v: dict[str, Any]) -> str:
    """A failing gate's one line: its first recorded reason; else its failing cases, naming the rule gates that
    carry their causes instead of repeating them (an aggregate); else its failing parts; else its rule."""
    if v.get("reasons"):
        return str(v["reasons"][0])
    failed: list[str] = []
    causes: set[str] = set()
    for sub in (v.get("cases") or {}).values():
        if isinstance(sub, dict):
            failed += [str(c) for c in sub.get("failed") or []]
            for found in (sub.get("causes") or {}).values():
                causes.update(str(c).split("[", 1)[0] for c in found)
    if failed:
        text = f"{len(failed)} failing case(s): {', '.join(failed[:4])}" + (" ..." if len(failed) > 4 else "")
        return text + (f"; causes carried by {', '.join(sorted(causes))}" if causes else "")
    parts = [str(i) for i in v.get("failed_items") or [] if i != gate_id]
    return ", ".join(parts) or str(v.get("rule") or "failed")


def _target(report: dict[str, Any]) -> str:
    t = report.get("target") or {}
    what = (t.get("replay") and f"recording {t['replay']}") or " ".join(t.get("cli") or []) or t.get("source") \
        or t.get("catalog") or "(none)"
    digest = t.get("digest")
    taken = "; ".join((t.get("from_recording") or {}).values())
    return f"{what}" + (f" (build {digest[:12]})" if digest else "") + (f"; from the recording: {taken}"
                                                                        if taken else "")


def _release(report: dict[str, Any]) -> str | None:
    rel = report.get("release")
    if not isinstance(rel, dict):
        return None
    gates = report.get("gates") or {}
    status = gates.get("REL-ALL", {}).get("status", "")
    return release_line(release_verdict.complete(rel, gates), status)


def _not_judged(report: dict[str, Any]) -> list[str]:
    out = []
    seen = (report.get("sampling") or {}).get("help_and_schema_judged_on") or {}
    if seen and seen.get("tools") != seen.get("of"):
        out.append(f"help and schema: judged on {seen.get('tools')} of {seen.get('of')} tools (coverage sample; "
                   "--dws-sample=all for every tool)")
    for key, what in (("examples_not_judged", "examples of {n} tools"),
                      ("oneof_groups_not_judged", "one-of groups of {n} tools"),
                      ("required_not_judged", "required flags of {n} commands")):
        found = report.get(key) or {}
        if found:
            out.append(what.format(n=len(found)) + f" (world-dependent outcomes; all in the report's {key})")
    catalog = report.get("catalog") or {}
    if catalog.get("from"):  # issue 27: the DATA gates judged the catalog the binary embeds
        out.append(f"catalog: from {catalog['from']}; the tree commits none (assembled at build time)")
    egress = report.get("egress") or {}
    if egress:  # issue 25: never silently dropped; only the service's own egress is discovery's business
        shown = "; ".join(f"{t} ({v.get('kind')}, e.g. `{v.get('example')}`)" for t, v in sorted(egress.items())[:3]
                          if isinstance(v, dict))
        out.append(f"egress off the machine, refused by the suite's proxy: {len(egress)} host(s): {shown} "
                   "(the report's egress)")
    unclassified: dict[str, int] = {}
    for key in report.get("unclassified") or {}:  # "field=value @ tool": one line per field and value
        word = str(key).split(" @ ", 1)[0]
        unclassified[word] = unclassified.get(word, 0) + 1
    for word, n in sorted(unclassified.items()):
        field, _, value = word.partition("=")
        out.append(f"unclassified value {value!r} of field {field} in {n} tool(s): not judged by the gate reading "
                   "it (classify it in the release's [vocabularies])")
    unreadable = report.get("unreadable_files") or {}
    if unreadable:
        out.append(f"{len(unreadable)} files of the tree judged only as far as they could be read (unreadable_files: "
                   + "; ".join(f"{k}: {v}" for k, v in sorted(unreadable.items())[:3]) + ")")
    missing = ((report.get("invocations") or {}).get("not_recorded") or {}).get("count")
    if missing:
        out.append(f"{missing} invocations not in the replayed recording (invocations.not_recorded)")
    loose = (report.get("pins") or {}).get("not_compared") or {}
    if loose:  # a pinned count whose gate did not judge in this run: named, never silently accepted
        out.append(f"{len(loose)} pinned count(s) no gate compared in this run: "
                   + "; ".join(f"{k} ({', '.join(g) or '?'})" for k, g in sorted(loose.items())[:6])
                   + " (the report's pins.not_compared)")
    unseen = (report.get("baseline_use") or {}).get("not_evaluated") or []
    unrecorded = (report.get("baseline_use") or {}).get("not_recorded") or []
    if unseen:
        out.append(f"{len(unseen)} baseline entries not evaluated (baseline_use.not_evaluated"
                   + (f"; {len(unrecorded)} of them for want of a recorded invocation: baseline_use.not_recorded)"
                      if unrecorded else ")"))
    return out


def text_lines(block: Block) -> list[str]:
    """The block as terminal lines (the caller draws the separator)."""
    lines = [f"target: {block.target}", f"exit {block.exit_code}: {block.exit_meaning}"]
    if block.release:
        lines.append(block.release)
    lines.append("family   " + "  ".join(f"{s.replace('_', ' '):>14}" for s in STATUSES))
    for fam, counts in block.families:
        lines.append(f"{fam:<8} " + "  ".join(f"{counts.get(s, 0):>14}" for s in STATUSES))
    lines.append("(one row per gate id; pytest's own counts are per gate part, and its 'skipped' are the not "
                 "applicable ones)")
    lines += [f"FAIL {g} ({doc}): {reason}" for g, doc, reason in block.failing]
    if block.accepted:
        lines.append("accepted by the baseline (xfailed): " + ", ".join(f"{g} ({n})" for g, n in block.accepted))
    for what, gates in block.not_applicable:
        lines.append(f"not applicable for want of {what}: {len(gates)} gate(s): {', '.join(gates[:8])}"
                     + (f" (+{len(gates) - 8})" if len(gates) > 8 else ""))
    lines += [f"not judged: {x}" for x in block.not_judged]
    return lines


def markdown(block: Block) -> str:
    """The block as Markdown (a CI step summary or a pull-request comment)."""
    head = "❌" if block.exit_code else "✅"
    out = [f"## {head} dws contract: exit {block.exit_code}", "", f"{block.exit_meaning}.", "",
           f"Target: `{block.target}`", ""]
    if block.release:
        out += [f"**{block.release}**", ""]
    out += ["| family | " + " | ".join(s.replace("_", " ") for s in STATUSES) + " |",
            "|---|" + "---:|" * len(STATUSES)]
    out += [f"| {fam} | " + " | ".join(str(c.get(s, 0)) for s in STATUSES) + " |" for fam, c in block.families]
    if block.failing:
        out += ["", "### Failing gates", ""] + [f"- **{g}** ({doc}): {r}" for g, doc, r in block.failing]
    if block.accepted:
        out += ["", "### Accepted by the baseline", ""] + [f"- {g} ({n})" for g, n in block.accepted]
    if block.not_applicable:
        out += ["", "### Not applicable", ""] + [f"- for want of {w}: {', '.join(gs)}" for w, gs in
                                                 block.not_applicable]
    if block.not_judged:
        out += ["", "### Not judged", ""] + [f"- {x}" for x in block.not_judged]
    if block.evaluation:
        out += ["", "### Agent evaluation (D1 §9.5, §10)", ""] + [
            f"- {x.strip()}" if not x.startswith(" ") else f"  - {x.strip()}" for x in block.evaluation]
    return "\n".join(out) + "\n"

def release_line(release: dict[str, Any], status: str) -> str:
    """The D1 §10 verdict in one line, apart from the exit code (which answers whether anything failed that the
    baseline does not accept): ``release verdict (D1 §10): NOT MET, 3 of 9 conditions failed, all causes
    accepted by the baseline: ...``; never MET while a condition is not judged: ``MET on 8 of 9 conditions; b5
    not judged: ...`` (issue 34)."""
    conds = release.get("conditions") or []
    failed = [c for c in conds if c.get("ok") is False]
    unjudged = [c for c in conds if c.get("ok") is None]
    by = f" (decided from {release['source']})" if release.get("source") else ""
    if not failed:
        if not unjudged:
            return f"release verdict (D1 §10): MET, {len(conds)} of {len(conds)} conditions hold{by}"
        which = ", ".join(sorted({m for c in unjudged for m in re.findall(r"b\d+", str(c.get("doc")))}))
        what = "; ".join(n for c in unjudged for n in c.get("not_judged") or [])
        return (f"release verdict (D1 §10): MET on {len(conds) - len(unjudged)} of {len(conds)} conditions; "
                f"{which} not judged: {what}{by}")
    causes = sorted({cause for c in failed for cause in c.get("causes") or []})
    head = f"release verdict (D1 §10): NOT MET, {len(failed)} of {len(conds)} conditions failed"
    shown = ", ".join(causes[:6]) + (f" (+{len(causes) - 6} more)" if len(causes) > 6 else "")
    if (status == "xfailed" or not any(c.get("doc") != "D1 §10 b5" for c in failed)) and \
            all(c.get("accepted", c.get("doc") != "D1 §10 b5") for c in failed):
        return f"{head}, all causes accepted by the baseline: {shown}{by}"
    unexplained = sorted({case for c in failed for case in c.get("unattributed") or []})
    tail = f"; no rule gate explains {len(unexplained)} cases" if unexplained else ""
    rows = sorted({m for c in failed for m in re.findall(r"b\d+", str(c.get("doc")))})
    label = "causes the baseline does not accept" if status == "failed" else "causes"
    return f"{head} (D1 §10 {', '.join(rows)})" + (f", {label}: {shown}" if causes else "") + tail + by
