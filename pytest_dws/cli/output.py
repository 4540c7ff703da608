"""Where a helper command writes its result: a file (``-o``) or stdout. An unwritable path is bad input (exit 4,
one line naming it), never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_dws.core.errors import DwsInputError


def write_output(text: str, output: str | None) -> None:
    if not output:
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DwsInputError(output, "", f"cannot write the output: {exc.strerror or exc}") from None
