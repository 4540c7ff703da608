"""The watchdog's own program (:mod:`pytest_dws.launch.contain.watchdog`), run as a script:
``python -I -S watchdog_process.py``.

It imports nothing of the suite (no site, no package import: a few ms to start) and reads lines on stdin:
``+PGID`` / ``-PGID`` (a target process group started / ended), ``TTAG`` (the session's invocation tag prefix),
``DPATH`` (the session's temporary tree), ``!`` (the session closed cleanly). At end of file without ``!`` (the
suite is gone, however it died) it SIGKILLs every group still listed and every process carrying the session's
tag (also a daemon that left its group), then removes the session's temporary tree.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys

TAG_VAR = b"DWS_CONTRACT_INVOCATION="  # pytest_dws.launch.process.TAG_VAR (this script imports nothing)


def kill_tagged(prefix: str) -> None:
    needle = TAG_VAR + prefix.encode()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                found = any(v.startswith(needle) for v in fh.read().split(b"\0"))
            if found:
                os.kill(int(entry), signal.SIGKILL)
        except OSError:
            continue


def main() -> None:
    live: set[int] = set()
    tags: list[str] = []
    trees: list[str] = []
    clean = False
    for line in sys.stdin:
        sign, rest = line[:1], line[1:].strip()
        if sign in "+-" and rest.isdigit():
            (live.add if sign == "+" else live.discard)(int(rest))
        elif sign == "T" and rest:
            tags.append(rest)
        elif sign == "D" and rest:
            trees.append(rest)
        elif sign == "!":
            clean = True
    for group in live:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
    if clean:
        return
    for tag in tags:
        kill_tagged(tag)
    for tree in trees:
        shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()
