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


class Tape:
    """Records (``recorder``) or replays (``replayer``) the invocations of one session."""

    def __init__(self, keyer: Keyer, recorder: Recorder | None = None, replayer: Replayer | None = None) -> None:
        self.keyer, self.recorder, self.replayer = keyer, recorder, replayer

    def record(self, argv: Sequence[str], inv: Invocation, *, backend: Any, env: Mapping[str, str], stdin: bytes,
               files: InputFiles | None, kind: str) -> None:
        if self.recorder is not None:
            key, material = self.keyer.key(argv, backend, env, stdin, files)
            inv.key = key
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
    if ctx is None or (record is None and replay is None):
        return None

    def build() -> Tape:
        keyer = Keyer(prefix, Path(str(getattr(ctx, "tmp_root", None) or tmp_root)))
        if replay is not None:
            return Tape(keyer, replayer=Replayer(Recording.load(Path(replay))))
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
