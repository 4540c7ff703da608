"""One-line errors for a TOML input file: each names the file and the JSON path of the bad key (never a traceback).
Shared by the profile and its sections, which each validate their own part of the same file."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

from pytest_dws.core.errors import DwsInputError


class TomlValidator:
    """Typed reads of a parsed TOML table that fail with a :class:`DwsInputError` naming the key path."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, message: str) -> NoReturn:
        raise DwsInputError(self.path, where, message)

    def table(self, data: dict[str, Any], key: str) -> dict[str, Any]:
        value = data.get(key)
        if not isinstance(value, dict):
            self.fail(f"$.{key}", "missing table" if value is None else "expected a table")
        return value  # type: ignore[return-value]

    def tables(self, data: dict[str, Any], key: str) -> list[Any]:
        value = data.get(key, [])
        if not isinstance(value, list):
            self.fail(f"$.{key}", "expected an array of tables")
        return value

    def string(self, data: dict[str, Any], key: str, where: str) -> str:
        value = data.get(key)
        if not isinstance(value, str) or not value:
            self.fail(where, "missing" if value is None else "expected a non-empty string")
        return value  # type: ignore[return-value]

    def strings(self, data: dict[str, Any], key: str, where: str) -> list[str]:
        value = data.get(key)
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            self.fail(where, "missing" if value is None else "expected a list of strings")
        return value  # type: ignore[return-value]
