"""What a recording keeps of the run that made it, and how a replay takes it back (issue 37 (1)).

Why: a recording is the implementation under test, but the verdict also depends on what the run was given: the
source tree, the release's expectations and baseline, the generator, the profile, the environment the suite added
(part of every invocation's key), the sample, shard and selection. ``--dws-replay DIR`` alone must give the
recorded run's verdict, so the manifest stores them (``options``), each path with a content digest; a replay takes
each one back unless this run's command line gives it, says which came from the recording (the header), and names
a recorded path that is not here (the gates needing it are not applicable with that reason, never failed). A
path is looked for where it was recorded, then at the same place relative to the recording (a recording moved
together with its tree); a path found with other content is used and said to differ.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Protocol

from pytest_dws.core.errors import DwsInputError
from pytest_dws.core.identity import path_digest, resolve_prefix, target_digest

#: The path options a manifest keeps (Settings attribute -> the option that gives it).
PATHS = {"source": "--dws-source", "catalog": "--dws-catalog", "expect": "--dws-expect",
         "baseline": "--dws-baseline", "profile": "--dws-profile"}
#: The other options a manifest keeps, in ``options`` (Settings attribute -> option).
OTHERS = {"generator": "--dws-generator", "env": "--dws-env", "subjects": "--dws-subject", "keyword": "-k",
          "markexpr": "-m"}
#: Kept at the manifest's top level since its first format (a replay always applied them).
DRAWS = {"seed": "--dws-seed", "variant_examples": "--dws-variant-examples", "sample": "--dws-sample",
         "shard": "--dws-shard"}


MANIFEST = "manifest.json"


def read_manifest(directory: Path) -> dict[str, Any]:
    """A recording's manifest, validated (schemas/recording-manifest.json): bad input is one line naming the file
    and the JSON path."""
    from pytest_dws.inputs.catalog.validate import check

    path = directory / MANIFEST
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DwsInputError(str(path), "", f"not a recording (--dws-record writes one): {exc}") from None
    check("recording-manifest", doc, str(path))
    return dict(doc)


class Recordable(Protocol):
    """The settings a manifest is made from and a replay fills in (:class:`pytest_dws.inputs.settings.Settings`)."""

    source: Path | None
    catalog: Path | None
    expect: Path | None
    baseline: Path | None
    profile: Path | None
    generator: list[str] | None
    env: dict[str, str]
    subjects: tuple[str, ...]
    keyword: str | None
    markexpr: str | None
    from_recording: dict[str, str]
    missing_recorded: dict[str, str]
    cli: list[str] | None
    replay: Path | None
    replay_unconsulted: Path | None
    recorded: dict[str, Any]
    record: Path | None
    record_mode: str
    seed: int | None
    variant_examples: int | None
    sample: int | str | None
    shard: tuple[int, int] | None


def options_of(s: Recordable, directory: Path) -> dict[str, Any]:
    """The ``options`` of a manifest written into ``directory``: each given path with its content digest and its
    place relative to the recording, the generator (this interpreter as ``{python}``), env and selection."""
    out: dict[str, Any] = {}
    for name in PATHS:
        path = getattr(s, name)
        if path is not None:
            out[name] = {"path": str(path), "relative": os.path.relpath(path, directory),
                         "digest": path_digest(path)}
    if s.generator:
        out["generator"] = ["{python}" if a == sys.executable else a for a in s.generator]
    if s.env:
        out["env"] = dict(sorted(s.env.items()))
    if s.subjects:
        out["subjects"] = list(s.subjects)
    for name in ("keyword", "markexpr"):
        if getattr(s, name):
            out[name] = getattr(s, name)
    return out


def take_back(s: Recordable, manifest: dict[str, Any], directory: Path, given: set[str]) -> None:
    """Apply a recording's ``options`` to ``s`` except the ones in ``given`` (attribute names this run's command
    line set): paths where they are found, the rest as recorded. ``from_recording`` says what came back and from
    where; ``missing_recorded`` names each recorded path that is not here."""
    options = manifest.get("options")
    if options is None:
        return
    if not isinstance(options, dict):
        raise DwsInputError(str(directory / "manifest.json"), "$.options", "expected an object")
    for name, option in PATHS.items():
        rec = options.get(name)
        if name in given or rec is None:
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("path"), str):
            raise DwsInputError(str(directory / "manifest.json"), f"$.options.{name}", "expected {path, digest}")
        found = _locate(rec, directory)
        if found is None:
            s.missing_recorded[name] = rec["path"]
            s.from_recording[name] = f"{option} {rec['path']} (recorded; not here)"
            continue
        setattr(s, name, found)
        differs = rec.get("digest") not in (None, path_digest(found))
        s.from_recording[name] = f"{option} {found}" + (" (its content differs from the recorded one)"
                                                        if differs else "")
    gen = options.get("generator")
    if "generator" not in given and isinstance(gen, list) and s.source is not None:
        s.generator = [sys.executable if a == "{python}" else str(a) for a in gen]
        s.from_recording["generator"] = "--dws-generator " + " ".join(map(str, gen))
    env = options.get("env")
    if isinstance(env, dict) and env:  # part of every invocation's key: this run's --dws-env adds or replaces
        s.env = {**{str(k): str(v) for k, v in env.items()}, **s.env}
        s.from_recording["env"] = "--dws-env " + " ".join(f"{k}={v}" for k, v in sorted(env.items()))
    for name in ("subjects", "keyword", "markexpr"):
        value = options.get(name)
        if name in given or not value:
            continue
        setattr(s, name, tuple(value) if name == "subjects" else str(value))
        shown = ",".join(value) if name == "subjects" else value
        s.from_recording[name] = f"{OTHERS[name]} {shown!r}" if name != "subjects" else f"--dws-subject {shown}"


def _locate(rec: dict[str, Any], directory: Path) -> Path | None:
    """Where the recorded path is now: as recorded, else at the same place relative to the recording."""
    candidates = [Path(rec["path"])]
    if isinstance(rec.get("relative"), str):
        candidates.append((directory / rec["relative"]).resolve())
    existing = [p for p in candidates if p.exists()]
    same = [p for p in existing if rec.get("digest") in (None, path_digest(p))]
    return next(iter(same or existing), None)


# -- the options that decide a recording's invocations (settings.resolve calls these) -------------------------
def parse_shard(value: str) -> tuple[int, int]:
    """``K/N`` with 1 <= K <= N; ValueError otherwise."""
    k, sep, n = value.partition("/")
    if not sep or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
        raise ValueError(f"expected K/N with 1 <= K <= N, got {value!r}")
    return int(k), int(n)


def replay_target(s: Recordable, value: str | None, cwd: Path) -> None:
    """``--dws-replay DIR``: the recording is the target (it replaces ``--dws-cli``); the random draws it was
    made with (seed, variant examples) apply unless given again."""
    if not value:
        return
    if s.cli is not None:
        raise DwsInputError("--dws-replay", "", "the recording is the implementation: give --dws-cli or "
                            "--dws-replay, not both")
    path = (cwd / value).resolve()
    doc = read_manifest(path)
    s.replay, s.cli = path, [str(a) for a in doc["target"]]
    s.recorded = doc  # its seed, sample, shard, digest and options apply unless given again (apply_draws)


def apply_draws(s: Recordable, *, sample_given: bool) -> None:
    """A replay makes the invocations its recording holds: the recorded seed, variant examples, sample and shard
    apply unless given again on this run's command line (``--dws-sample coverage`` asks for the default sample of
    a recording made with another)."""
    rec = s.recorded
    for key in ("seed", "variant_examples"):
        if getattr(s, key) is None and isinstance(rec.get(key), int):
            setattr(s, key, rec[key])
    if not sample_given and rec.get("sample") is not None:
        s.sample = rec["sample"]
    if s.shard is None and isinstance(rec.get("shard"), str):
        s.shard = parse_shard(rec["shard"])


def replay_unconsulted(s: Recordable, value: str | None, cwd: Path) -> None:
    """``--dws-replay-unconsulted DIR`` (internal): a live run that takes from DIR every invocation whose recorded
    twin never consulted a switch this run sets otherwise (pytest_dws.launch.targeting): a --dws-cli, no replay, no
    recording of its own, and DIR holding one."""
    if not value:
        return
    if s.replay is not None or s.record is not None or s.cli is None:
        raise DwsInputError("--dws-replay-unconsulted", "", "it answers a live --dws-cli run in part from a "
                            "recording: give --dws-cli, and neither --dws-replay nor --dws-record")
    path = (cwd / value).resolve()
    if not (path / MANIFEST).is_file():
        raise DwsInputError("--dws-replay-unconsulted", "", f"{path} holds no recording (--dws-record writes one)")
    s.replay_unconsulted = path


def record_mode(s: Recordable, mode: str, *, worker: bool) -> None:
    """``--dws-record-mode``: ``new`` refuses a folder that holds a recording (a release's recording is never
    overwritten by accident); ``append`` needs one of the same build, and takes its random draws (the seed)
    unless given, so the invocations it adds belong to the same run. (An xdist worker finds the manifest its
    controller just wrote: the controller checked.)"""
    mode = mode.strip().lower()
    if mode not in ("new", "append"):
        raise DwsInputError("--dws-record-mode", "", f"expected new or append, got {mode!r}")
    s.record_mode = mode
    assert s.record is not None
    held = (s.record / "manifest.json").is_file()
    if worker:
        return
    if mode == "new" and held:
        raise DwsInputError("--dws-record", "", f"{s.record} already holds a recording: --dws-record-mode append "
                            "adds this run's new invocations to it; give another folder for a new one")
    if mode == "append":
        if not held:
            raise DwsInputError("--dws-record", "", f"{s.record} holds no recording to append to "
                                "(--dws-record-mode new starts one)")
        doc = read_manifest(s.record)
        mine = target_digest(resolve_prefix(s.cli or []))
        if doc.get("digest") not in (None, mine):
            raise DwsInputError("--dws-record", "", f"{s.record} records another build (digest "
                                f"{str(doc.get('digest'))[:12]}, this run's {mine[:12]}): give another folder")
        for key in ("seed", "variant_examples"):
            if getattr(s, key) is None and isinstance(doc.get(key), int):
                setattr(s, key, doc[key])
