"""``python -m pytest_dws summary REPORT.json [--format text|markdown] [-o FILE]``: the closing block of a run
(:mod:`pytest_dws.session.summary`) from its JSON report, for a CI step summary or a pull-request comment.

Exit 0 when the report's run would exit 0, 1 when it would not, 4 for a file that is not a report.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_dws.cli.output import read_report, write_output


def add_parser(sub: Any) -> None:
    s = sub.add_parser("summary", help="the closing block of a run from its --dws-report JSON")
    s.add_argument("report")
    s.add_argument("--format", choices=("text", "markdown"), default="text")
    s.add_argument("-o", "--output", help="write here instead of stdout")


def run(args: argparse.Namespace) -> int:
    from pytest_dws.session import summary

    doc = read_report(Path(args.report))
    block = summary.build(doc)
    text = summary.markdown(block) if args.format == "markdown" else "\n".join(summary.text_lines(block)) + "\n"
    write_output(text, args.output)
    return block.exit_code
