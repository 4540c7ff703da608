"""Coverage-targeted replay (issue 44): a live run that answers from a recording every invocation whose recorded
twin never consulted a switch this run sets otherwise (``--dws-replay-unconsulted DIR``, an internal option of the
suite's own mutation tests).

Why: the reference implementation is a *mutant schema* (every deviation and conforming variant is compiled in behind
a switch: ``DWS_REF_MUTANT``, ``DWS_REF_VARIANT``), and a contract run judging one mutant repeats a few hundred
invocations of which most never reach that mutant's switch point. Mutation-testing tools select by per-test coverage
the same way (Stryker's "perTest" coverage, PIT): the same program, the same inputs and a switch it never reads give
the same output, so that output is taken from a run of the conforming build instead of being computed again.

The protocol (docs/architecture.md, "Coverage-targeted mutant runs"): while recording, every live invocation gets
:data:`CONSULTED_ENV`, a file in its own HOME; a target that reports coverage appends a bare ``VARIABLE`` line (it
reports that variable's switch points) and a ``VARIABLE=name`` line for every switch it consulted, on or off. A
switch variable's value is a comma-separated list of names. The recording keeps the lines per invocation
(``Invocation.consulted``).

A run with ``--dws-replay-unconsulted DIR`` looks each invocation up under its key with the switch variables set as
the recorded run set them; it is answered from the recording only when all of these hold, and runs live otherwise:
the recording is of the same build (its target digest, and the content of the launcher files' folders), or of the
same program in a folder where some files differ and the twin declared the files of that folder it read (a bare
:data:`READ` line, and a ``DWS_READ=<path relative to the folder>`` line for each file; a path ending in ``/`` a
folder it listed) and read none of them (file-level coverage: a copy of the tree whose generated catalog differs
answers every invocation that never read the catalog); the recorded twin exists (the i-th ask of a key meets the
i-th recorded answer, whether it is taken or not); it declared every switch variable this run sets otherwise and
consulted none of the switches this run turns on or off; and its fake backend was a fresh world loaded for it alone
(or none): a backend that served earlier invocations has a state the key does not hold.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_dws.core.identity import file_digests, path_digest, target_digest
from pytest_dws.launch.recording import Recording

#: The environment variable naming the invocation's coverage file (set only while recording).
CONSULTED_ENV = "DWS_CONSULTED_FILE"
#: Its name inside the invocation's HOME (read and removed after the run: the HOME stays reusable).
CONSULTED_NAME = ".dws-consulted"
#: The recording fact holding :func:`launcher_trees` of the recorded target.
TREES_FACT = "launcher_trees"
#: The recording fact holding :func:`launcher_files` of the recorded target.
FILES_FACT = "launcher_files"
#: The coverage variable of the files a target read in its launcher folder (declared by a bare line, written last).
READ = "DWS_READ"


def read_consulted(path: Path) -> list[str] | None:
    """The lines a target wrote to its coverage file (sorted, once each), or None when it wrote none."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    path.unlink(missing_ok=True)
    return sorted({line.strip() for line in text.splitlines() if line.strip()})


def _launcher_folders(prefix: Sequence[str]) -> list[Path]:
    """The folder of every file the launcher names besides the interpreter (a script's package next to it: the
    reference's ``refdws``)."""
    import sys

    python = Path(sys.executable).resolve()
    return [Path(w).resolve().parent for w in prefix
            if not w.startswith("-") and Path(w).is_file() and Path(w).resolve() != python]


def launcher_trees(prefix: Sequence[str]) -> list[str]:
    """The content digest of each launcher folder (:func:`_launcher_folders`), so that a changed source is another
    build."""
    return [path_digest(folder) for folder in _launcher_folders(prefix)]


def launcher_files(prefix: Sequence[str]) -> list[dict[str, str]]:
    """Each launcher folder's files by content (:func:`pytest_dws.core.identity.file_digests`): which of them
    another build changed."""
    return [file_digests(folder) for folder in _launcher_folders(prefix)]


def _differing(recorded: Any, now: list[dict[str, str]]) -> frozenset[str] | None:
    """The relative paths whose content differs between the recorded folder's files and these (added or removed
    ones too); None when the recording does not hold them or the launcher names other folders."""
    if not isinstance(recorded, list) or len(recorded) != len(now) or len(now) != 1:
        return None
    before = recorded[0] if isinstance(recorded[0], dict) else {}
    return frozenset(p for p in set(before) | set(now[0]) if before.get(p) != now[0].get(p))


def _read_any(consulted: list[str], differ: frozenset[str]) -> bool:
    """Did a twin that reported its reads (``DWS_READ=path``; ``dir/`` for a folder it listed) read a differing
    path?"""
    reads = [line.partition("=")[2] for line in consulted if line.startswith(READ + "=")]
    return any(p == r or (r.endswith("/") and p.startswith(r)) for r in reads for p in differ)


def _names(value: str | None) -> set[str]:
    return {n.strip() for n in (value or "").split(",") if n.strip()}


class Targeting:
    """Which invocations of this run a recording answers (see the module docstring); counts both kinds."""

    def __init__(self, recording: Recording, env: Mapping[str, str], prefix: Sequence[str]) -> None:
        self.recording = recording
        options = recording.manifest.get("options")
        recorded = (options.get("env") if isinstance(options, dict) else None) or {}
        self.recorded_env = {str(k): str(v) for k, v in dict(recorded).items()}
        self.variables = frozenset(line for docs in recording.outcomes.values() for doc in docs
                                   for line in (doc["outcome"].get("consulted") or [])
                                   if "=" not in line and line != READ)
        self.changed = frozenset(f"{var}={name}" for var in self.variables
                                 for name in _names(env.get(var)) ^ _names(self.recorded_env.get(var)))
        self.changed_variables = frozenset(c.partition("=")[0] for c in self.changed)
        self.same_program = recording.manifest.get("digest") == target_digest(prefix)
        self.same_build = self.same_program and recording.facts.get(TREES_FACT) == launcher_trees(prefix)
        #: the launcher folder's files that differ from the recorded build's (None: unknown, nothing answered)
        self.differ = (frozenset() if self.same_build else
                       _differing(recording.facts.get(FILES_FACT), launcher_files(prefix)) if self.same_program
                       else None)
        self.replayed = 0
        self.live = 0
        self._lock = threading.Lock()
        self.publish: Callable[[], None] | None = None  # called after each count (the report's section)

    def summary(self) -> dict[str, Any]:
        """The report's ``targeted_replay`` section: what this run took from the recording and what ran live."""
        return {"replayed": self.replayed, "live": self.live, "same_build": self.same_build,
                "files_differ": None if self.differ is None else len(self.differ), "switches": sorted(self.changed)}

    def lookup_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """The environment of the recorded twin's key: this one with the switch variables as recorded."""
        out = {k: v for k, v in env.items() if k not in self.variables}
        out.update({k: v for k, v in self.recorded_env.items() if k in self.variables})
        return out

    def answers(self, doc: dict[str, Any] | None, *, fresh: bool) -> bool:
        """Does the recorded twin ``doc`` answer this invocation (and count which way it goes)?"""
        consulted = doc["outcome"].get("consulted") if doc is not None else None
        ok = (self.differ is not None and fresh and isinstance(consulted, list)
              and self.changed_variables <= set(consulted) and not self.changed & set(consulted)
              and (not self.differ or (READ in consulted and not _read_any(consulted, self.differ))))
        with self._lock:
            if ok:
                self.replayed += 1
            else:
                self.live += 1
            if self.publish is not None:
                self.publish()
        return ok
