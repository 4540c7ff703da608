"""``python -m pytest_dws summary REPORT.json [--format text|markdown] [-o FILE]``: the closing block of a run
(:mod:`pytest_dws.session.summary`) from its JSON report, for a CI step summary or a pull-request comment.

Exit 0 when the report's run would exit 0, 1 when it would not, 4 for a file that is not a report.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_dws.cli.output import write_output
from pytest_dws.core.errors import DwsInputError


def add_parser(sub: Any) -> None:
    s = sub.add_parser("summary", help="the closing block of a run from its --dws-report JSON")
    s.add_argument("report")
    s.add_argument("--format", choices=("text", "markdown"), default="text")
    s.add_argument("-o", "--output", help="write here instead of stdout")


def run(args: argparse.Namespace) -> int:
    from pytest_dws.session import summary

    path = Path(args.report)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DwsInputError(str(path), "", f"not a JSON report: {exc}") from None
    if not isinstance(doc, dict) or doc.get("suite") != "pytest-dws" or not isinstance(doc.get("gates"), dict):
        raise DwsInputError(str(path), "$.suite", "not a pytest-dws report (--dws-report writes one)")
    block = summary.build(doc)
    text = summary.markdown(block) if args.format == "markdown" else "\n".join(summary.text_lines(block)) + "\n"
    write_output(text, args.output)
    return block.exit_code
