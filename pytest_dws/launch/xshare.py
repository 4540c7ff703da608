"""The planned calls of one run shared by its pytest-xdist workers: each call is made once, by one worker.

Why: under ``-n N`` every worker collects the same gates, so each knows the whole plan (the call planners of
the selected gates), but the gates needing one `--help` land on different workers; without sharing, each
worker makes the call again, and ``-n 2`` was slower than one process. Here a worker goes through the plan
(from its own offset, so workers start apart), *claims* a call by creating its claim file exclusively, makes
it, and publishes the result; calls others claimed are read when their result appears. A worker that never
reaches the plan costs nothing (the others claim everything); a claim whose result never comes (its worker
died) is made locally after the invocation timeout. Results live in a directory named by xdist's test-run
id; the last worker to finish removes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: How often a worker looks for a result another worker is making.
POLL = 0.05


def active(worker: dict[str, Any] | None, fingerprint: str) -> Share | None:
    """The share of this xdist worker's run (None outside xdist). ``worker``: the worker's ``workerinput``
    (workerid, workercount, testrunuid); ``fingerprint``: the run's settings, so two contract runs of one
    test session (a self-test starting several) never read each other's results."""
    if not worker:
        return None
    uid, name, count = worker.get("testrunuid"), str(worker.get("workerid", "")), worker.get("workercount")
    if not uid or not isinstance(count, int):
        return None
    index = int(name[2:]) if name[2:].isdigit() else 0
    digest = hashlib.sha1(f"{uid}\0{fingerprint}".encode()).hexdigest()[:16]
    try:
        return Share(Path(tempfile.gettempdir()) / f"pytest-dws-{digest}", index, count)
    except OSError:
        return None


class Share:
    """One run's shared results directory, seen from worker ``index`` of ``count``."""

    def __init__(self, root: Path, index: int, count: int) -> None:
        self.root, self.index, self.count = root, index, count
        root.mkdir(mode=0o700, exist_ok=True)
        if root.stat().st_uid != os.getuid():  # results are unpickled: only ever from our own directory
            raise PermissionError(f"{root} belongs to another user")

    @staticmethod
    def key(call: Any) -> str:
        return hashlib.sha1(repr(call).encode()).hexdigest()

    def run(self, calls: Sequence[Any], make: Callable[[Any], Any], *, timeout: float,
            progress: Callable[[list[Any]], None] | None = None, every: int = 16) -> dict[Any, Any]:
        """Every call's result: made here when this worker claims it, else read from the worker that did.
        ``progress(pending)``: told, every ``every`` calls this worker makes and at the end, which calls of the
        batch no worker has published yet (the whole run's progress, not this worker's: issue 37 (6))."""
        out: dict[Any, Any] = {}
        start = (len(calls) * self.index) // max(1, self.count)
        order = list(calls[start:]) + list(calls[:start])
        theirs = []
        made = 0
        for call in order:
            if self._claim(call):
                out[call] = make(call)
                self._publish(call, out[call])
                made += 1
                if progress is not None and made % every == 0:
                    progress(self.pending(calls))
            else:
                theirs.append(call)
        for call in theirs:
            found = self._wait(call, timeout)
            out[call] = found if found is not None else make(call)
        if progress is not None:
            progress([])
        return out

    def pending(self, calls: Sequence[Any]) -> list[Any]:
        """The calls of ``calls`` whose result no worker has published yet."""
        return [c for c in calls if not (self.root / f"{self.key(c)}.result").exists()]

    def _claim(self, call: Any) -> bool:
        try:
            os.close(os.open(self.root / f"{self.key(call)}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True

    def _publish(self, call: Any, result: Any) -> None:
        final = self.root / f"{self.key(call)}.result"
        part = final.with_suffix(f".part{os.getpid()}")
        part.write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(part, final)  # atomic: a reader sees all of it or nothing

    def _wait(self, call: Any, timeout: float) -> Any:
        path = self.root / f"{self.key(call)}.result"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path.exists():
                with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError):
                    return pickle.loads(path.read_bytes())
            time.sleep(POLL)
        return None

    def finish(self) -> None:
        """This worker is done; the last one removes the directory."""
        with contextlib.suppress(OSError):
            (self.root / f"done-{self.index}").touch()
            if len(list(self.root.glob("done-*"))) >= self.count:
                shutil.rmtree(self.root, ignore_errors=True)
