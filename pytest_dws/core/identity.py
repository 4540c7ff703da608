"""Which build a run judged: a content digest of the files the launcher names, beside their paths.

Why: a path says where a binary was, not what it was (two builds at ``./dws`` are two targets); reports carry the
digest, ``merge`` refuses shards of two builds, and the dataset seed defaults to it, so two runs on the same
build draw the same values (a deterministic report) while a new build draws new ones.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path


@functools.cache
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def resolve_prefix(argv: Sequence[str]) -> list[str]:
    """The argv prefix that launches an implementation; a bare program name is looked up on the suite's PATH
    now, because the scrubbed PATH of the invocation would not find it."""
    prefix = [str(a) for a in argv]
    if prefix and os.sep not in prefix[0]:
        prefix[0] = shutil.which(prefix[0]) or prefix[0]
    return prefix


def target_digest(argv: Sequence[str]) -> str:
    """sha256 over the launcher's words, each file among them by its content (``python script`` hashes both)."""
    h = hashlib.sha256()
    for word in argv:
        path = Path(word)
        if path.is_file():
            st = path.stat()
            h.update(b"file:" + _file_digest(str(path.resolve()), st.st_size, st.st_mtime_ns).encode())
        else:
            h.update(b"word:" + word.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()


def digest_seed(argv: Sequence[str]) -> int:
    """The default dataset seed of a build: 32 bits of its digest."""
    return int(target_digest(argv)[:8], 16)


#: Folders a tree's content digest leaves out: version control and caches (what a run never reads).
_NOT_CONTENT = frozenset({".git", "__pycache__", ".ruff_cache", ".pytest_cache", ".mypy_cache", ".hypothesis"})


def path_digest(path: Path) -> str:
    """sha256 of a file's content, or of a tree's files (relative path and content digest, sorted; VCS and caches
    left out): what a recording keeps of the source tree, expectations and baseline a run was given, so that a
    replay can tell the same inputs from other ones at the same path (issue 37 (1))."""
    if path.is_file():
        st = path.stat()
        return _file_digest(str(path.resolve()), st.st_size, st.st_mtime_ns)
    h = hashlib.sha256()
    for rel, digest in file_digests(path).items():
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        h.update(digest.encode() + b"\n")
    return h.hexdigest()


def file_digests(folder: Path) -> dict[str, str]:
    """Each file of a tree (relative POSIX path, sorted) -> its content digest, VCS and caches left out: the
    files :func:`path_digest` sums, one by one (a coverage-targeted replay tells which of them differ)."""
    out: dict[str, str] = {}
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = file.relative_to(folder)
        if _NOT_CONTENT & set(rel.parts):
            continue
        st = file.stat()
        out[rel.as_posix()] = _file_digest(str(file.resolve()), st.st_size, st.st_mtime_ns)
    return out
