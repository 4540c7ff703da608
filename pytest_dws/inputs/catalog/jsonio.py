"""Reading one JSON artifact: size cap, strict UTF-8, one parse, duplicate keys, one-line errors.

Every artifact is read once as bytes and parsed once with :func:`json.loads` (the C scanner). Anything that
is not a well-formed JSON document of reasonable size becomes a :class:`~pytest_dws.core.errors.DwsInputError`
naming the file and the JSON path (``$`` plus line/column for syntax errors), so a broken input stops the
run with one line instead of cascading into gate failures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError

#: Largest artifact the loader accepts. The biggest real files: e81 `tools/chat.json` ~4 MB, the cf
#: single-file catalog ~2.5 MB, a saved e81 `dws schema --all` 27 MB (849 tools, field provenance included).
#: Ten times the tools must still load (a 10,000-tool single-file catalog is ~25 MB); beyond this it is a
#: mistake (or an attack), not a catalog.
MAX_FILE_BYTES = 512 * 1024 * 1024

#: Files parsed with a duplicate-key check (object_pairs_hook). Big catalog files skip it for speed: their
#: tool maps are checked for duplicate canonical paths by counting instead (see :func:`count_key_values`).
HOOK_LIMIT_BYTES = 1024 * 1024


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def read_bytes(path: Path, *, root: Path | None = None) -> bytes:
    """The raw bytes of an artifact; a directory, a missing file or an oversized file is an input error."""
    shown = display(path, root)
    if path.is_dir():
        raise DwsInputError(shown, "$", "expected a JSON file, found a directory")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DwsInputError(shown, "$", f"cannot read: {exc.strerror or exc}") from None
    if size > MAX_FILE_BYTES:
        raise DwsInputError(shown, "$", f"file is {size} bytes, over the {MAX_FILE_BYTES}-byte limit "
                                        "(pytest_dws.inputs.catalog.jsonio.MAX_FILE_BYTES)")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DwsInputError(shown, "$", f"cannot read: {exc.strerror or exc}") from None


def parse(raw: bytes, where: str, *, check_duplicates: bool | None = None,
          parse_float: Callable[[str], Any] | None = None) -> Any:
    """Parse ``raw`` (strict UTF-8, no BOM) as one JSON document; errors name ``where`` and the position.

    ``parse_float`` is :func:`json.loads`' hook, called only for number tokens with a fraction or exponent
    (the loader uses it to learn, for free, whether a catalog holds floats at all: see ``hashes.go_json``).
    """
    if not raw or raw.isspace():
        raise DwsInputError(where, "$", "empty file, expected a JSON document")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DwsInputError(where, "$", f"not UTF-8 (invalid byte at offset {exc.start})") from None
    if check_duplicates is None:
        check_duplicates = len(raw) <= HOOK_LIMIT_BYTES
    try:
        if check_duplicates:
            return json.loads(text, object_pairs_hook=_no_duplicates, parse_float=parse_float)
        return json.loads(text, parse_float=parse_float)
    except _DuplicateKey as exc:
        raise DwsInputError(where, "$", f"duplicate JSON object key {exc.key!r}{_second_line(text, exc.key)}") from None
    except json.JSONDecodeError as exc:
        raise DwsInputError(where, "$", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise DwsInputError(where, "$", "JSON nested too deeply") from None


def _second_line(text: str, key: str) -> str:
    """`` (line N)`` of the second ``"key":`` in ``text`` (the repeated member), or "" if not found."""
    matches = list(re.finditer(re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:", text))
    if len(matches) < 2:
        return ""
    return f" (line {text.count(chr(10), 0, matches[1].start()) + 1})"


def load(path: Path, *, root: Path | None = None, check_duplicates: bool | None = None,
         parse_float: Callable[[str], Any] | None = None) -> tuple[bytes, Any]:
    """``(raw bytes, parsed value)`` of one artifact."""
    raw = read_bytes(path, root=root)
    return raw, parse(raw, display(path, root), check_duplicates=check_duplicates, parse_float=parse_float)


def count_key(raw: bytes, key: str) -> int:
    """How many times the string ``"key"`` occurs in the raw text (one C-speed scan).

    Used to detect a duplicated key in a big tool map without a slow object hook: every occurrence of
    ``"canonical_path"`` in a catalog file is a leaf's (or summary's, or provenance entry's) member, so the
    count must equal what the parsed document accounts for.
    """
    return raw.count(f'"{key}"'.encode())


def display(path: Path, root: Path | None) -> str:
    """The path shown in messages: relative to the tree when inside it, else as given."""
    if root is not None:
        # Fast path (the loader names every file it reads several times): a plain prefix of the string form;
        # pathlib's relative_to, which decides the other cases, costs several microseconds a call.
        text, prefix = str(path), f"{root}/"
        if text.startswith(prefix):
            return text[len(prefix):]
        try:
            return str(path.relative_to(root))
        except ValueError:
            pass
    return str(path)


def jpath(*parts: object) -> str:
    """A JSON path like ``$.tools["chat.x"].parameters["open-id"]`` (keys that are not identifiers quoted)."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}"
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out
