"""The ONE reader of "the JSON document a CLI stream carries" (docs/wire.md §4), shared by the runner
(:mod:`pytest_dws.launch`) and the judge (:mod:`pytest_dws.core.outcome`), so a recorded run and a live run are read
the same way. Stdlib only: the judge is used outside pytest on recorded runs.

The CLI prints one JSON document, and after some failures an extra line follows it on stderr
(``RECOVERY_EVENT_ID=evt_...``); a wrapper may also print a warning line before it. So the document is the
first one that starts the stream (after leading blanks) or starts a line; text inside a line is never taken
for JSON (a ``[UNCLASSIFIED] ...`` message prefix is not a JSON array).

Example::

    first_json('{"error": {"code": 3}}\\nRECOVERY_EVENT_ID=evt_1\\n')   # {"error": {"code": 3}}
    first_json('warning: slow\\n{"a": 1}\\n{"b": 2}')                    # {"a": 1}
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

__all__ = ["first_json"]

_DECODER = json.JSONDecoder()


def first_json(text: str) -> Any:
    """The first JSON document of ``text`` (at its start, else at the first line starting with ``{``/``[``
    that parses), or None."""
    if not text:
        return None
    for start in _starts(text):
        try:
            return _DECODER.raw_decode(text, start)[0]
        except ValueError:
            continue
    return None


def _starts(text: str) -> Iterator[int]:
    """Offsets where a document may begin: the first non-blank character, then every line start."""
    head = len(text) - len(text.lstrip())
    if text[head:head + 1] in ("{", "["):
        yield head
    pos = text.find("\n")
    while pos != -1:
        if text[pos + 1:pos + 2] in ("{", "[") and pos + 1 != head:
            yield pos + 1
        pos = text.find("\n", pos + 1)
