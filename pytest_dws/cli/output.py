"""The helper commands' I/O: where a result goes (a file, ``-o``, or stdout) and how a JSON input is read. An
unwritable path or an unreadable input is bad input (exit 4, one line naming it), never a traceback."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError


def write_output(text: str, output: str | None) -> None:
    if not output:
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DwsInputError(output, "", f"cannot write the output: {exc.strerror or exc}") from None


def read_json(path: Path, what: str = "it") -> Any:
    """The JSON document at ``path``; unreadable or not JSON is a one-line input error naming the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DwsInputError(path, "", f"cannot read {what} ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise DwsInputError(path, "", f"not JSON ({exc})") from None


def read_report(path: Path) -> dict[str, Any]:
    """A ``--dws-report`` JSON document (the suite's own), else a one-line input error."""
    doc = read_json(path, "the report")
    if not isinstance(doc, dict) or doc.get("suite") != "pytest-dws" or not isinstance(doc.get("gates"), dict):
        raise DwsInputError(path, "$.suite", "not a pytest-dws report (--dws-report writes one)")
    return doc
