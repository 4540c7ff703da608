"""The whole D1 §10 verdict: REL-ALL's conditions b1-b4 (judged by the gate over the datasets) and b5, which no gate
item can see from inside a run ("全仓、Schema、Skill 和真实只读 smoke 全部通过"): it is read from the other gates'
statuses in the report. A condition nobody judged is named with what would judge it; the verdict is never "met"
while one is not judged (issue 34: the reference printed MET with its Go gates not applicable and no real smoke).

Pure data in, pure data out: the report (:mod:`pytest_dws.session.report`) adds b5 to its ``release`` section, and
the closing block (:mod:`pytest_dws.session.summary`) reads it back, also from a report written by an older run.
"""

from __future__ import annotations

from typing import Any

B5 = "whole repo, Schema, Skill and the real read-only smoke pass"
#: b5's parts: the gates whose verdict judges the part (``judge``: at least one of them must have judged), the gates
#: whose failure breaks it too (``also``, ``families``), and what would judge it when nothing did.
B5_PARTS: dict[str, dict[str, Any]] = {
    "whole repo": {"judge": ("FIN-GO-TEST-ALL",),
                   "also": ("FIN-FOCUSED-TESTS", "FIN-GOFMT", "FIN-GO-GENERATE", "FIN-DRIFT"),
                   "wants": "FIN-GO-TEST-ALL: a Go source tree and its toolchain (--dws-source)"},
    "Schema": {"judge": ("FIN-SCHEMA-CATALOG",), "families": ("SCH", "SCHCLI"),
               "wants": "FIN-SCHEMA-CATALOG: a catalog (--dws-source / --dws-catalog, or the binary's)"},
    "Skill": {"judge": ("FIN-SKILL-COMMANDS", "FIN-SKILL-VALIDATE"),
              "also": ("SCH-SKILL-NO-PHANTOM", "ALI-SKILL-NOT-DEFAULT"),
              "wants": "FIN-SKILL-COMMANDS: Skill documents (--dws-source) and the binary"},
    "real read-only smoke": {"judge": ("SMK-LIVE",),
                             "wants": "SMK-LIVE: --dws-live-smoke (D1 §7.4's read-only commands against the "
                                      "service, with the user's own HOME and profile)"},
}
JUDGED = ("passed", "failed", "xfailed", "error")
BROKEN = ("failed", "xfailed", "error")


def b5(gates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Condition b5 from the report's gate statuses: ``ok`` True (every part judged, none broken), False (a part
    broken: its gates are the causes) or None (not judged: ``not_judged`` says what would judge it)."""
    status = {g: str(v.get("status")) for g, v in gates.items()}
    parts: dict[str, str] = {}
    causes: list[str] = []
    missing: list[str] = []
    for name, spec in B5_PARTS.items():
        members = [*spec["judge"], *spec.get("also", ()),
                   *(g for g in status if g.split("-", 1)[0] in spec.get("families", ()))]
        broken = sorted({g for g in members if status.get(g) in BROKEN})
        judged = any(status.get(g) in JUDGED for g in spec["judge"])
        if broken:
            parts[name] = "failed"
            causes += broken
        elif judged:
            parts[name] = "passed"
        else:
            parts[name] = "not judged"
            missing.append(f"{name} ({spec['wants']})")
    ok = False if causes else (None if missing else True)
    # broken only by failures the baseline accepts (xfailed): NOT MET, every cause accepted
    accepted = bool(causes) and all(status.get(g) == "xfailed" for g in causes)
    return {"condition": B5, "doc": "D1 §10 b5", "ok": ok, "parts": parts, "cases": [], "count": len(causes),
            "causes": sorted(set(causes)), "unattributed": [], "not_judged": missing, "accepted": accepted}


def complete(release: dict[str, Any], gates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``release`` (REL-ALL's section) with b5 recomputed from ``gates`` and the overall D1 §10 state: ``met``
    (every condition judged and holding), ``not met`` (one failed), ``incomplete`` (none failed, one not judged)."""
    conds = [c for c in release.get("conditions") or [] if c.get("doc") != "D1 §10 b5"]
    conds.append(b5(gates))
    failed = [c for c in conds if c.get("ok") is False]
    unjudged = [c for c in conds if c.get("ok") is None]
    state = "not met" if failed else ("incomplete" if unjudged else "met")
    return {**release, "conditions": conds,
            "d1_10": {"state": state, "conditions": len(conds), "hold": sum(c.get("ok") is True for c in conds),
                      "failed": len(failed), "not_judged": [n for c in unjudged for n in c.get("not_judged") or []]}}
