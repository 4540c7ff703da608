"""Pooled fake MCP servers for target runs, and the worlds they are loaded with.

Why apart from the runner: a batch switches its pooled servers between the same few scenarios again and
again; validating a world (jsonschema) costs tens of ms, so a validated Scenario is kept per session, and a
world's content key lets the runner share the answer of an identical costly call (docs/wire.md §7).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_dws.core.protocols import GateContext
from pytest_dws.launch.places import single_flight


class ServerPool:
    """The fake servers of one runner (started on demand, reused LIFO) and the session's validated scenarios."""

    def __init__(self, ctx: GateContext | None = None) -> None:
        self._lock = threading.Lock()
        self._slots: queue.LifoQueue[Slot] = queue.LifoQueue()
        self._all_slots: list[Slot] = []
        self._closed = False
        memo = getattr(ctx, "memo", None)  # validated scenarios are shared by the runners of a session
        self._scenarios: dict[Any, Any] = memo(("runner", "scenarios"), dict) if callable(memo) else {}
        self._world_keys: dict[int, tuple[Any, str]] = memo(("runner", "world-keys"), dict) if callable(memo) else {}

    def world_key(self, scenario: Any) -> Any:
        """What the fresh world of a scenario holds (its world and overrides; the name is only a label), for
        sharing answers: a file by its path and stat, a dict or Scenario by its canonical JSON (computed once
        per Scenario object: the key keeps the object alive, so its id is not reused). None: not comparable."""
        if isinstance(scenario, (str, Path)):
            try:
                st = os.stat(scenario)
            except OSError:
                return None
            return (scenario_key(scenario), st.st_size, st.st_mtime_ns)
        if isinstance(scenario, dict):
            return _content_key(scenario.get("world", {}), scenario.get("overrides", []))
        if not hasattr(scenario, "world") or not hasattr(scenario, "overrides"):
            return None
        with self._lock:
            found = self._world_keys.get(id(scenario))
            if found is None or found[0] is not scenario:
                found = self._world_keys[id(scenario)] = (scenario, _content_key(scenario.world,
                                                                                 list(scenario.overrides)))
        return found[1]

    def validated(self, scenario: Any, key: str) -> Any:
        """The validated Scenario of ``scenario``, built once per session: validating a world (jsonschema) costs
        tens of ms, and a batch switches its pooled servers between the same few scenarios again and again.
        Exact: ``load`` of a Scenario object builds the same fresh world as ``load`` of its dict or file (the
        key is the dict's canonical JSON; a file is re-read when its size or mtime changes). Threads that need
        a scenario another thread is validating wait for that result instead of validating it again."""
        from fake_mcp import Scenario

        if isinstance(scenario, Scenario):
            return scenario
        ident: Any = key
        if isinstance(scenario, (str, Path)):
            try:
                st = os.stat(scenario)
                ident = (key, st.st_size, st.st_mtime_ns)
            except OSError:
                return scenario  # let load() report the unreadable file
        try:
            return single_flight(self._lock, self._scenarios, ident, lambda: Scenario.coerce(scenario))[0]
        except Exception:  # it does not validate: fail here with an exception of this thread's own, as load() would
            return Scenario.coerce(scenario)

    def acquire(self) -> Slot:
        try:
            return self._slots.get_nowait()
        except queue.Empty:
            pass
        from fake_mcp import FakeMCPServer

        with self._lock:
            if self._closed:
                raise RuntimeError("runner closed")
            slot = Slot(FakeMCPServer())
            self._all_slots.append(slot)
        slot.server.start()
        return slot

    @contextlib.contextmanager
    def backends(self, scenario: Any, count: int) -> Iterator[list[Any]]:
        """``count`` pooled fake servers, each with a fresh world of ``scenario``, lent to the caller: for runs
        that must know their server before they start (files that embed its URL), then run side by side with
        ``run_jobs([Job(args, None, {"backend": server, ...}), ...])``. Every run gets its own server, so its
        transcript holds its own requests only."""
        slots = [self.acquire() for _ in range(count)]
        try:
            for slot in slots:
                key = scenario_key(scenario)
                slot.server.load(self.validated(scenario, key))
                slot.key = key
            yield [slot.server for slot in slots]
        finally:
            for slot in slots:
                slot.server.transcript.clear()
                self.release(slot)

    def prepare(self, jobs: Sequence[Any]) -> None:
        """Validate the batch's scenarios (first use first) while its first targets already run."""
        seen: set[str] = set()
        for job in jobs:
            if job.scenario is None:
                continue
            key = scenario_key(job.scenario)
            if key in seen:
                continue
            seen.add(key)
            with contextlib.suppress(Exception):  # a bad scenario fails the job that uses it, not this helper
                self.validated(job.scenario, key)

    def fresh(self, server: Any) -> bool:
        """Is ``server`` one of the pool's, with a world loaded for the run about to start (nothing served yet)? A
        lent or per-job server serves one run (:meth:`backends`, ``Runner._run_in_world``), so its state is that
        world's alone (launch.targeting answers such a run from a recording; a caller's own server: never)."""
        with self._lock:
            pooled = any(slot.server is server for slot in self._all_slots)
        return pooled and len(server.transcript) == 0

    def release(self, slot: Slot) -> None:
        """Give a slot taken with :meth:`acquire` back to the pool."""
        self._slots.put(slot)

    def close(self) -> None:
        """Stop every pooled server (side by side: each stop waits for its serve loop's poll)."""
        with self._lock:
            self._closed = True
            slots = list(self._all_slots)
            self._all_slots.clear()
        stoppers = [threading.Thread(target=_stop_quietly, args=(slot.server,), name="dws-stop")
                    for slot in slots]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()


@dataclass
class Slot:
    server: Any
    key: Any = None


def _stop_quietly(server: Any) -> None:
    with contextlib.suppress(Exception):
        server.stop()


def _content_key(world: Any, overrides: Any) -> str:
    """What a fresh world holds, as canonical JSON (answer sharing here, recording keys in .recording)."""
    return json.dumps([world, overrides], sort_keys=True, ensure_ascii=False, default=str)


def scenario_key(scenario: Any) -> str:
    """A stable identity for a scenario (a path, or canonical JSON of a dict)."""
    if isinstance(scenario, (str, Path)):
        return f"path:{scenario}"
    if isinstance(scenario, dict):
        return json.dumps(scenario, sort_keys=True, ensure_ascii=False, default=str)
    return f"object:{id(scenario)}"  # a Scenario object: the caller keeps it alive (memoised) while it runs
