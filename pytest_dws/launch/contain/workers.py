"""The session's worker processes (pytest-xdist) stop with their controller, however it ends.

Why: each worker starts targets of its own. When only the controller is signalled (a CI cancel sends SIGTERM to one
pid; a user's ``kill``), the workers would keep starting targets until their channel closes, 8-10 s later. The
controller forwards the signal to its children; a worker also asks the kernel for SIGTERM when its parent dies
(``PR_SET_PDEATHSIG``), which covers a controller killed outright. A worker's own SIGTERM handler (the session's)
then kills its running targets and starts no more.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path

_PR_SET_PDEATHSIG = 1
#: The watchdog (launch.contain.watchdog) is a child too, but it must outlive the controller to clean up after it;
#: the spawner (launch.contain.spawner) ends by itself when its runner closes it or dies.
_SPARED = (b"watchdog_process.py", b"spawner_process.py")


def die_with_parent(signum: int) -> None:
    """Ask the kernel to send ``signum`` to this process when its parent exits (Linux; a no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)


def children(pid: int | None = None) -> list[int]:
    """Direct children of ``pid`` (default: this process), from ``/proc``."""
    parent = os.getpid() if pid is None else pid
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text(encoding="ascii", errors="replace")
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                out.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return out


def stop_children(signum: int) -> None:
    """Send ``signum`` to every child of this process but the watchdog (the xdist workers)."""
    for pid in children():
        with contextlib.suppress(OSError):
            if any(name in Path(f"/proc/{pid}/cmdline").read_bytes() for name in _SPARED):
                continue
            os.kill(pid, signum)
