"""Bounds on concurrent work: at most N target processes at a time, and make-once-per-key (single flight)."""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from pytest_dws.launch.invocation import Invocation


def single_flight(lock: threading.Lock, table: dict[Any, Any], key: Any, make: Callable[[], Any]) -> tuple[Any, bool]:
    """(``make()``'s value for ``key``, whether this call made it): made once per key of ``table``, concurrent
    callers wait for it; a failure is not kept (the next caller tries again) and reaches the waiters."""
    with lock:
        found: Future[Any] | None = table.get(key)
        mine = found is None
        pending: Future[Any] = Future() if found is None else found
        table[key] = pending
    if not mine:
        return pending.result(), False
    try:
        value = make()
    except BaseException as exc:
        with lock:
            table.pop(key, None)
        pending.set_exception(exc)
        raise
    pending.set_result(value)
    return value, True


class Places:
    """At most ``n`` target processes at a time. A run that finds no free place waits in a queue, READY to
    start; the thread whose run ends takes the next queued run and starts it at once (the place passes hand
    to hand, with no thread wake-up between two targets), and frees the place only when none is waiting. The
    queued run's own thread gets the result when it is done."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._free = n
        self._lock = threading.Lock()
        self._ready: collections.deque[tuple[Callable[[], Invocation], Future[Invocation]]] = collections.deque()

    def run(self, start: Callable[[], Invocation]) -> Invocation:
        """``start()`` (spawn, pump, reap one target) in a place of the pool; its result or its exception."""
        with self._lock:
            mine = self._free > 0
            if mine:
                self._free -= 1
            else:
                waiting: Future[Invocation] = Future()
                self._ready.append((start, waiting))
        if not mine:
            return waiting.result()
        try:
            return start()
        finally:
            self._pass_on()

    def _pass_on(self) -> None:
        """Run the queued starts in the place this thread holds, then free it."""
        while True:
            with self._lock:
                if not self._ready:
                    self._free += 1
                    return
                start, waiting = self._ready.popleft()
            try:
                waiting.set_result(start())
            except Exception as exc:  # the queued run's own thread raises it
                waiting.set_exception(exc)
            except BaseException as exc:  # interrupted: start nothing more, fail what waits, free the place
                waiting.set_exception(exc)
                with self._lock:
                    left, self._ready = list(self._ready), collections.deque()
                    self._free += 1
                for _, other in left:
                    other.set_exception(exc)
                raise
