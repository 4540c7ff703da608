"""Private temporary HOMEs for target runs, recycled when the target left them untouched."""

from __future__ import annotations

import itertools
import os
import shutil
import stat
import tempfile
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def egress_tag(home: Path) -> str:
    """The egress tag of an invocation: its private HOME's name (unique per invocation), as a URL user name."""
    return "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in home.name)


#: An invocation's input files: HOME-relative name -> content (text, or bytes for a binary file such as a seeded
#: keychain entry).
InputFiles = Mapping[str, "str | bytes"]


def write_files(home: Path, files: InputFiles) -> None:
    """Write an invocation's input files into its HOME (its working directory); a name may be a path below it (a
    seeded ``config/audit/...`` or ``keychain/dws-cli/...``: a signed-in user's state, issue 38)."""
    for name, content in files.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (home / name).write_bytes(content)
        else:
            (home / name).write_text(content, encoding="utf-8")


class HomePool:
    """Private HOME directories: every invocation gets a clean one, and no two running invocations share one.

    Creating and deleting a directory tree per invocation costs milliseconds on a journalling file system
    (more than the rest of the suite's per-invocation work). So a home the target left EXACTLY as it was made
    (same entries ``config/`` and ``keychain/``, both empty, same modes, nothing else) is renamed to a fresh
    name and handed to a later invocation: a fresh-made home and a recycled one cannot be told apart by the
    target (the path is new every time, the old path is gone when the invocation returns). A home the target
    wrote to is deleted, as before. Everything lives in one private directory removed by :meth:`close`.
    """

    def __init__(self, tmp: Path) -> None:
        self._tmp = tmp
        self._root: Path | None = None
        self._free: list[Path] = []
        self._lock = threading.Lock()
        self._names = itertools.count()
        self._modes: tuple[int, int] | None = None  # (home mode, subdir mode) of a fresh home
        self._finalizer: Any = None

    def _dir(self) -> Path:
        with self._lock:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix="homes-", dir=self._tmp))
                self._finalizer = weakref.finalize(self, shutil.rmtree, self._root, True)
            return self._root

    def _fresh_name(self) -> Path:
        return self._dir() / f"inv-{next(self._names)}"

    def take(self) -> Path:
        """A clean, empty home for one invocation (config/ and keychain/ made, as fake_mcp.isolation_env does)."""
        while True:
            with self._lock:
                home = self._free.pop() if self._free else None
            if home is None:
                break
            if self._pristine(home):
                return home
            shutil.rmtree(home, ignore_errors=True)
        home = self._fresh_name()
        home.mkdir(mode=0o700)
        for sub in _HOME_SUBDIRS:
            (home / sub).mkdir()
        if self._modes is None:
            self._modes = (home.stat().st_mode, (home / _HOME_SUBDIRS[0]).stat().st_mode)
        return home

    def give(self, home: Path) -> None:
        """Return a home after its invocation: recycled under a new name when untouched, deleted otherwise.
        Either way ``home`` no longer exists when this returns."""
        if self._pristine(home):
            fresh = self._fresh_name()
            try:
                os.rename(home, fresh)
            except OSError:
                shutil.rmtree(home, ignore_errors=True)
                return
            with self._lock:
                self._free.append(fresh)
            return
        shutil.rmtree(home, ignore_errors=True)

    def _pristine(self, home: Path) -> bool:
        """The home holds exactly the empty ``config``/``keychain`` dirs it was made with, modes unchanged."""
        if self._modes is None:
            return False
        home_mode, sub_mode = self._modes
        try:
            if os.lstat(home).st_mode != home_mode:
                return False
            with os.scandir(home) as it:
                entries = {e.name: e for e in it}
            if sorted(entries) != list(_HOME_SUBDIRS):
                return False
            for name, entry in entries.items():
                st = entry.stat(follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode) or st.st_mode != sub_mode:
                    return False
                with os.scandir(home / name) as it:
                    if next(it, None) is not None:
                        return False
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Delete every home (and the pool directory)."""
        with self._lock:
            self._free.clear()
            finalizer, self._root = self._finalizer, None
        if finalizer is not None:
            finalizer()


_HOME_SUBDIRS = ("config", "keychain", "tmp")
