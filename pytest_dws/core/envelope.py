"""Where a release puts its typed error in the JSON document on stderr, and under which keys (issue 42).

D1 §8.1 fixes the typed FIELDS of an error (its category, reason, origin, stage, retryability, advice ...), not the
names a release prints them under: the next release may report the reason as ``{"failure": {"code": ...}}``. So the
suite never reads a fixed ``.error.reason`` path: :meth:`Envelope.error_of` finds the release's error object and
returns it under the canonical keys (:data:`FIELDS`, the names of docs/contract.md R4.1 the readers use). The release's
names are profile data (the ``[errors]`` section, parsed by :mod:`pytest_dws.inputs.envelope`); the default
:class:`Envelope` is R4.1's own, so reading through it changes nothing. Stdlib only: the judge
(:mod:`pytest_dws.core.outcome`) uses it outside pytest on recorded runs.

Example::

    env = Envelope(at=("failure",), keys={"reason": "code", "code": "exit", "category": "kind"})
    env.error_of({"failure": {"exit": 3, "kind": "validation", "code": "flag_conflict"}})
    # {"code": 3, "category": "validation", "reason": "flag_conflict"}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FIELDS", "Envelope"]

#: The canonical typed fields of an error object (docs/contract.md R4.1): the keys every reader of the suite uses.
FIELDS = ("code", "category", "message", "reason", "operation", "server_key", "origin", "stage", "execution_started",
          "retryable", "retry_after_seconds", "hint", "actions", "available_flags", "details", "rpc_code",
          "rpc_data", "trace_id", "server_error_code", "technical_detail", "cause")


@dataclass(frozen=True)
class Envelope:
    """The release's error envelope: ``at``, the key path of the typed error object in the stderr document (empty:
    the document itself), and ``keys``, canonical field -> the release's key (a field not named keeps its name)."""

    at: tuple[str, ...] = ("error",)
    keys: Mapping[str, str] = field(default_factory=dict)

    @property
    def renamed(self) -> dict[str, str]:
        """The release's key -> the canonical field, for the fields the release names otherwise."""
        return {key: canonical for canonical, key in self.keys.items() if key != canonical}

    def error_of(self, doc: Any) -> dict[str, Any] | None:
        """The typed error object of the stderr document ``doc`` under the canonical keys, or None when it has
        none. A key of the release that is no renamed field is kept, unless its name is a canonical field the
        release prints under another key (then it is not that field: it is left out)."""
        for key in self.at:
            doc = doc.get(key) if isinstance(doc, dict) else None
        if not isinstance(doc, dict):
            return None
        renamed = self.renamed
        if not renamed:
            return doc  # the canonical names: the very object, as before the envelope was read
        moved = set(renamed.values())
        return {(renamed[k] if k in renamed else k): v for k, v in doc.items() if k in renamed or k not in moved}
