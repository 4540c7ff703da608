"""Record every invocation of a contract run (``--dws-record DIR``), replay it offline (``--dws-replay DIR``).

Why: a release CI runs the real binary once; people later re-judge exactly that behaviour with a newer suite,
bisect a verdict change, audit why a release was allowed (D1 §8.4), or judge where the binary cannot run. A
recording is the implementation under test: a replayed invocation returns its recorded outcome, and its backend
requests reach the fake server's transcript as if the target had sent them, so every gate judges it as it
judged the live run. An invocation that was not recorded is never a pass or a failure: reading its outcome
raises :class:`~pytest_dws.core.errors.NotRecorded` (a NotApplicable: "not recorded"), so what needed it is not
applicable, and the ledger counts and lists it.

The key of an invocation is what the suite asked for, with everything specific to one run replaced by stable
placeholders (:class:`Keyer`): the argv after the launcher, the environment the suite adds, stdin, the files it
hands over (by content), the fake backend's world (by content), and another build than the target's (a tree
copy's CLI) by the content of its folder, or by what it was built from (:data:`BUILT_FROM`). Identical keys are
answered in the order they were recorded. The layout: ``DIR/manifest.json`` (format, target, seed) and
``DIR/parts/<process>.jsonl.gz`` (one per pytest-xdist worker): content-addressed output blobs, then one line per
invocation.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError, NotRecorded
from pytest_dws.core.identity import path_digest
from pytest_dws.inputs.recorded import MANIFEST, read_manifest
from pytest_dws.launch.homes import InputFiles
from pytest_dws.launch.invocation import Invocation
from pytest_dws.launch.servers import _content_key

FORMAT = 1
_PORT = re.compile(r"(127\.0\.0\.1|localhost|\[::1\]):\d+")
#: A folder made by ``tempfile.mkdtemp(prefix=...)`` under the run's temporary root: its random tail.
_MKDTEMP = re.compile(r"(<tmp>/[A-Za-z][A-Za-z0-9_.]*-)[a-z0-9_]{8}(?=/|$|[\s\"'])")
#: Beside a binary built from a tree copy: what it was built from (the copy's content digest and the build command
#: template), its identity in a recording's key (:meth:`Keyer.build`).
BUILT_FROM = ".dws-built-from"
#: The outcome fields of an :class:`Invocation` that a recording stores and replays.
_FIELDS = ("exit_code", "timed_out", "crashed", "signal", "overflow", "duration", "cpu", "egress", "egress_kinds",
           "collected")


class Keyer:
    """Turns one invocation request into a key that is the same in every run of the same suite on the same
    target: the launcher, the run's temporary root and loopback ports become placeholders."""

    def __init__(self, prefix: Sequence[str], tmp_root: Path) -> None:
        self._prefix = [str(a) for a in prefix]
        self._roots = sorted({str(tmp_root), os.path.realpath(tmp_root)}, key=len, reverse=True)
        self._pythons = sorted({sys.executable, os.path.realpath(sys.executable)}, key=len, reverse=True)
        self._worlds: dict[int, tuple[Any, str]] = {}
        self._lock = threading.Lock()

    @property
    def prefix(self) -> list[str]:
        """The launcher's words (what ``<dws>`` stands for in a key)."""
        return list(self._prefix)

    def text(self, value: str) -> str:
        for root in self._roots:
            value = value.replace(root, "<tmp>")
        for python in self._pythons:
            value = value.replace(python, "<python>")
        return _MKDTEMP.sub(r"\1*", _PORT.sub(r"\1:<port>", value))

    def content(self, data: str | bytes) -> str:
        """An input file by content: text with the run's placeholders; bytes (a binary file) as they are."""
        if isinstance(data, bytes):
            return hashlib.sha256(data).hexdigest()[:24]
        return _digest(self.text(data))

    def argv(self, argv: Sequence[str]) -> list[str]:
        args = [str(a) for a in argv]
        if args[:len(self._prefix)] == self._prefix:
            args = ["<dws>", *args[len(self._prefix):]]
        return [self.text(a) for a in args]

    def build(self, argv: Sequence[str]) -> str:
        """Another build than the target's (a tampered tree copy's CLI, SCHCLI-CORRUPT): by the content of the
        folder each launcher file of the session's temporary tree is in, so that a replay answers the same build,
        not the same temporary path (issue 37 (3)); a folder holding a :data:`BUILT_FROM` file (a binary built from
        a tree copy) by that file's text, its sources and build command, because a compiled binary's bytes may
        carry its build's paths and a replay, which need not build, has no binary. Empty for the target itself
        (its recording is its build)."""
        args = [str(a) for a in argv]
        if args[:len(self._prefix)] == self._prefix:
            return ""
        parts = []
        for word in args:
            path = Path(word)
            if word in self._pythons or word.startswith("-"):
                continue
            if not path.is_absolute() or not path.is_file():
                break
            if any(word.startswith(root + os.sep) for root in self._roots):
                marker = path.parent / BUILT_FROM
                parts.append(marker.read_text(encoding="utf-8") if marker.is_file() else path_digest(path.parent))
        return _digest("\0".join(parts)) if parts else ""

    def world(self, backend: Any) -> str:
        """The fresh world the backend was loaded with, by content (its name is only a label)."""
        scenario = getattr(backend, "scenario", None) if backend is not None else None
        if scenario is None:
            return "dead endpoints" if backend is None else "empty"
        with self._lock:
            found = self._worlds.get(id(scenario))
            if found is None or found[0] is not scenario:  # the pool's own identity of a fresh world
                digest = _digest(_content_key(scenario.world, list(scenario.overrides)))
                found = self._worlds[id(scenario)] = (scenario, digest)
        return found[1]

    def key(self, argv: Sequence[str], backend: Any, env: Mapping[str, str], stdin: bytes,
            files: InputFiles | None) -> tuple[str, dict[str, Any]]:
        """(key, the material it hashes): the material is stored beside the outcome for `recording show`."""
        material = {
            "argv": self.argv(argv),
            "env": {k: self.text(str(v)) for k, v in sorted(env.items())},
            "stdin": _digest(self.text(stdin.decode("latin-1"))) if stdin else "",
            "files": {name: self.content(data) for name, data in sorted((files or {}).items())},
            "world": self.world(backend),
        }
        build = self.build(argv)
        if build:  # only then: the keys of the target's own invocations stay what they were
            material["build"] = build
        return _digest(json.dumps(material, sort_keys=True, ensure_ascii=False)), material


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


class Recorder:
    """Appends this process's invocations to its part file (thread-safe; blobs written once each)."""

    def __init__(self, directory: Path, manifest: dict[str, Any], *, append: bool = False,
                 worker: str | None = None) -> None:
        """``manifest``: this run's; a new recording writes it (every process the same, atomically), an appended
        one adds this run to the existing manifest's ``runs`` (the controller, or the one process) and writes
        part files of new names beside the old ones. ``worker``: the pytest-xdist worker id of this session
        (from its config: a contract run started by a test that itself runs under xdist inherits the
        environment variable, and is no worker)."""
        parts = directory / "parts"
        run = {k: manifest.get(k) for k in ("suite", "created", "sample", "shard", "options")}
        try:
            parts.mkdir(parents=True, exist_ok=True)
            if not append:
                write_manifest(directory, {**manifest, "runs": [run]})
            elif worker is None:
                old = read_manifest(directory)
                write_manifest(directory, {**old, "runs": [*runs_of(old), {**run, "mode": "append"}]})
            name = (worker or "main") + (f"-{os.urandom(4).hex()}" if append else "")
            self._file = gzip.open(parts / f"{name}.jsonl.gz", "wt", encoding="utf-8", compresslevel=6)
        except OSError as exc:
            raise DwsInputError(str(directory), "", f"cannot write the recording: {exc.strerror or exc}") from None
        self._lock = threading.Lock()
        self._blobs: set[str] = set()
        self.count = 0

    def add(self, key: str, material: dict[str, Any], kind: str, inv: Invocation) -> None:
        with self._lock:
            out: dict[str, Any] = {name: getattr(inv, name) for name in _FIELDS}
            if inv.limited:  # only then: a recording of a run within its limits is byte for byte as before
                out["limited"] = list(inv.limited)
            for stream in ("stdout", "stderr"):
                text = getattr(inv, stream)
                digest = _digest(text)
                if digest not in self._blobs:
                    self._blobs.add(digest)
                    self._file.write(json.dumps({"blob": digest, "text": text}, ensure_ascii=False) + "\n")
                out[stream] = digest
            if inv.consulted is not None:  # the switch points it reported (launch.targeting): only where reported
                out["consulted"] = inv.consulted
            out["transcript"] = [r.to_dict() if hasattr(r, "to_dict") else r for r in inv.transcript]
            line = {"key": key, "kind": kind, "request": material, "outcome": out}
            self._file.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
            self.count += 1

    def fact(self, name: str, value: Any) -> None:
        """A random draw of the run (generated cases, names) that a replay must see again."""
        with self._lock:
            self._file.write(json.dumps({"fact": name, "value": value}, ensure_ascii=False, default=str) + "\n")

    def close(self) -> None:
        with self._lock:
            self._file.close()


@dataclass
class Recording:
    """A recording as read back: its manifest, and every recorded outcome by key (in recorded order)."""

    directory: Path
    manifest: dict[str, Any]
    outcomes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    blobs: dict[str, str] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)  # the run's random draws (:meth:`Recorder.fact`)
    reads: dict[str, int] = field(default_factory=dict)  # gate -> how many recorded invocations it read

    @classmethod
    def load(cls, directory: Path) -> Recording:
        rec = cls(directory, read_manifest(directory))
        for part in sorted((directory / "parts").glob("*.jsonl.gz")):
            try:
                with gzip.open(part, "rt", encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        rec._read(json.loads(line), part, n)
            except (OSError, EOFError, ValueError) as exc:
                raise DwsInputError(str(part), "", f"unreadable recording part: {exc}") from None
        return rec

    def _read(self, doc: Any, part: Path, n: int) -> None:
        if isinstance(doc, dict) and "blob" in doc:
            self.blobs[str(doc["blob"])] = str(doc["text"])
        elif isinstance(doc, dict) and doc.get("fact") == "reads_by_gate" and isinstance(doc.get("value"), dict):
            for gate, count in doc["value"].items():  # one per run that wrote this part: they add up
                self.reads[str(gate)] = self.reads.get(str(gate), 0) + int(count)
        elif isinstance(doc, dict) and isinstance(doc.get("fact"), str):
            self.facts.setdefault(doc["fact"], doc.get("value"))
        elif isinstance(doc, dict) and isinstance(doc.get("key"), str) and isinstance(doc.get("outcome"), dict):
            self.outcomes.setdefault(doc["key"], []).append(doc)
        else:
            raise DwsInputError(str(part), f"line {n}", "neither a blob, a fact nor an invocation")

    def __len__(self) -> int:
        return sum(len(v) for v in self.outcomes.values())


class Replayer:
    """Answers invocations from a :class:`Recording`: the i-th ask of a key gets its i-th recorded outcome (the
    last one again past the end: the same request to the same build)."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._asked: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            found = self.recording.outcomes.get(key)
            if not found:
                return None
            i = self._asked.get(key, 0)
            self._asked[key] = i + 1
        return found[min(i, len(found) - 1)]

    def invocation(self, argv: list[str], doc: dict[str, Any], backend: Any) -> Invocation:
        """The recorded outcome as an :class:`Invocation`; its backend requests are added to ``backend``'s
        transcript (renumbered in its sequence), as if the target had just sent them."""
        from fake_mcp.transcript import Record

        out = doc["outcome"]
        blobs = self.recording.blobs
        records = []
        for raw in out.get("transcript") or []:
            if backend is not None:
                rec = Record(**{**raw, "seq": backend.transcript.next_seq()})
                backend.transcript.add(rec)
            else:
                rec = Record(**raw)
            records.append(rec)
        inv = Invocation(argv, out.get("exit_code"), blobs.get(out.get("stdout", ""), ""),
                         blobs.get(out.get("stderr", ""), ""), records)
        inv.consulted = out.get("consulted")
        for name in _FIELDS:
            if name in out and name != "exit_code":
                setattr(inv, name, out[name])
        inv.egress = list(out.get("egress") or [])
        inv.egress_kinds = dict(out.get("egress_kinds") or {})
        inv.collected = list(out.get("collected") or [])
        inv.limited = list(out.get("limited") or [])
        return inv


class Unrecorded(Invocation):
    """An invocation the recording does not hold: reading its outcome makes the reader's subject not
    applicable (never a pass, never a failure)."""

    recorded = False  # (an Invocation's default is True: it ran, or the recording held it)
    _OUTCOME = frozenset({"exit_code", "stdout", "stderr", "transcript", "timed_out", "crashed", "signal",
                          "overflow", "egress", "egress_kinds", "service_egress", "stdout_json", "stderr_json",
                          "error", "calls", "call_tuples", "check", "describe", "limited"})

    def __repr__(self) -> str:  # the dataclass repr would read the outcome
        return f"Unrecorded({object.__getattribute__(self, 'argv')!r})"

    def __getattribute__(self, name: str) -> Any:
        if name in Unrecorded._OUTCOME:
            argv = object.__getattribute__(self, "argv")
            raise NotRecorded(f"not recorded: this invocation is not in the replayed recording ({' '.join(argv)})")
        return object.__getattribute__(self, name)


def runs_of(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs a recording was made by (a manifest written before ``runs`` existed: its one run)."""
    runs = manifest.get("runs")
    if isinstance(runs, list):
        return [r for r in runs if isinstance(r, dict)]
    return [{k: manifest.get(k) for k in ("suite", "created", "sample", "shard", "options")}]


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    """Atomically (every xdist worker writes the same manifest)."""
    tmp = directory / f".{MANIFEST}.{os.getpid()}"
    tmp.write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, directory / MANIFEST)
