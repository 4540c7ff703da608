"""A watchdog process that kills the running targets' process groups when the suite dies, even by SIGKILL.

Why: each target runs in its own session (so a terminal's Ctrl-C reaches the suite, which then kills them in
order). If the suite itself is killed outright (SIGKILL, the OOM killer, a CI runner tearing down), nothing
in it runs any more, and the targets and their children would outlive it. Linux's parent-death signal only
reaches a direct child, not a grandchild; so a tiny separate process, in a session of its own, holds the list
of live groups: the suite writes ``+PGID`` / ``-PGID`` lines on a pipe, and when the pipe reaches end of file
(the suite is gone, whatever the cause) the watchdog SIGKILLs every group still listed and exits. Started on
the first target; closed with the runner. POSIX only; elsewhere it is a no-op.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from pathlib import Path

#: The watchdog's program: a script of its own, run with -I -S (no site, no suite import, a few ms to start).
PROGRAM = Path(__file__).with_name("watchdog_process.py")


class Watchdog:
    """The suite's side of the pipe (thread-safe; a dead or missing watchdog is silently ignored)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._failed = os.name != "posix"

    def _pipe(self) -> subprocess.Popen[bytes] | None:
        if self._proc is None and not self._failed:
            try:
                self._proc = subprocess.Popen([sys.executable, "-I", "-S", str(PROGRAM)], stdin=subprocess.PIPE,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                              start_new_session=True, close_fds=True)
            except OSError:
                self._failed = True
        return self._proc

    def _say(self, line: str) -> None:
        with self._lock:
            proc = self._pipe()
            if proc is None or proc.stdin is None:
                return
            try:
                proc.stdin.write(line.encode())
                proc.stdin.flush()
            except OSError:
                self._failed, self._proc = True, None

    def started(self, pgid: int) -> None:
        self._say(f"+{pgid}\n")

    def ended(self, pgid: int) -> None:
        self._say(f"-{pgid}\n")

    def guard(self, tag: str, tree: Path | None) -> None:
        """If the suite dies, also kill what carries the session's invocation tag and remove its temp tree."""
        self._say(f"T{tag}\n")
        if tree is not None:
            self._say(f"D{tree}\n")

    def close(self) -> None:
        """End of the runner: nothing is live any more; the watchdog reads a clean close, then EOF, and exits."""
        if self._proc is not None:
            self._say("!\n")
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
