"""The agent-facing changes between two agent contracts (:mod:`pytest_dws.observe.agent_contract`), grouped by kind.

A release manager's question across releases: what changed for agents? Tools added or gone, renamed or
aliased, a tool whose safety (effect, risk, confirmation, idempotency) or interface changed, parameters and
constraints, the typed errors of a fault class, the help-visible flags of a command. Field-level changes
come from deepdiff, so each names its path (``chat.x parameters.user.required: False -> True``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

KINDS = ("added", "removed", "renamed", "safety", "interface", "parameters", "errors", "help", "aliases")
TITLES = {"added": "tools added", "removed": "tools removed", "renamed": "renamed or aliased",
          "safety": "safety changed", "interface": "interface changed", "parameters": "parameters changed",
          "errors": "errors changed", "help": "help-visible flags changed",
          "aliases": "compatibility aliases changed"}
SAFETY = ("effect", "risk", "confirmation", "idempotency")
INTERFACE = ("interface_mode", "availability")


def diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """{kind: [change]} (every kind present, maybe empty); a change is {subject, field, old, new}."""
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    ot, nt = old.get("tools", {}), new.get("tools", {})
    gone, came = sorted(set(ot) - set(nt)), sorted(set(nt) - set(ot))
    by_cli = {nt[k]["cli_path"]: k for k in came}
    for key in gone:
        moved = by_cli.pop(ot[key]["cli_path"], None)
        if moved is not None:  # same CLI path, new canonical identity
            out["renamed"].append(_change(key, "canonical_path", key, moved))
        else:
            out["removed"].append(_change(key, "tool", ot[key]["cli_path"], None))
    renamed_to = {c["new"] for c in out["renamed"]}
    out["added"] = [_change(k, "tool", None, nt[k]["cli_path"]) for k in came if k not in renamed_to]
    for key in sorted(set(ot) & set(nt)):
        a, b = ot[key], nt[key]
        for f in ("cli_path", "aliases"):
            if a.get(f) != b.get(f):
                out["renamed"].append(_change(key, f, a.get(f), b.get(f)))
        for kind, fields in (("safety", SAFETY), ("interface", INTERFACE)):
            out[kind] += [_change(key, f, a.get(f), b.get(f)) for f in fields if a.get(f) != b.get(f)]
        for part in ("parameters", "positionals", "constraints"):
            out["parameters"] += _deep(key, part, a.get(part), b.get(part))
    for section in ("errors", "help", "aliases"):
        if section in old and section in new:
            oe, ne = old[section], new[section]
            for subject in sorted(set(oe) | set(ne)):
                out[section] += _deep(subject, "", oe.get(subject), ne.get(subject))
    return out


def _change(subject: str, field: str, old: Any, new: Any) -> dict[str, Any]:
    return {"subject": subject, "field": field, "old": old, "new": new}


def _deep(subject: str, prefix: str, old: Any, new: Any) -> list[dict[str, Any]]:
    """Field-level changes between two values, one per deepdiff path (``prefix`` names the part)."""
    from deepdiff import DeepDiff

    if old == new:
        return []
    if old is None or new is None or not isinstance(old, (dict, list)) or not isinstance(new, (dict, list)):
        return [_change(subject, prefix or "value", old, new)]
    tree = DeepDiff(old, new, ignore_order=False, view="tree")
    out = []
    for leaves in tree.values():
        for leaf in leaves:
            path = ".".join(str(p) for p in leaf.path(output_format="list"))
            field = ".".join(p for p in (prefix, path) if p)
            out.append(_change(subject, field, _plain(leaf.t1), _plain(leaf.t2)))
    return sorted(out, key=lambda c: c["field"])


def _plain(value: Any) -> Any:
    """deepdiff marks a missing side with a NotPresent object: None here."""
    return None if type(value).__name__ == "NotPresent" else value


def counts(changes: Mapping[str, list[Any]]) -> dict[str, int]:
    return {k: len(changes.get(k, [])) for k in KINDS}


def render_text(changes: Mapping[str, list[dict[str, Any]]], old: str = "old", new: str = "new") -> str:
    lines = [f"agent contract: {old} -> {new}: "
             + ", ".join(f"{n} {TITLES[k]}" for k, n in counts(changes).items())]
    for kind in KINDS:
        if changes.get(kind):
            lines.append(f"\n{TITLES[kind]} ({len(changes[kind])}):")
            lines += [f"  {_line(c)}" for c in changes[kind]]
    return "\n".join(lines) + "\n"


def render_markdown(changes: Mapping[str, list[dict[str, Any]]], old: str = "old", new: str = "new") -> str:
    lines = [f"## Agent contract: `{old}` → `{new}`", "", "| kind | changes |", "|---|---|"]
    lines += [f"| {TITLES[k]} | {n} |" for k, n in counts(changes).items()]
    for kind in KINDS:
        if changes.get(kind):
            lines += ["", f"### {TITLES[kind]}", ""] + [f"- {_line(c, code=True)}" for c in changes[kind]]
    return "\n".join(lines) + "\n"


def render_json(changes: Mapping[str, list[dict[str, Any]]], old: str = "old", new: str = "new") -> str:
    return json.dumps({"old": old, "new": new, "counts": counts(changes), "changes": changes},
                      ensure_ascii=False, indent=2, default=str) + "\n"


def _line(c: Mapping[str, Any], *, code: bool = False) -> str:
    q = "`" if code else ""
    if c["field"] == "tool":
        return f"{q}{c['subject']}{q} ({c['new'] or c['old']})"
    return f"{q}{c['subject']}{q} {c['field']}: {_show(c['old'])} -> {_show(c['new'])}"


def _show(value: Any) -> str:
    return "—" if value is None else json.dumps(value, ensure_ascii=False, default=str)


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}
