"""Scenarios: the backend state plus fault overrides, as JSON/TOML files or built in Python.

Scenario files are data shared between gates, evaluation runners and humans, so a bad file must say
exactly what is wrong in one line (``file: $.json.path: what was expected``) instead of surfacing as a
KeyError deep inside a request.  Validation uses the JSON Schema shipped beside this module;
``jsonschema`` is imported lazily inside :func:`validate` so that importing ``fake_mcp`` stays
stdlib-only.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).with_name("scenario.schema.json")

_validator: Any = None

#: Digests of documents that passed :func:`validate` in this process (bounded). A suite builds the same scenario
#: documents again for every case and every session (a worker runs hundreds); the schema walk costs ~2 ms each,
#: the digest a tenth of that. Only valid documents are kept: an invalid one is refused again, with its line.
_VALID_SEEN: dict[bytes, None] = {}
_VALID_LOCK = threading.Lock()
_VALID_MAX = 4096


#: A scenario whose world holds nothing: views that must not read the backend (help, schema) run against it,
#: so a request they do make is seen in the transcript instead of being refused at a dead port.
EMPTY_WORLD: dict[str, Any] = {"name": "empty", "world": {}, "overrides": []}


class ScenarioError(ValueError):
    """An invalid scenario; ``str(exc)`` is the one-line ``source: $.path: expected ...`` message."""


def _json_path(parts: Any) -> str:
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}"
        else:
            out += "[" + json.dumps(part, ensure_ascii=False) + "]"
    return out


def _describe(value: Any) -> str:
    """Short rendering of the offending value for the error line."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _expected(error: Any) -> str | None:
    """The nearest ``x-expected`` phrase, walking out of anyOf/allOf branches."""
    while error is not None:
        schema = error.schema
        if isinstance(schema, dict) and "x-expected" in schema:
            return str(schema["x-expected"])
        error = error.parent
    return None


def _format(error: Any, source: str) -> str:
    path = list(error.absolute_path)
    expected = _expected(error)
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        what = f"missing required property {missing[0]!r}" if missing else "missing a required property"
        return f"{source}: {_json_path(path)}: {what}" + (f"; expected {expected}" if expected else "")
    if error.validator == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        where = _json_path(path + extra[:1])
        return f"{source}: {where}: unexpected property" + (f"; expected {expected}" if expected else "")
    if expected is None and error.validator == "type":
        wanted = error.validator_value
        expected = " or ".join(wanted) if isinstance(wanted, list) else str(wanted)
        expected = ("an " if expected[0] in "aeiou" else "a ") + expected
    if expected:
        return f"{source}: {_json_path(path)}: expected {expected}, got {_describe(error.instance)}"
    message = " ".join(str(error.message).split())
    return f"{source}: {_json_path(path)}: {message[:160]}"


def _get_validator() -> Any:
    global _validator
    if _validator is None:
        import jsonschema  # lazy: the only non-stdlib import of fake_mcp, needed for files only

        schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _validator = cls(schema)
    return _validator


def _digest(data: Any) -> bytes | None:
    """The document's content digest (key order included), or None when it is not plain JSON data."""
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return hashlib.blake2b(text.encode("utf-8"), digest_size=20).digest()


def validate(data: Any, source: str = "<scenario>") -> None:
    """Raise :class:`ScenarioError` with one line when ``data`` is not a valid scenario."""
    import jsonschema

    key = _digest(data)
    if key is not None and key in _VALID_SEEN:
        return
    error = jsonschema.exceptions.best_match(_get_validator().iter_errors(data))
    if error is not None:
        raise ScenarioError(_format(error, source))
    _check_semantics(data, source)
    if key is not None:
        with _VALID_LOCK:
            if len(_VALID_SEEN) >= _VALID_MAX:
                _VALID_SEEN.pop(next(iter(_VALID_SEEN)))
            _VALID_SEEN[key] = None


def _check_semantics(data: dict[str, Any], source: str) -> None:
    """Rules a schema cannot state: CIDs are unique across groups."""
    seen: dict[str, int] = {}
    for index, group in enumerate(data.get("world", {}).get("groups", [])):
        cid = group["cid"]
        if cid in seen:
            raise ScenarioError(f"{source}: $.world.groups[{index}].cid: expected a unique CID, "
                                f"{cid!r} is already used by $.world.groups[{seen[cid]}]")
        seen[cid] = index


def read_file(path: Path | str) -> Any:
    """Parse a JSON or TOML (by ``.toml`` suffix) scenario file; errors are one ScenarioError line."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{path}: $: cannot read scenario file ({exc.strerror or exc})") from None
    if path.suffix.lower() == ".toml":
        try:
            return tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"{path}: $: invalid TOML: {' '.join(str(exc).split())}") from None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: $: invalid JSON at line {exc.lineno} column {exc.colno}: "
                            f"{exc.msg}") from None
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ScenarioError(f"{path}: $: invalid JSON: {type(exc).__name__}") from None


@dataclass(frozen=True)
class Scenario:
    """A validated scenario.  Build one with :meth:`load`, :meth:`from_dict`, :meth:`build` or
    :meth:`builder`; all of them go through the same schema."""

    name: str
    world: dict[str, Any] = field(default_factory=dict)
    overrides: tuple[dict[str, Any], ...] = ()
    description: str = ""
    source: str = "<python>"
    #: How a tool the world does not model is answered: ``error`` (JSON-RPC -32602 "Unknown tool", the MCP
    #: specification's answer, so a client's fail-closed path is exercised) or ``empty`` (an empty success: for
    #: runs that judge only whether a command runs, e.g. the reviewed examples of every tool). A property of the
    #: server's answers, not of the world's state: it is outside ``world``.
    unmodelled: str = "error"

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> Scenario:
        validate(data, source)
        data = copy.deepcopy(data)
        return cls(name=data["name"], world=data.get("world", {}),
                   overrides=tuple(data.get("overrides", ())),
                   description=data.get("description", ""), source=source,
                   unmodelled=data.get("unmodelled", "error"))

    @classmethod
    def load(cls, path: Path | str) -> Scenario:
        return cls.from_dict(read_file(path), str(path))

    @classmethod
    def empty(cls) -> Scenario:
        """No groups, no overrides: every world tool answers with empty results."""
        return cls(name="empty")

    @classmethod
    def build(cls, name: str, *, overrides: list[dict[str, Any]] | None = None, description: str = "",
              **world: Any) -> Scenario:
        """One-call form: ``Scenario.build("x", groups=[...], contacts=[...], overrides=[...])``."""
        data: dict[str, Any] = {"name": name, "world": world, "overrides": list(overrides or [])}
        if description:
            data["description"] = description
        return cls.from_dict(data, f"<scenario {name}>")

    @classmethod
    def builder(cls, name: str, description: str = "") -> ScenarioBuilder:
        return ScenarioBuilder(name, description)

    @classmethod
    def coerce(cls, value: Scenario | dict[str, Any] | str | Path) -> Scenario:
        """Accept what ``FakeMCPServer.load`` accepts."""
        if isinstance(value, Scenario):
            return value
        if isinstance(value, dict):
            return cls.from_dict(value)
        if isinstance(value, (str, Path)):
            return cls.load(value)
        raise TypeError(f"cannot load a scenario from {type(value).__name__}")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "world": copy.deepcopy(self.world),
                                "overrides": copy.deepcopy(list(self.overrides))}
        if self.description:
            data["description"] = self.description
        if self.unmodelled != "error":
            data["unmodelled"] = self.unmodelled
        return data

    def with_overrides(self, *overrides: dict[str, Any]) -> Scenario:
        """A copy whose new overrides come FIRST, so they win over the scenario's own ones."""
        data = self.to_dict()
        data["overrides"] = list(overrides) + data["overrides"]
        return Scenario.from_dict(data, self.source)

    def dump(self, path: Path | str) -> None:
        """Write the scenario as a JSON file (round-trips through :meth:`load`)."""
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n",
                              encoding="utf-8")


class ScenarioBuilder:
    """Fluent construction of a scenario in Python; :meth:`build` validates like a file."""

    def __init__(self, name: str, description: str = "") -> None:
        self._data: dict[str, Any] = {"name": name, "world": {}, "overrides": []}
        if description:
            self._data["description"] = description

    def _list(self, key: str) -> list[Any]:
        return self._data["world"].setdefault(key, [])

    def group(self, cid: str, title: str, *, owner: str | None = None, members: Sequence[dict[str, Any]] = (),
              bots: Sequence[dict[str, Any]] = (), messages: Sequence[dict[str, Any]] = (),
              extra: dict[str, Any] | None = None) -> ScenarioBuilder:
        group: dict[str, Any] = {"cid": cid, "title": title, "members": list(members), "bots": list(bots),
                                 "messages": list(messages)}
        if owner is not None:
            group["owner"] = owner
        if extra:
            group["extra"] = extra
        self._list("groups").append(group)
        return self

    def conversation(self, cid: str, title: str, **fields: Any) -> ScenarioBuilder:
        self._list("conversations").append({"openConversationId": cid, "title": title, **fields})
        return self

    def contact(self, name: str, **fields: Any) -> ScenarioBuilder:
        self._list("contacts").append({"name": name, **fields})
        return self

    def at_me(self, message: dict[str, Any]) -> ScenarioBuilder:
        self._list("at_me").append(message)
        return self

    def direct_chat(self, open_dingtalk_id: str, messages: Sequence[dict[str, Any]] = (),
                    **fields: Any) -> ScenarioBuilder:
        self._list("direct_chats").append({"openDingtalkId": open_dingtalk_id,
                                           "messages": list(messages), **fields})
        return self

    def invite_url(self, cid: str, url: str | dict[str, Any]) -> ScenarioBuilder:
        self._data["world"].setdefault("invite_urls", {})[cid] = url
        return self

    def page_size(self, tool: str, size: int) -> ScenarioBuilder:
        self._data["world"].setdefault("page_sizes", {})[tool] = size
        return self

    def world(self, **fields: Any) -> ScenarioBuilder:
        """Set any other world key (``utc_offset_minutes``, ``now_ms``, ...)."""
        self._data["world"].update(fields)
        return self

    def override(self, tool: str, reply: dict[str, Any], **match: Any) -> ScenarioBuilder:
        """Append an override; ``match`` takes ``product``, ``call``, ``page``, ``args``."""
        self._data["overrides"].append({"tool": tool, "reply": reply,
                                        **{k: v for k, v in match.items() if v is not None}})
        return self

    def build(self) -> Scenario:
        return Scenario.from_dict(self._data, f"<scenario {self._data['name']}>")
