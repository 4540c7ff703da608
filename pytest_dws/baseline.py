"""The baseline of expected failures: each entry ``GATE-ID`` or ``GATE-ID[subject]`` with a mandatory reason.

A listed item that fails is reported as xfail with the reason. A listed item that passes fails the run as a
*stale* entry (as in the MCP conformance suite): a baseline may only shrink knowingly. A gate-level entry is
stale when no item of that gate failed. Entries naming a gate that was collected but no such subject are
reported as unknown, so that typos cannot hide anything.

File format (TOML)::

    [expected_failures]
    "SCH-REF-REVIEW" = "e81 still has 11 unreviewed Skill references (GATES.md R8.9)"
    "SCH-HINT-PRECEDENCE[dev.disable_dev_app]" = "cf catalog contradicts destructive-safety.json"
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pytest_dws.errors import DwsInputError, read_toml

_ENTRY = re.compile(r"^(?P<gate>[A-Z]+(?:-[A-Z0-9]+)+)(?:\[(?P<subject>.+)\])?$")


@dataclass
class Baseline:
    """Expected failures by item name, with their reasons, and which of them actually failed."""

    path: Path | None = None
    entries: dict[str, str] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)
    matched: set[str] = field(default_factory=set)

    def lookup(self, gate_id: str, subject: str | None) -> tuple[str, str] | None:
        """The (entry, reason) covering this item, most specific first."""
        if subject is not None:
            name = f"{gate_id}[{subject}]"
            if name in self.entries:
                return name, self.entries[name]
        if gate_id in self.entries:
            return gate_id, self.entries[gate_id]
        return None

    def problems(self, collected: dict[str, set[str | None]]) -> list[str]:
        """Stale and unknown entries, given the collected gate ids and their subjects."""
        out = []
        for entry in sorted(self.entries):
            m = _ENTRY.match(entry)
            assert m is not None  # validated on load
            gate_id, subject = m["gate"], m["subject"]
            if gate_id not in collected:
                continue  # gate not selected in this run (-m/-k): nothing to judge
            if subject is not None and subject not in collected[gate_id]:
                out.append(f"unknown baseline entry {entry!r}: gate {gate_id} has no such subject")
            elif entry not in self.matched:
                continue  # collected but not run (deselected, not applicable)
            elif entry not in self.failed:
                out.append(f"stale baseline entry {entry!r}: it passes now; remove it ({self.path})")
        return out


def load_baseline(path: Path | None) -> Baseline:
    """Read a baseline TOML file; a malformed one is a one-line input error."""
    if path is None:
        return Baseline()
    data = read_toml(path, "baseline file (option --dws-baseline / ini dws_baseline)")
    table = data.get("expected_failures", {})
    if not isinstance(table, dict):
        raise DwsInputError(path, "$.expected_failures", "expected a table of \"GATE-ID[subject]\" = \"reason\"")
    for entry, reason in table.items():
        if not _ENTRY.match(entry):
            raise DwsInputError(path, f"$.expected_failures.{entry!r}", "expected GATE-ID or GATE-ID[subject]")
        if not isinstance(reason, str) or not reason.strip():
            raise DwsInputError(path, f"$.expected_failures.{entry!r}", "a non-empty reason is mandatory")
    return Baseline(path, dict(table))
