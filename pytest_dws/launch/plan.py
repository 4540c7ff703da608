"""What a run will cost and what it samples: call kinds, the invocation ledger, the per-tool sample, shards.

Why: on the real 81f67c8d binary a leaf `--help` or `schema <tool>` costs about 5 s of CPU, a parse probe or a
dry run 0.04 s (docs/wire.md §7; measured again on a 2-core machine: 4-6 s of CPU). Every check a cheap call can
answer covers every tool; the calls that cost seconds run over a deterministic sample chosen for coverage
(every constraint kind, every parameter feature, every tool with aliases, every tool the documents or the
profile name; every product by its own `schema <product>`) unless
``--dws-sample all`` (every tool) or ``--dws-sample N`` (N evenly spaced tools). ``--dws-shard K/N`` keeps the
K-th of N disjoint parts of every sampled list, so a CI matrix splits the sweep.

Nothing here imports pytest or a gate module: the binary views (:mod:`pytest_dws.observe.binary.views`) and the
runner (:mod:`pytest_dws.launch`) use it, the report reads the ledger.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Call kinds whose calls cost seconds on the real binary (docs/wire.md §7): sampled by default.
EXPENSIVE = frozenset({"help", "schema"})
#: How many of the slowest invocations the report lists.
SLOWEST = 10
#: ``--dws-sample all``: every tool.
ALL = "all"


def kind_of(args: Sequence[str]) -> str:
    """The cost kind of the arguments after the global flags: ``help`` (any ``--help``), ``schema`` (a
    `schema` view: a tool, a product, the tree, ``--cli-path``), ``schema --all`` (read once per session),
    ``probe`` (a parse probe: the unknown-flag answer is all it needs), ``run`` (dry runs and executions)."""
    words = [str(a) for a in args]
    if "--help" in words or "-h" in words:
        return "help"
    if words and words[0] == "schema":
        return "schema --all" if "--all" in words else "schema"
    if any(w.startswith("--dws-contract-probe") for w in words):
        return "probe"
    return "run"


@dataclass
class KindTotals:
    """Count and process times of one call kind (wall: the target's lifetime; cpu: its user + system time).

    ``first``/``last``: when the earliest of them started and the latest ended (epoch seconds), so the report
    can say how long the costly calls took end to end, whatever ran beside them (pytest-xdist workers, places):
    the figure ``-n 2`` is compared on (bench/bench_real.py)."""

    count: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    reused: int = 0  # calls answered by an identical earlier call of the session (not run again)
    warm: int = 0  # calls started as a fork of a preloaded interpreter (--dws-warm-start, launch.contain.warm)
    first: float | None = None
    last: float | None = None

    def add(self, wall: float, cpu: float, end: float | None = None, warm: bool = False) -> None:
        self.count += 1
        self.warm += int(warm)
        self.wall += wall
        self.cpu += cpu
        if end is not None:
            self.widen(end - wall, end)

    def widen(self, first: float | None, last: float | None) -> None:
        if first is not None:
            self.first = first if self.first is None else min(self.first, first)
        if last is not None:
            self.last = last if self.last is None else max(self.last, last)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"count": self.count, "wall": round(self.wall, 3), "cpu": round(self.cpu, 3),
                               "reused": self.reused, "warm": self.warm}
        if self.first is not None and self.last is not None:
            out |= {"first": round(self.first, 3), "last": round(self.last, 3),
                    "span": round(self.last - self.first, 3)}
        return out


@dataclass
class Ledger:
    """Every target invocation of a process, by kind, and the slowest ones (thread-safe: pools record into it).

    ``drain()`` hands what was recorded since the last drain to the gate item that ran it, so the report (in
    the controller process, also under pytest-xdist) adds the workers' ledgers up."""

    kinds: dict[str, KindTotals] = field(default_factory=dict)
    seen: dict[str, KindTotals] = field(default_factory=dict)  # the whole session's (never drained): the means
    slowest: list[tuple[float, float, str, list[str]]] = field(default_factory=list)  # (wall, cpu, kind, argv)
    not_recorded: list[list[str]] = field(default_factory=list)  # argv a replayed recording did not hold
    reads: dict[str, bool] = field(default_factory=dict)  # recording key -> held: what the gate item read
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, kind: str, argv: Sequence[str], wall: float, cpu: float, end: float | None = None,
               warm: bool = False) -> None:
        """One finished call; ``end``: when it ended (epoch seconds; now, as callers record right after);
        ``warm``: it started warm (launch.contain.warm)."""
        end = time.time() if end is None else end
        with self._lock:
            self.kinds.setdefault(kind, KindTotals()).add(wall, cpu, end, warm)
            self.seen.setdefault(kind, KindTotals()).add(wall, cpu, end, warm)
            self.slowest.append((wall, cpu, kind, [str(a) for a in argv]))
            if len(self.slowest) > 4 * SLOWEST:
                self.slowest = sorted(self.slowest, reverse=True)[:SLOWEST]

    def missing(self, argv: Sequence[str]) -> None:
        """An invocation that a replayed recording does not hold (its subject is not applicable)."""
        with self._lock:
            self.not_recorded.append([str(a) for a in argv])

    def read(self, inv: Any) -> None:
        """The running gate item read ``inv`` (recorded or replayed: it has a key): per gate, how many
        invocations a recording gave it and how many it lacked (issue 37 (4))."""
        key = getattr(inv, "key", None)
        if key is not None:
            with self._lock:
                self.reads[key] = bool(getattr(inv, "recorded", True))

    def reuse(self, kind: str) -> None:
        """A call of ``kind`` answered from the session's earlier identical call (see Runner.run)."""
        with self._lock:
            self.kinds.setdefault(kind, KindTotals()).reused += 1
            self.seen.setdefault(kind, KindTotals()).reused += 1

    def mean_cpu(self, kinds: Iterable[str]) -> float | None:
        """Mean target CPU seconds of a call of these kinds so far (None before the first)."""
        with self._lock:
            rows = [self.seen[k] for k in kinds if k in self.seen]
        count = sum(r.count for r in rows)
        return sum(r.cpu for r in rows) / count if count else None

    def drain(self) -> dict[str, Any] | None:
        """What was recorded since the last drain, as JSON (None when nothing was)."""
        with self._lock:
            if not self.kinds and not self.not_recorded and not self.reads:
                return None
            out = {"kinds": {k: v.as_json() for k, v in sorted(self.kinds.items())},
                   "slowest": [_slow_json(s) for s in sorted(self.slowest, reverse=True)[:SLOWEST]],
                   "not_recorded": self.not_recorded,
                   "reads": {"held": sum(self.reads.values()), "lacked": sum(not v for v in self.reads.values())}}
            self.kinds, self.slowest, self.not_recorded, self.reads = {}, [], [], {}
            return out


def _slow_json(row: tuple[float, float, str, list[str]]) -> dict[str, Any]:
    wall, cpu, kind, argv = row
    return {"wall": round(wall, 3), "cpu": round(cpu, 3), "kind": kind, "argv": argv}


def merge_ledgers(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Add drained ledgers up (per kind totals, the slowest overall) into the report's ``invocations``."""
    kinds: dict[str, KindTotals] = {}
    slowest: list[dict[str, Any]] = []
    missing: list[list[str]] = []
    for part in parts:
        missing.extend(part.get("not_recorded") or [])
        for kind, t in (part.get("kinds") or {}).items():
            k = kinds.setdefault(kind, KindTotals())
            k.count += int(t.get("count", 0))
            k.wall += float(t.get("wall", 0.0))
            k.cpu += float(t.get("cpu", 0.0))
            k.reused += int(t.get("reused", 0))
            k.warm += int(t.get("warm", 0))
            k.widen(t.get("first"), t.get("last"))
        slowest.extend(part.get("slowest") or [])
    total = KindTotals()
    for t in kinds.values():
        total.count, total.wall, total.cpu = total.count + t.count, total.wall + t.wall, total.cpu + t.cpu
        total.reused += t.reused
        total.warm += t.warm
        total.widen(t.first, t.last)
    costly = KindTotals()
    for name in EXPENSIVE & kinds.keys():
        costly.widen(kinds[name].first, kinds[name].last)
    window = costly.as_json()
    return {"kinds": {k: v.as_json() for k, v in sorted(kinds.items())}, "total": total.as_json(),
            "costly_span": window.get("span"),
            "slowest": sorted(slowest, key=lambda s: -float(s.get("wall", 0.0)))[:SLOWEST],
            "not_recorded": {"count": len(missing), "argv": sorted(missing)}}


# -- the plan line and the ETA ---------------------------------------------------------------------------------
def plan_line(counts: Mapping[str, int], *, mean_cpu: float | None, places: int,
              estimate: float | None = None) -> str:
    """One line before a batch of expensive calls: how many of each kind, and the wall-time estimate from the
    target CPU measured so far (a call's CPU ÷ the places running at a time: they share the cores).
    ``estimate``: the whole batch's, when the caller weighed every kind; else the costly calls' alone."""
    expensive = {k: n for k, n in sorted(counts.items()) if k in EXPENSIVE}
    cheap = sum(n for k, n in counts.items() if k not in EXPENSIVE)
    parts = ", ".join(f"{n} {k}" for k, n in expensive.items()) or "none"
    line = f"dws-contract: plan: {sum(expensive.values())} expensive calls ({parts}) and {cheap} cheap ones"
    if mean_cpu is not None and expensive:
        seconds = estimate if estimate is not None else sum(expensive.values()) * mean_cpu / max(1, places)
        line += f"; estimate {clock(seconds)} ({mean_cpu:.1f} s of target CPU a costly call, {places} at a time)"
    return line


def clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


# -- sampling -----------------------------------------------------------------------------------------------------
def features(tool: Mapping[str, Any]) -> set[tuple[str, str]]:
    """What a tool exercises, for the coverage sample: its constraint kinds, the fields and types of its
    parameters, its optional tool fields (aliases, positionals, dry_run ...) and its scalar metadata.

    Not its product: every product already gets its own costly call (`schema <product>`, SCHCLI-PROJECTION),
    and every tool of every product its cheap ones; a tool per product would double the costly calls of a
    default run (26 products on 81f67c8d) for no new kind of check."""
    out: set[tuple[str, str]] = set()
    for kind, value in (tool.get("constraints") or {}).items():
        if value:
            out.add(("constraint", kind))
    params = tool.get("parameters") or {}
    out.add(("parameters", str(min(len(params), 1))))
    for spec in params.values():
        if not isinstance(spec, dict):
            continue
        out.update(("parameter-field", k) for k in spec)
        out.add(("parameter-type", str(spec.get("type"))))
        if spec.get("format"):
            out.add(("parameter-format", str(spec["format"])))
    for key in ("aliases", "positionals", "dry_run", "group", "interface_ref", "is_alias"):
        if tool.get(key):
            out.add(("tool-field", key))
    for key in ("interface_mode", "effect", "risk", "idempotency", "availability"):
        value = tool.get(key)
        if isinstance(value, (str, bool, int)):
            out.add((key, str(value)))
    out.add(("examples", str(min(len(tool.get("examples") or []), 2))))
    return out


def coverage_sample(tools: Mapping[str, Mapping[str, Any]], forced: Iterable[str]) -> list[str]:
    """The forced tools, then greedily the tool covering the most features not yet covered (ties: the first
    by name) until every feature of the release is covered. Deterministic; 20 tools of 81f67c8d's 849."""
    keys = sorted(tools)
    feats = {k: features(tools[k]) for k in keys}
    picked = [k for k in sorted(set(forced)) if k in feats]
    covered: set[tuple[str, str]] = set().union(*(feats[k] for k in picked)) if picked else set()
    remaining = [k for k in keys if k not in set(picked)]
    while True:
        best, gain = None, 0
        for k in remaining:
            g = len(feats[k] - covered)
            if g > gain:
                best, gain = k, g
        if best is None:
            return sorted(picked)
        picked.append(best)
        covered |= feats[best]
        remaining.remove(best)


def evenly(keys: Sequence[str], n: int, forced: Iterable[str]) -> list[str]:
    """``--dws-sample N``: N evenly spaced keys plus the forced ones."""
    if n >= len(keys):
        return list(keys)
    step = len(keys) / n
    picked = {keys[int(i * step)] for i in range(n)}
    return sorted(picked | (set(forced) & set(keys)))




def shard(keys: Iterable[str], part: tuple[int, int] | None) -> list[str]:
    """The K-th of N disjoint parts of ``keys``: a key belongs to the shard its CRC-32 names, whatever list it is
    in, so every call about one tool (its help, its schema, its dry runs) is made in the same shard. The parts of
    all K together are exactly ``keys``."""
    if part is None:
        return sorted(keys)
    k, n = part
    return sorted(key for key in keys if zlib.crc32(key.encode()) % n == k - 1)
