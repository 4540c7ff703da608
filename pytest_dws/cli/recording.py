"""``python -m pytest_dws recording show DIR [--invocation KEY]``: what a recording (``--dws-record DIR``) holds.

Without ``--invocation``: the target, the suite that recorded it, the seed and sample, the invocations per kind
and the size on disk. With it: one invocation (a key or a unique key prefix): what the suite asked for, exit code,
stdout, stderr, the backend requests and the egress attempts.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_dws.cli.output import write_output
from pytest_dws.core.errors import DwsInputError


def add_parser(sub: Any) -> None:
    r = sub.add_parser("recording", help="inspect a recording made with --dws-record")
    inner = r.add_subparsers(dest="action", required=True)
    show = inner.add_parser("show", help="what a recording holds, or one invocation of it")
    show.add_argument("directory")
    show.add_argument("--invocation", metavar="KEY", help="one invocation: its key or a unique prefix of it")
    show.add_argument("-o", "--output", help="write here instead of stdout")


def run(args: argparse.Namespace) -> int:
    from pytest_dws.launch.recording import Recording

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
    return "\n".join(lines) + "\n"


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
