"""``python -m pytest_dws diff OLD NEW``: what changed for agents between two builds.

Each side is a ``dws`` binary (run offline in a scrubbed environment against the fake backend: its own
``schema --all``, the typed errors of the fault classes, the help-visible flags), a source tree, a catalog
file or a saved ``dws schema --all``, a recording of a run (``--dws-record DIR``, replayed), or a saved agent
contract (``__snapshots__/SCH-CONTRACT-SNAPSHOT.json``,
as the snapshot gate writes it). Exit 0 when the contracts are equal, 1 when they differ, 4 for bad input.

    python -m pytest_dws diff ./dws-2a8c6c87 ./dws-81f67c8d
    python -m pytest_dws diff releases/81f67c8d/__snapshots__/SCH-CONTRACT-SNAPSHOT.json ./dws --format markdown
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_dws.cli.output import write_output
from pytest_dws.core.errors import DwsInputError


def add_parser(sub: Any) -> None:
    d = sub.add_parser("diff", help="the agent-facing changes between two builds")
    d.add_argument("old")
    d.add_argument("new")
    d.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    d.add_argument("-o", "--output", help="write the report here instead of stdout")
    d.add_argument("--timeout", type=float, default=60.0, help="seconds one invocation of a binary may take")


def run(args: argparse.Namespace) -> int:
    """Exit 0 equal, 1 different; a :class:`DwsInputError` (exit 4) for a side that cannot be read."""
    from pytest_dws.observe.contract_diff import RENDERERS, counts, diff

    start = time.perf_counter()
    old, new = load_side(args.old, args.timeout), load_side(args.new, args.timeout)
    changes = diff(old, new)
    write_output(RENDERERS[args.format](changes, args.old, args.new), args.output)
    print(f"({len(old.get('tools', {}))} -> {len(new.get('tools', {}))} tools, "
          f"{time.perf_counter() - start:.1f} s)", file=sys.stderr)
    return 1 if any(counts(changes).values()) else 0


def load_side(spec: str, timeout: float = 60.0) -> dict[str, Any]:
    """The agent contract of one side (see the module docstring for what a side may be)."""
    from pytest_dws.inputs.expectations import Expectations
    from pytest_dws.inputs.settings import Settings
    from pytest_dws.observe import agent_contract
    from pytest_dws.observe.context import Context

    path = Path(spec)
    if not path.exists():
        raise DwsInputError(spec, "", "no such binary, source tree or catalog file")
    if path.is_file() and not os.access(path, os.X_OK):
        saved = _saved_contract(path)
        if saved is not None:
            return saved
        settings = Settings(catalog=path.resolve(), origin="diff")
    elif path.is_file():
        settings = Settings(cli=[str(path.resolve())], timeout=timeout, origin="diff")
    elif (path / "manifest.json").is_file():  # a recording (--dws-record): replayed, nothing runs
        manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        settings = Settings(cli=[str(a) for a in manifest.get("target") or ["dws"]], replay=path.resolve(),
                            origin="diff")
    else:
        settings = Settings(source=path.resolve(), origin="diff")
    with tempfile.TemporaryDirectory(prefix="dws-diff-") as tmp:
        ctx = Context(settings, Expectations(), Path(tmp))
        try:
            return agent_contract.of_context(ctx)
        except AssertionError as exc:  # the target hung, crashed or printed garbage
            raise DwsInputError(spec, "", f"cannot read its agent contract: {str(exc).splitlines()[0]}") from None
        finally:
            ctx.close()


def _saved_contract(path: Path) -> dict[str, Any] | None:
    """A saved agent contract (the snapshot's JSON object with a ``tools`` map of normalised leaves)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    tools = doc.get("tools") if isinstance(doc, dict) else None
    if isinstance(tools, dict) and all(isinstance(t, dict) and "cli_path" in t and "parameters" in t
                                       for t in tools.values()) and "catalog" not in doc:
        return doc
    return None
