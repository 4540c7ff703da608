"""Ordered, thread-safe record of every request the fake server received.

Most D1 gates are judged on the wire (which tools, which arguments, how many calls), so the transcript
is the evidence a gate asserts on.  It records every request, including malformed ones and the
``initialize``/``tools/list`` calls the real binary never sends, because such calls are themselves
evidence of a violation.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: Tools that resolve a name into a stable id; gates counting "business calls" leave them out.
NAME_RESOLUTION_TOOLS = frozenset({"search_groups", "search_contact_by_key_word"})

#: Tools known to change backend state.  A tool outside this set also counts as a write when its
#: name lacks every read prefix, the rule the CLI's read-only channel applies under ``--dry-run``.
WRITE_TOOLS = frozenset({
    "update_group_name", "send_personal_message", "send_message", "send_group_message",
    "create_group", "add_group_member", "remove_group_member", "recall_message",
    "update_group_owner", "set_group_admin", "dismiss_group",
})
READ_PREFIXES = ("get_", "list_", "query_", "search_", "unread_", "download_", "fetch_")  # downloads read content


def is_write_tool(tool: str | None) -> bool:
    """True when ``tool`` must be treated as a write (conservative: unknown non-read names count)."""
    if not tool:
        return False
    return tool in WRITE_TOOLS or not tool.startswith(READ_PREFIXES)


def is_write_call(tool: str | None, arguments: dict[str, Any] | None) -> bool:
    """True when a call of ``tool`` with ``arguments`` must be treated as a write: :func:`is_write_tool`, unless
    the call itself asks for a plan only (``dryRun: true``, as cf8cf95 `pat chmod --product … --dry-run` asks
    ``pat.batch_plan``): the backend commits nothing for it, so it is the preview a dry run may make."""
    return is_write_tool(tool) and (arguments or {}).get("dryRun") is not True


@dataclass(frozen=True, slots=True)
class Record:
    """One request as received, and what the server did with it.

    ``status`` is the HTTP status sent back (0 when the connection was dropped on purpose);
    ``outcome`` is ``"ok"`` (answered by the world model or a protocol method), ``"fault:<kind>"``
    (answered by an override; chained kinds are joined with ``+``, e.g. ``fault:delay+http``) or
    ``"error:<why>"`` (the request itself was malformed).
    """

    seq: int
    time: float
    product: str | None
    path: str
    http_method: str
    rpc_method: str | None
    rpc_id: Any
    tool: str | None
    arguments: dict[str, Any] | None
    headers: dict[str, str]
    status: int
    outcome: str

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON view (used by ``dump_jsonl`` and by failure reports)."""
        return asdict(self)


class Transcript:
    """Thread-safe list of :class:`Record`, in arrival order.

    Sequence numbers are taken when a request arrives, records are stored when its reply is ready, so
    concurrent requests may complete out of order; every read therefore returns records sorted by
    ``seq``.  A record is always stored before its reply is written, so a client that has seen the reply
    also sees the record.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[Record] = []
        self._seq = 0
        self._sorted = True

    # -- writer side (the server) -------------------------------------------------------------
    def next_seq(self) -> int:
        """Reserve the sequence number of a request that has just arrived."""
        with self._lock:
            self._seq += 1
            return self._seq

    def add(self, record: Record) -> None:
        """Store a finished record."""
        with self._lock:
            records = self._records
            if records and records[-1].seq > record.seq:
                self._sorted = False
            records.append(record)

    # -- reader side ----------------------------------------------------------------------------
    @property
    def arrived(self) -> int:
        """Requests that have arrived since the last clear, including those still being answered."""
        with self._lock:
            return self._seq

    @property
    def records(self) -> list[Record]:
        """A copy of all records, ordered by arrival."""
        with self._lock:
            if not self._sorted:
                self._records.sort(key=lambda r: r.seq)
                self._sorted = True
            return list(self._records)

    def calls(self, tool: str | None = None, product: str | None = None) -> list[Record]:
        """``tools/call`` records, optionally filtered by tool name and/or product."""
        return [
            r for r in self.records
            if r.rpc_method == "tools/call"
            and (tool is None or r.tool == tool)
            and (product is None or r.product == product)
        ]

    def business_calls(self) -> list[Record]:
        """``tools/call`` records except name resolution and contact lookups."""
        return [r for r in self.calls() if r.tool not in NAME_RESOLUTION_TOOLS]

    def writes(self) -> list[Record]:
        """``tools/call`` records whose tool is a write (see :func:`is_write_tool`)."""
        return [r for r in self.calls() if is_write_tool(r.tool)]

    def count(self, method: str = "tools/list") -> int:
        """Number of records with that JSON-RPC method."""
        return sum(1 for r in self.records if r.rpc_method == method)

    def call_tuples(self) -> list[tuple[str, str | None, dict[str, Any] | None]]:
        """Ordered ``(path, tool, arguments)`` of the tool calls: the R6.4 comparison key for dry-runs."""
        return [(r.path, r.tool, r.arguments) for r in self.calls()]

    def clear(self) -> None:
        """Forget every record and restart sequence numbers at 1."""
        with self._lock:
            self._records = []
            self._seq = 0
            self._sorted = True

    def dump_jsonl(self, path: Path | str) -> None:
        """Write one JSON object per record, in order (UTF-8, non-ASCII kept readable)."""
        with open(path, "w", encoding="utf-8") as fh:
            for record in self.records:
                fh.write(json.dumps(record.to_dict(), ensure_ascii=False, default=str))
                fh.write("\n")

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)
