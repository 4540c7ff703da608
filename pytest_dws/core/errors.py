"""The suite's own exceptions, a leaf module every layer may import: input errors and "not applicable".

Input errors are one line naming the file and the JSON path (or the argument), never a traceback. They are
raised as ``pytest.UsageError`` subclasses so that pytest prints ``ERROR: <line>`` and exits 4,
which keeps bad input distinguishable from gate failures (exit 1).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest


class NotApplicable(Exception):
    """The input a gate (or a view of the release) needs is not configured; the reason is reported, never a pass.

    It lives here, below the data layer, so the catalog loader can say "no catalog" without knowing the gates.

    ``wants`` names what is missing as a phrase ("a reviewed contract snapshot", "--dws-agent"): the closing block
    groups the not-applicable gates by it ("not applicable for want of {wants}"), while the reason, a sentence
    that may say why and what to do, stays the gate's note."""

    wants: str | None = None  # a subclass may name what it always lacks

    def __init__(self, reason: str, *, wants: str | None = None) -> None:
        super().__init__(reason)
        if wants is not None:
            self.wants = wants


class NotRecorded(NotApplicable):
    """A replayed recording does not hold the invocation a gate asked for (a newer suite asks more than the
    recording suite did): not applicable until the next recording, and said so apart from other reasons."""

    wants = "a recorded invocation"


class Finding(AssertionError):
    """A gate failure with the typed facts it was observed with (``facts``: exit code, error reason/category, the
    failing fields ...): its fingerprint. A baseline entry may bind its cause to a fingerprint, so the same case
    failing for another cause is a new failure (issue 24), as web-platform-tests binds an expectation to a status."""

    def __init__(self, message: str, **facts: Any) -> None:
        super().__init__(message)
        self.facts = {k: v for k, v in facts.items() if v is not None}


class NoCatalog(NotApplicable):
    """The source tree commits no catalog: it assembles its catalog at build time (newer upstream trees), so the
    catalog of the release is the one its binary embeds (``dws schema --all``)."""

    wants = "a committed catalog"


class DwsInputError(pytest.UsageError):  # type: ignore[misc]  # final in the stubs; exit 4
    """Bad input to the suite: a malformed artifact, a missing path, a wrong option value."""

    def __init__(self, where: str | Path, path: str, message: str) -> None:
        self.where = str(where)
        self.json_path = path
        self.detail = message
        text = f"dws-contract: {self.where}"
        if path:
            text += f": {path}"
        super().__init__(f"{text}: {message}")


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """Parse a TOML input file; missing, unreadable or invalid is a one-line input error naming ``what``."""
    if not path.is_file():
        raise DwsInputError(path, "", f"{what} not found")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DwsInputError(path, "", f"not valid TOML: {exc}") from None
