"""Structural validation of the artifacts against the JSON Schemas in ``pytest_dws/inputs/catalog/schemas/``.

The schemas (Draft 2020-12) are the single description of every artifact. Validating a 25 MB catalog with
the generic ``jsonschema`` machinery costs about as much as parsing it, so each schema is also *compiled*
once into a plain Python predicate (straight-line code for the small keyword subset the schemas use). The
predicate decides validity; only when it rejects a document does ``jsonschema`` run, to name the first error
by JSON path. Both read the same schema files, and the self-tests check they agree.

The division of labour: schemas check *types and structure* (so gates can read fields without crashing);
gates check *presence and values* (a missing ``effect`` or an unknown ``risk`` is a SCH-AGENT-FIELDS
failure, not an input error).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError

SCHEMA_DIR = Path(__file__).with_name("schemas")

#: Keywords that carry no validation.
_ANNOTATIONS = {"$schema", "$id", "$comment", "title", "description", "examples", "default", "$defs"}
_TYPES = {
    "string": "type({v}) is str",
    "integer": "(type({v}) is int or (type({v}) is float and {v}.is_integer()))",
    "number": "type({v}) in (int, float)",
    "boolean": "({v} is True or {v} is False)",
    "null": "{v} is None",
    "object": "type({v}) is dict",
    "array": "type({v}) is list",
}


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """The parsed schema ``schemas/<name>.json``."""
    return json.loads((SCHEMA_DIR / f"{name}.json").read_text(encoding="utf-8"))


def _resolve(ref: str, base: str) -> tuple[str, dict[str, Any]]:
    """``(schema name, subschema)`` for ``$ref`` values ``other.json``, ``other.json#/$defs/x``, ``#/$defs/x``."""
    file, _, pointer = ref.partition("#")
    name = file.removesuffix(".json") if file else base
    node: Any = schema(name)
    for token in filter(None, pointer.split("/")):
        node = node[token.replace("~1", "/").replace("~0", "~")]
    return name, node


class _Compiler:
    """Turns a schema (keyword subset) into Python source, one function per distinct subschema."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.consts: dict[str, Any] = {}
        self._keep: list[Any] = []  # keeps subschemas alive so id() keys stay unique

    def function(self, node: dict[str, Any], base: str) -> str:
        key = id(node)
        if key in self.names:
            return self.names[key]
        name = f"_v{len(self.names)}"
        self.names[key] = name
        self._keep.append(node)
        body: list[str] = []
        self._emit(node, base, "x", body, 1)
        self.lines += [f"def {name}(x):", *body, "    return True", ""]
        return name

    def _const(self, value: Any) -> str:
        name = f"_c{len(self.consts)}"
        self.consts[name] = value
        return name

    def _check(self, node: Any, base: str, v: str) -> str:
        """An expression that is true when ``v`` satisfies ``node`` (inlined for plain type checks)."""
        if node is True or node == {}:
            return "True"
        if node is False:
            return "False"
        keys = set(node) - _ANNOTATIONS
        if keys == {"type"} and isinstance(node["type"], str):
            return _TYPES[node["type"]].format(v=v)
        if keys == {"type", "minLength"} and node["type"] == "string":
            return f"(type({v}) is str and len({v}) >= {int(node['minLength'])})"
        if "$ref" in node and len(set(node) - _ANNOTATIONS) == 1:
            ref_base, target = _resolve(node["$ref"], base)
            return f"{self.function(target, ref_base)}({v})"
        return f"{self.function(node, base)}({v})"

    def _emit(self, node: dict[str, Any], base: str, v: str, out: list[str], depth: int) -> None:
        pad = "    " * depth
        unknown = set(node) - _ANNOTATIONS - {
            "type", "required", "properties", "additionalProperties", "items", "enum", "const", "minLength",
            "minItems", "pattern", "minimum", "anyOf", "$ref", "propertyNames",
        }
        if unknown:
            raise ValueError(f"schema keyword(s) not supported by the compiled validator: {sorted(unknown)}")
        if "$ref" in node:
            ref_base, target = _resolve(node["$ref"], base)
            out.append(f"{pad}if not {self.function(target, ref_base)}({v}): return False")
        known = node.get("type") if isinstance(node.get("type"), str) else None
        if "type" in node:
            types = node["type"] if isinstance(node["type"], list) else [node["type"]]
            expr = " or ".join(_TYPES[t].format(v=v) for t in types)
            out.append(f"{pad}if not ({expr}): return False")
        if "enum" in node:
            values = node["enum"]
            if not all(isinstance(e, str) for e in values):
                raise ValueError("compiled enum supports strings only")
            out.append(f"{pad}if not (type({v}) is str and {v} in {self._const(frozenset(values))}): return False")
        if "const" in node:
            c = node["const"]
            out.append(f"{pad}if not ({v} == {self._const(c)} and type({v}) is type({self._const(c)})): "
                       "return False")
        if "anyOf" in node:
            alts = " or ".join(f"({self._check(a, base, v)})" for a in node["anyOf"])
            out.append(f"{pad}if not ({alts}): return False")
        if "minLength" in node:
            guard = "" if known == "string" else f"type({v}) is str and "
            out.append(f"{pad}if {guard}len({v}) < {int(node['minLength'])}: return False")
        if "pattern" in node:
            out.append(f"{pad}if type({v}) is str and not {self._const(re.compile(node['pattern']))}"
                       f".search({v}): return False")
        if "minimum" in node:
            out.append(f"{pad}if type({v}) in (int, float) and type({v}) is not bool and {v} < {node['minimum']!r}:"
                       " return False")
        if "minItems" in node:
            out.append(f"{pad}if type({v}) is list and len({v}) < {int(node['minItems'])}: return False")
        if "items" in node:
            check = self._check(node["items"], base, "i")
            if check != "True":
                if known == "array":
                    out.append(f"{pad}for i in {v}:")
                    out.append(f"{pad}    if not ({check}): return False")
                else:
                    out.append(f"{pad}if type({v}) is list:")
                    out.append(f"{pad}    for i in {v}:")
                    out.append(f"{pad}        if not ({check}): return False")
        obj = [k for k in ("required", "properties", "additionalProperties", "propertyNames") if k in node]
        if obj:
            inner = pad
            if known != "object":
                out.append(f"{pad}if type({v}) is dict:")
                inner = pad + "    "
            for key in node.get("required", []):
                out.append(f"{inner}if {key!r} not in {v}: return False")
            props: dict[str, Any] = node.get("properties", {})
            for key, sub in props.items():
                check = self._check(sub, base, "p")
                if check != "True":
                    out.append(f"{inner}p = {v}.get({key!r}, _MISSING)")
                    out.append(f"{inner}if p is not _MISSING and not ({check}): return False")
            if "propertyNames" in node:
                check = self._check(node["propertyNames"], base, "k")
                out.append(f"{inner}for k in {v}:")
                out.append(f"{inner}    if not ({check}): return False")
            extra = node.get("additionalProperties", True)
            if extra is False:
                out.append(f"{inner}if not {v}.keys() <= {self._const(frozenset(props))}: return False")
            elif extra is not True and extra != {}:
                check = self._check(extra, base, "p")
                if props:
                    out.append(f"{inner}known = {self._const(frozenset(props))}")
                    out.append(f"{inner}for k, p in {v}.items():")
                    out.append(f"{inner}    if k not in known and not ({check}): return False")
                else:
                    out.append(f"{inner}for p in {v}.values():")
                    out.append(f"{inner}    if not ({check}): return False")


@functools.cache
def compiled(name: str, pointer: str = "") -> Callable[[Any], bool]:
    """The compiled predicate of ``schemas/<name>.json`` (or of the subschema at ``#pointer``)."""
    compiler = _Compiler()
    base, node = _resolve(f"{name}.json#{pointer}", name)
    entry = compiler.function(node, base)
    namespace: dict[str, Any] = {"_MISSING": object(), **compiler.consts}
    exec("\n".join(compiler.lines), namespace)  # code generated from our own schema files
    namespace.update(compiler.consts)
    return namespace[entry]


@functools.cache
def _jsonschema_validator(name: str, pointer: str = "") -> Any:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resources = [(p.name, Resource.from_contents(schema(p.stem))) for p in sorted(SCHEMA_DIR.glob("*.json"))]
    registry: Registry = Registry().with_resources(resources)
    root = {"$ref": f"{name}.json#{pointer}"}
    return Draft202012Validator(root, registry=registry)


def first_error(name: str, value: Any, pointer: str = "") -> tuple[list[Any], str] | None:
    """``(path, message)`` of the most relevant ``jsonschema`` error, or None if the value is valid."""
    from jsonschema.exceptions import best_match

    validator = _jsonschema_validator(name, pointer)
    error = best_match(validator.iter_errors(value))
    if error is None:
        return None
    return list(error.absolute_path), error.message


def check(name: str, value: Any, where: str, *, prefix: tuple[Any, ...] = (), pointer: str = "") -> None:
    """Raise a one-line :class:`DwsInputError` if ``value`` does not match schema ``name``.

    ``prefix`` is the JSON path of ``value`` inside its file (for per-tool validation of a big map).
    """
    if compiled(name, pointer)(value):
        return
    found = first_error(name, value, pointer)
    if found is None:  # the compiled predicate is stricter in corner cases (e.g. 1.0 as integer): accept
        return
    from pytest_dws.inputs.catalog.jsonio import jpath

    path, message = found
    raise DwsInputError(where, jpath(*prefix, *path), f"does not match schema {name}: {_short(message)}")


def _short(message: str, limit: int = 160) -> str:
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 3] + "..."
