"""``python -m pytest_dws recording show DIR [--invocation KEY]`` and ``recording merge A B ... -o C``.

``show``: what a recording (``--dws-record DIR``) holds. Without ``--invocation``: the target, the runs that made
it (sample, shard, when), the seed, the invocations per kind, how many each gate read, and the size on disk. With
it: one invocation (a key or a unique key prefix): what the suite asked for, exit code, stdout, stderr, the
backend requests and the egress attempts.

``merge``: several recordings of ONE build (shards of a CI matrix, families or samples recorded apart) as one
folder, whose replay gives the verdict of a run that made all of their invocations (issue 37 (4)). Recordings of
two builds, or with other random draws (seed, variant examples), cannot be one run: exit 4.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_dws.cli.output import write_output
from pytest_dws.core.errors import DwsInputError
from pytest_dws.launch.recording import runs_of


def add_parser(sub: Any) -> None:
    r = sub.add_parser("recording", help="inspect a recording made with --dws-record")
    inner = r.add_subparsers(dest="action", required=True)
    show = inner.add_parser("show", help="what a recording holds, or one invocation of it")
    show.add_argument("directory")
    show.add_argument("--invocation", metavar="KEY", help="one invocation: its key or a unique prefix of it")
    show.add_argument("-o", "--output", help="write here instead of stdout")
    merge = inner.add_parser("merge", help="several recordings of one build as one folder")
    merge.add_argument("directories", nargs="+", metavar="DIR")
    merge.add_argument("-o", "--output", required=True, metavar="DIR", help="the merged recording (a new folder)")


def run(args: argparse.Namespace) -> int:
    from pytest_dws.launch.recording import Recording

    if args.action == "merge":
        return _merge([Path(d) for d in args.directories], Path(args.output))
    rec = Recording.load(Path(args.directory))
    if args.invocation:
        text = _one(rec, args.invocation)
    else:
        text = _summary(rec)
    write_output(text, args.output)
    return 0


def _summary(rec: Any) -> str:
    m = rec.manifest
    kinds = Counter(doc.get("kind", "other") for docs in rec.outcomes.values() for doc in docs)
    size = sum(p.stat().st_size for p in rec.directory.rglob("*") if p.is_file())
    lines = [f"recording {rec.directory}",
             f"  target:      {' '.join(m.get('target') or [])}",
             f"  recorded by: {m.get('suite')} at {m.get('created')}",
             f"  seed {m.get('seed')}, variant examples {m.get('variant_examples')}, "
             f"sample {m.get('sample') or 'coverage'}, shard {m.get('shard') or 'all'}",
             f"  invocations: {len(rec)} ({len(rec.outcomes)} distinct requests), {len(rec.blobs)} output blobs, "
             f"{size / 1e6:.2f} MB on disk",
             "  per kind:    " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))]
    runs = runs_of(m)
    lines.append(f"  runs:        {len(runs)}: " + "; ".join(
        f"{r.get('mode') or 'new'} {r.get('created') or '?'} (sample {r.get('sample') or 'coverage'}, shard "
        f"{r.get('shard') or 'all'})" for r in runs))
    if rec.reads:
        lines.append(f"  read by gate ({len(rec.reads)} gates): "
                     + ", ".join(f"{g} {n}" for g, n in sorted(rec.reads.items())))
    return "\n".join(lines) + "\n"


def _merge(sources: list[Path], out: Path) -> int:
    """Copy every part of every source under a name of its own, and one manifest: the first's, with the runs of
    all and the sample and shard they share (None where they differ: the union is wider than any of them)."""
    from pytest_dws.launch.recording import Recording, write_manifest

    recs = [Recording.load(d) for d in sources]
    first = recs[0].manifest
    for rec in recs[1:]:
        for key in ("digest", "seed", "variant_examples"):
            if rec.manifest.get(key) != first.get(key):
                raise DwsInputError(str(rec.directory / "manifest.json"), f"$.{key}",
                                    f"{rec.manifest.get(key)!r} differs from {first.get(key)!r} of "
                                    f"{recs[0].directory}: not recordings of one run of one build")
    if out.exists() and any(out.iterdir()):
        raise DwsInputError("-o", "", f"{out} is not empty: the merged recording goes into a new folder")
    (out / "parts").mkdir(parents=True, exist_ok=True)
    for i, rec in enumerate(recs):
        for part in sorted((rec.directory / "parts").glob("*.jsonl.gz")):
            shutil.copyfile(part, out / "parts" / f"m{i}-{part.name}")
    manifest = dict(first)
    for key in ("sample", "shard"):
        values = {json.dumps(r.manifest.get(key)) for r in recs}
        manifest[key] = first.get(key) if len(values) == 1 else None
    manifest["runs"] = [{**run, "from": str(rec.directory)} for rec in recs for run in runs_of(rec.manifest)]
    manifest["merged_from"] = [str(r.directory) for r in recs]
    write_manifest(out, manifest)
    merged = Recording.load(out)
    write_output(f"merged {len(recs)} recordings into {out}: {len(merged)} invocations "
                 f"({len(merged.outcomes)} distinct requests)\n", None)
    return 0


def _one(rec: Any, key: str) -> str:
    found = sorted(k for k in rec.outcomes if k.startswith(key))
    if len(found) != 1:
        close = ", ".join(found[:5]) or "none"
        raise DwsInputError("--invocation", "", f"{key!r} names {len(found)} recorded invocations ({close})")
    docs = rec.outcomes[found[0]]
    shown = []
    for doc in docs:
        out = dict(doc["outcome"])
        for stream in ("stdout", "stderr"):
            out[stream] = rec.blobs.get(out.get(stream, ""), "")
        shown.append({"key": found[0], "kind": doc.get("kind"), "request": doc.get("request"), "outcome": out})
    return json.dumps(shown if len(shown) > 1 else shown[0], ensure_ascii=False, indent=2) + "\n"


if __name__ == "__main__":  # pragma: no cover - the dispatcher is python -m pytest_dws
    sys.exit(2)
