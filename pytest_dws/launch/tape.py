"""The runner's side of a recording: one :class:`Tape` per session, recording or replaying every invocation.

Why apart from :mod:`.recording` (the format): this is where a session's settings meet the format: which
directory, what the manifest says about the run, where misses are counted (the session's ledger).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_dws.core.identity import target_digest
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.recorded import options_of
from pytest_dws.launch.homes import InputFiles
from pytest_dws.launch.invocation import Invocation
from pytest_dws.launch.recording import FORMAT, Keyer, Recorder, Recording, Replayer, Unrecorded
from pytest_dws.launch.targeting import (
    CONSULTED_ENV,
    CONSULTED_NAME,
    FILES_FACT,
    TREES_FACT,
    Targeting,
    launcher_files,
    launcher_trees,
    read_consulted,
)


class Tape:
    """Records (``recorder``) or replays (``replayer``) the invocations of one session; with ``targeting`` (and
    its ``replayer``) it answers a live run in part (:meth:`replay_unconsulted`)."""

    def __init__(self, keyer: Keyer, recorder: Recorder | None = None, replayer: Replayer | None = None,
                 targeting: Targeting | None = None) -> None:
        self.keyer, self.recorder, self.replayer, self.targeting = keyer, recorder, replayer, targeting
        self._trees_told = False

    def record(self, argv: Sequence[str], inv: Invocation, *, backend: Any, env: Mapping[str, str], stdin: bytes,
               files: InputFiles | None, kind: str) -> None:
        if self.recorder is not None:
            key, material = self.keyer.key(argv, backend, env, stdin, files)
            inv.key = key
            if inv.consulted is not None and not self._trees_told:  # a target that reports its switch points:
                self._trees_told = True  # the build's sources, for a coverage-targeted replay (once; a real binary's
                self.recorder.fact(TREES_FACT, launcher_trees(self.keyer.prefix))  # folder is never hashed)
                self.recorder.fact(FILES_FACT, launcher_files(self.keyer.prefix))  # (which files of it differ)
            self.recorder.add(key, material, kind, inv)

    @property
    def appending(self) -> bool:
        """``--dws-record-mode append``: what the folder holds is replayed, the rest runs live and is recorded."""
        return self.replayer is not None and self.recorder is not None

    def replay(self, argv: list[str], *, backend: Any, env: Mapping[str, str], stdin: bytes,
               files: InputFiles | None, kind: str, ledger: Any, collect: Sequence[Path] = ()) -> Invocation:
        """The recorded outcome, or :class:`Unrecorded` (counted in the ledger; while appending the caller runs
        it live instead, and nothing is counted)."""
        assert self.replayer is not None
        key, _ = self.keyer.key(argv, backend, env, stdin, files)
        doc = self.replayer.take(key)
        if doc is None:
            if ledger is not None and not self.appending:
                ledger.missing(self.keyer.argv(argv))
            return Unrecorded(argv, None, "", "", key=key)
        inv = self.replayer.invocation(argv, doc, backend)
        inv.key = key
        for path, text in zip(collect, inv.collected, strict=False):  # what the run left for the gate to read
            if text is not None:
                path.write_text(text, encoding="utf-8")
        if ledger is not None:
            ledger.record(kind, argv, 0.0, 0.0)  # a replay costs the target nothing
        return inv


    def answer(self, argv: list[str], *, backend: Any, env: Mapping[str, str], stdin: bytes,
               files: InputFiles | None, kind: str, ctx: GateContext | None, collect: Sequence[Path],
               fresh: bool) -> Invocation | None:
        """The runner's question before it starts a target: the recorded outcome, or None to run it live (appending
        and missing; targeted and not answered). ``fresh``: the backend (if any) serves this invocation alone."""
        ledger = getattr(ctx, "ledger", None)
        if self.targeting is None:
            replayed = self.replay(argv, backend=backend, env=env, stdin=stdin, files=files, kind=kind,
                                   ledger=ledger, collect=collect)
            # appending (--dws-record-mode append): the folder lacks it, so it runs live now and is recorded
            return replayed if replayed.recorded or not self.appending else None
        answered = self.replay_unconsulted(argv, backend=backend, env=env, stdin=stdin, files=files, kind=kind,
                                           ledger=ledger, collect=collect, fresh=fresh)
        section = getattr(ctx, "section", None)
        if answered is not None and answered.egress_kinds and callable(section):  # as its live run filed it
            section("egress", {t: {"kind": k, "example": " ".join(argv[len(self.keyer.prefix):])[:200]}
                               for t, k in answered.egress_kinds.items()})
        return answered

    def coverage_file(self, home: Path) -> Path | None:
        """Where the invocation in ``home`` reports its switch points while recording (None otherwise): a folder of
        that HOME's own beside it, not inside it, since a jailed target's HOME is a copy in its own mount view
        (launch.contain.jail) that the suite never reads back; the runner makes that folder writable to it."""
        if self.recorder is None:
            return None
        folder = home.with_name(f"{home.name}.cov")
        folder.mkdir(exist_ok=True)
        return folder / CONSULTED_NAME

    def side_files(self, home: Path) -> list[Path]:
        """The files outside ``home`` the invocation in it may write: its coverage report while recording."""
        path = self.coverage_file(home)
        return [path] if path is not None else []

    def coverage(self, home: Path) -> dict[str, str]:
        """The environment that asks a target for its switch points (while recording: the recording keeps them)."""
        path = self.coverage_file(home)
        return {CONSULTED_ENV: str(path)} if path is not None else {}

    def consulted(self, home: Path) -> list[str] | None:
        """The switch points the invocation that ran in ``home`` reported (None: not asked, or it said nothing)."""
        path = self.coverage_file(home)
        return read_consulted(path) if path is not None else None

    def replay_unconsulted(self, argv: list[str], *, backend: Any, env: Mapping[str, str], stdin: bytes,
                           files: InputFiles | None, kind: str, ledger: Any, collect: Sequence[Path] = (),
                           fresh: bool) -> Invocation | None:
        """The recorded twin's outcome when it answers this invocation (:class:`Targeting`), else None: the caller
        runs it live. ``fresh``: the backend (if any) is a world loaded for this invocation alone."""
        assert self.replayer is not None and self.targeting is not None
        key, _ = self.keyer.key(argv, backend, self.targeting.lookup_env(env), stdin, files)
        doc = self.replayer.take(key)  # every ask counts, taken or not: the i-th ask meets the i-th answer
        if not self.targeting.answers(doc, fresh=fresh):
            return None
        assert doc is not None
        inv = self.replayer.invocation(argv, doc, backend)
        inv.key = key
        for path, text in zip(collect, inv.collected, strict=False):
            if text is not None:
                path.write_text(text, encoding="utf-8")
        if ledger is not None:
            ledger.record(kind, argv, inv.duration, inv.cpu)  # what it cost when it ran: the same run
        return inv

    def fixed(self, name: str, draw: Callable[[], Any]) -> Any:
        """A random draw of the run (JSON), fixed by the recording: recorded when recording, the recorded value
        when replaying (a replay must ask for what the recorded run asked for), else ``draw()``."""
        if self.replayer is not None and name in self.replayer.recording.facts:
            return self.replayer.recording.facts[name]
        value = draw()
        if self.recorder is not None:
            self.recorder.fact(name, value)
        return value


def tape_for(ctx: GateContext | None, prefix: Sequence[str], tmp_root: Path) -> Tape | None:
    """The session's tape (shared by its runners), or None when the run neither records nor replays."""
    settings = getattr(ctx, "settings", None)
    record, replay = getattr(settings, "record", None), getattr(settings, "replay", None)
    unconsulted = getattr(settings, "replay_unconsulted", None)
    if ctx is None or (record is None and replay is None and unconsulted is None):
        return None

    def build() -> Tape:
        keyer = Keyer(prefix, Path(str(getattr(ctx, "tmp_root", None) or tmp_root)))
        if replay is not None:
            return Tape(keyer, replayer=Replayer(Recording.load(Path(replay))))
        if unconsulted is not None:
            recording = Recording.load(Path(unconsulted))
            targeting = Targeting(recording, dict(getattr(settings, "env", None) or {}), prefix)
            section = getattr(ctx, "section", None)
            if callable(section):  # the report says how much of the run was answered (targeted_replay)
                targeting.publish = lambda: section("targeted_replay", targeting.summary())
            return Tape(keyer, replayer=Replayer(recording), targeting=targeting)
        append = getattr(settings, "record_mode", "new") == "append"
        from importlib.metadata import version

        shard = getattr(settings, "shard", None)
        manifest = {"format": FORMAT, "suite": f"pytest-dws {version('pytest-dws')}", "target": list(prefix),
                    "digest": target_digest(prefix),
                    "seed": getattr(settings, "seed", None),
                    "variant_examples": getattr(settings, "variant_examples", None),
                    # what decides which invocations a run makes: a replay applies them unless given again
                    "sample": getattr(settings, "sample", None),
                    "shard": "/".join(map(str, shard)) if shard else None,
                    # the rest of what the run was given: --dws-replay DIR alone re-judges with it
                    "options": options_of(ctx.settings, Path(str(record))),
                    "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
        worker = (getattr(ctx, "xdist", None) or {}).get("workerid")
        recorder = Recorder(Path(str(record)), manifest, append=append, worker=str(worker) if worker else None)
        ctx.on_close(recorder.close)
        return Tape(keyer, recorder=recorder,
                    replayer=Replayer(Recording.load(Path(str(record)))) if append else None)

    tape: Tape = ctx.memo(("runner", "tape"), build)
    return tape
