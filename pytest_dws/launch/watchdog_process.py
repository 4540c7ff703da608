"""The watchdog's own program (:mod:`pytest_dws.launch.watchdog`), run as a script:
``python -I -S watchdog_process.py``.

It imports nothing of the suite (no site, no package import: a few ms to start) and keeps the set of live
target process groups from ``+PGID`` / ``-PGID`` lines on stdin; at end of file (the suite is gone, however it
died) it SIGKILLs every group still listed.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    live: set[int] = set()
    for line in sys.stdin:
        sign, pgid = line[:1], line[1:].strip()
        if pgid.isdigit():
            (live.add if sign == "+" else live.discard)(int(pgid))
    for group in live:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass


if __name__ == "__main__":
    main()
