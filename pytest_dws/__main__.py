"""``python -m pytest_dws COMMAND``: the helper command line, one module of :mod:`pytest_dws.cli` per command.

- ``diff OLD NEW``: what changed for agents between two builds (:mod:`pytest_dws.cli.diff`);
- ``merge R1.json ... RN.json``: the shard reports of one run as one (:mod:`pytest_dws.cli.merge`);
- ``recording show DIR`` / ``recording merge A B -o C``: what a recording holds; recordings of one build as one
  (:mod:`pytest_dws.cli.recording`);
- ``summary REPORT.json``: the closing block of a run (:mod:`pytest_dws.cli.summary`);
- ``release init REPORT.json --from PREV -o NEW``: start a release folder (:mod:`pytest_dws.cli.release`);
- ``action run`` / ``action publish REPORT --exit-code N``: the GitHub Action's step (:mod:`pytest_dws.cli.action`).

Bad input is one ``ERROR:`` line and exit 4, never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from pytest_dws.cli import action, diff, merge, recording, release, summary
from pytest_dws.core.errors import DwsInputError, NotApplicable

COMMANDS = {"action": action, "diff": diff, "merge": merge, "recording": recording, "release": release,
            "summary": summary}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_dws", description="pytest-dws tools")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS.values():
        command.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        return int(COMMANDS[args.command].run(args))
    except DwsInputError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 4
    except NotApplicable as exc:  # a side with nothing to read (no catalog, no binary)
        print(f"ERROR: dws-contract: {args.command}: {exc}", file=sys.stderr)
        return 4
    except RecursionError:  # JSON nested deeper than any report or catalog is
        print(f"ERROR: dws-contract: {args.command}: an input is nested too deeply to be a report, catalog or "
              "contract", file=sys.stderr)
        return 4


if __name__ == "__main__":
    raise SystemExit(main())
