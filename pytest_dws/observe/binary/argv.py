"""Synthetic argv for the binary's tools: typed values for flags, required and one-of branches, examples.

Why: D2 §3 makes the schema (types, formats, enums, descriptions, constraints) the contract an agent reads, so
a value built from it must be accepted; a dry run or a probe built here proves a flag or a path is real
without the costly `--help` (docs/wire.md §7).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from typing import Any

from pytest_dws.observe.binary.worlds import (
    SYN_CID,
    SYN_GROUP,
    SYN_ODID,
    SYN_PERSON,
    SYN_TIME,
    SYN_TIME_END,
    SYN_USER,
    SYN_VALUE,
)
from pytest_dws.observe.calls import input_file

#: A flag no implementation defines: `<path> PROBE_FLAG` must fail with reason unknown_flag at the leaf.
PROBE_FLAG = "--dws-contract-probe-flag"

_FORMATS = {"date-time": SYN_TIME, "date": "2026-01-01", "positive-integer": "1", "numeric-id": "10001",
            "json": "{}", "a1-range": "A1:B2", "file-path": "synthetic.txt", "dingtalk-media-id": "media-synthetic",
            "file-id-name-list": "file-synthetic:synthetic.txt"}


# -- synthetic values and argv ------------------------------------------------------------------------------
def is_file_flag(name: str, spec: dict[str, Any] | None) -> bool:
    """A flag naming a local input file (`--file`, `--file-path`, `--records-file`, format file-path)."""
    low = name.lower()
    return (spec or {}).get("format") == "file-path" or low == "file" or low.endswith(("-file", "file-path"))


def synth(name: str, spec: dict[str, Any] | None, params: dict[str, Any] | None = None) -> str:
    """A typed synthetic value for flag `name` (its schema entry `spec`; ``params`` its siblings). Typed facts
    first (example, enum, format, type); then what the parameter's own description documents (a JSON shape, the
    accepted words, the ID kind), because D2 §3 makes the description part of the contract an agent reads."""
    spec = spec or {}
    if is_file_flag(name, spec):
        return _input_for(name, spec, params or {})
    if spec.get("example") not in (None, ""):
        return str(spec["example"])
    if spec.get("enum"):
        return str(spec["enum"][0])
    if spec.get("format") in _FORMATS:
        return SYN_TIME_END if name.startswith("end") and spec["format"] == "date-time" else _FORMATS[spec["format"]]
    typ = spec.get("type", "string")
    if typ in ("integer", "number"):
        listed = _NUMBER_LIST.search(str(spec.get("description") or ""))
        return listed.group(1) if listed else "1"
    if typ == "boolean":
        return "true"
    description = str(spec.get("description") or "")
    value = synth_for_name(name)
    if value == SYN_VALUE:
        value = described_value(description) or value
    m = _SUFFIX.search(description)  # `文件名，必须以 .md 结尾`
    suffix = (m.group(1) or m.group(2)) if m is not None else ""
    if suffix and not value.endswith(suffix):
        value += suffix
    return value


def _input_for(name: str, spec: dict[str, Any], params: dict[str, Any]) -> str:
    """The input-file mark for file flag `name`: the sibling parameter's example as content when there is one
    (`--contents-file` holds what `--contents` takes), else a file whose kind the name or description names."""
    text = f"{name} {spec.get('description') or ''}".lower()
    stem = re.sub(r"-?file(-path)?$", "", name)
    sibling = params.get(stem) or {}
    if stem and sibling.get("example") not in (None, ""):
        return input_file(f"synthetic-{stem}.json", str(sibling["example"]))
    if ".md" in text or "markdown" in text:
        return input_file("synthetic.md")
    if "xlsx" in text or "excel" in text:
        return input_file("synthetic.xlsx")
    if "groups" in name:
        return input_file("synthetic-groups.txt")
    if "record" in name or "json" in text:
        return input_file("synthetic-records.json")
    return input_file("synthetic.txt")


_SUFFIX = re.compile(r"以\s*(\.[A-Za-z0-9]+)\s*结尾|ends? with\s*(?:`|\")?(\.[A-Za-z0-9]+)")

_NUMBER_LIST = re.compile(r"(?<![\w.])(\d+)(?:\s*/\s*\d+)+(?![\w.])")  # `支持 300000/3600000/…`: the accepted values

_JSON_START = re.compile(r"[\[{]")

_QUOTED_FORMAT = re.compile(r'格式[为是]?[：:]?\s*["“]([^"”]+)["”]')

_WORD_LIST = re.compile(r"(?:[:：]|可选值|可选)\s*(?P<word>[A-Za-z][\w-]*)\s*(?:[/、,，]|=)|"
                        r"(?:^|[\s(（:：])(?P<pair>[A-Za-z][\w-]*)=\S")


_ID_KINDS = (("opendingtalkid", SYN_ODID), ("openconversationid", SYN_CID), ("openconversation_id", SYN_CID),
             ("userid", SYN_USER))


def described_value(description: str) -> str | None:
    """A value the description documents, or None: the first JSON literal it shows (`格式: [{"deptId":1}]`), an
    empty JSON array/object when it says the value is JSON, the first of the words it lists (`newer=…, older=…`,
    `day/halfDay/hour`, `可选值: user, bot`), a quoted shape (`格式 "原文=>替换"`), or the synthetic
    ID of the first ID kind it names (`单聊接收者 openDingTalkId`). Used only where the flag's name
    says nothing (:func:`synth_for_name` is generic)."""
    if "json" in description.lower():
        decoder = json.JSONDecoder()
        for opening in _JSON_START.finditer(description):
            try:
                value, _ = decoder.raw_decode(description, opening.start())
            except ValueError:
                continue
            if value:
                return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return "[]" if ("数组" in description or "array" in description.lower()) else "{}"
    quoted = _QUOTED_FORMAT.search(description)  # `格式 "原文=>替换"`: the documented shape is a valid value
    if quoted is not None:
        return quoted.group(1)
    m = _WORD_LIST.search(description)
    if m is not None:
        return m.group("word") or m.group("pair")
    low = description.lower()
    kinds = sorted((low.find(key), value) for key, value in _ID_KINDS if key in low)
    return kinds[0][1] if kinds else None


def synth_for_name(name: str) -> str:
    """A value chosen by the flag or placeholder name: stable IDs are CID-shaped, queries are names."""
    low = name.lower().replace("_", "-")
    if "query" in low or (low.endswith("name") and "file" not in low):
        return SYN_PERSON if ("user" in low or "sender" in low or "person" in low) else SYN_GROUP
    if "dingtalk" in low or "odid" in low:
        return SYN_ODID
    if "conversation" in low or low in ("group", "groups", "chat", "cid", "chat-id", "id") or "cid" in low:
        return SYN_CID
    if "user" in low or "sender" in low:
        return SYN_USER
    if low in ("start", "from", "since") or low.startswith("start"):
        return SYN_TIME
    if low in ("end", "to", "until") or low.startswith("end"):
        return SYN_TIME_END
    if low == "time":
        return "2026-01-01 00:00:00"
    if "url" in low:
        return "http://127.0.0.1:1/synthetic"
    if "days" in low or "limit" in low or "size" in low or "count" in low:
        return "1"
    return SYN_VALUE


def placeholder_value(token: str) -> str | None:
    """A value for a whole-token `<placeholder>` that names an ID type, else None (then the flag decides)."""
    m = re.fullmatch(r"<([^<>]+)>", token.strip())
    if m is None:
        return None
    low = m.group(1).lower().replace("_", "").replace("-", "")
    if "dingtalkid" in low or low == "odid":
        return SYN_ODID
    if "conversationid" in low or low in ("cid", "opencid"):
        return SYN_CID
    if low == "userid":
        return SYN_USER
    return None


def flag_args(name: str, spec: dict[str, Any] | None, params: dict[str, Any] | None = None) -> list[str]:
    """`--name=value` (the `=` form keeps boolean flags unambiguous)."""
    return [f"--{name}={synth(name, spec, params)}"]


def required_args(leaf: dict[str, Any], *, skip: Sequence[str] = (), one_of: dict[int, str] | None = None
                  ) -> list[str]:
    """Flags an execution needs, from the schema's typed constraints: every required parameter (except
    `skip`), one member of every require_one_of group (``one_of`` picks the member per group index; else the
    first one no mutually_exclusive group rules out), then the closure of require_together and `required_when`,
    then the required positional arguments (upstream's own schema smoke, scripts/dev/schema_command_smoke.py,
    selects its inputs the same way)."""
    params = leaf.get("parameters") or {}
    cons = leaf.get("constraints") or {}
    skipped = set(skip)
    chosen: list[str] = [n for n, p in sorted(params.items()) if p.get("required") and n not in skipped]
    picks = one_of or {}
    chosen += [m for m in picks.values() if m in params and m not in chosen]
    exclusive = [set(g) for g in cons.get("mutually_exclusive") or []]

    def excluded(name: str) -> bool:
        return any(name in g and any(c in g and c != name for c in chosen) for g in exclusive)

    for i, grp in enumerate(cons.get("require_one_of") or []):
        if any(m in chosen for m in grp):
            continue
        pick = picks.get(i) or next((m for m in grp if m not in skipped and not excluded(m)), grp[0] if grp else None)
        if pick and pick not in skipped and pick in params:
            chosen.append(pick)
    changed = True
    while changed:
        changed = False
        for grp in cons.get("require_together") or []:
            if any(m in chosen for m in grp):
                for m in grp:
                    if m not in chosen and m in params and m not in skipped:
                        chosen.append(m)
                        changed = True
        for name, spec in sorted(params.items()):
            if name not in chosen and name not in skipped and required_when_holds(
                    str(spec.get("required_when") or ""), params, chosen):
                chosen.append(name)
                changed = True
    out: list[str] = []
    for n in chosen:
        out += flag_args(n, params.get(n), params)
    # Required positional arguments (`positionals`, D2 §3's typed annotations include 位置参数), in index order.
    for pos in sorted((p for p in leaf.get("positionals") or [] if p.get("required")),
                      key=lambda p: int(p.get("index") or 0)):
        out.append(synth(str(pos.get("name") or "arg"), pos, params))
    return out


_WHEN_USED = re.compile(r"(?:--)?(?P<flag>[\w.-]+) is used")

_WHEN_ANY = re.compile(r"any (?P<prefix>[\w.-]+)\* flag is provided")

_WHEN_IS = re.compile(r"(?:--)?(?P<flag>[\w.-]+) is (?P<values>.+)")

_WHEN_EQ = re.compile(r"--(?P<flag>[\w.-]+)=(?P<value>\S+)")


def required_when_holds(expr: str, params: dict[str, Any], chosen: Sequence[str]) -> bool:
    """Whether a parameter's `required_when` condition holds for the flags ``chosen`` (with their synthetic
    values). The forms e81 uses: `X is A or B`, `--X is used`, `any X* flag is provided`, `--X=A or --X=B`;
    anything else is not understood and adds nothing."""
    expr = expr.strip()
    if not expr:
        return False

    def value(flag: str) -> str | None:
        spec = params.get(flag) or {}
        if flag in chosen:
            return synth(flag, spec, params)
        if spec.get("default") not in (None, ""):
            return str(spec["default"]).lower() if spec.get("type") == "boolean" else str(spec["default"])
        return "false" if spec.get("type") == "boolean" else None

    if (m := _WHEN_USED.fullmatch(expr)) is not None:
        return m.group("flag") in chosen
    if (m := _WHEN_ANY.fullmatch(expr)) is not None:
        return any(c.startswith(m.group("prefix")) for c in chosen)
    eqs = [_WHEN_EQ.fullmatch(part.strip()) for part in expr.split(" or ")]
    if all(eqs):
        return any(value(e.group("flag")) == e.group("value") for e in eqs if e is not None)
    if (m := _WHEN_IS.fullmatch(expr)) is not None:
        return value(m.group("flag")) in [v.strip() for v in m.group("values").split(" or ")]
    return False


_PLACEHOLDER = re.compile(r"<[^<>]+>")


def example_argv(example: str, leaf: dict[str, Any]) -> list[str]:
    """An example as argv (without `dws`), `<placeholders>` replaced by typed synthetic values."""
    try:
        tokens = shlex.split(example, comments=True)  # `dws … --format json   # Grid`: a shell comment
    except ValueError as exc:
        raise AssertionError(f"example is not a valid shell command ({exc}): {example}") from None
    if tokens[:1] == ["dws"]:
        tokens = tokens[1:]
    params = leaf.get("parameters") or {}
    out: list[str] = []
    prev_flag: str | None = None
    for tok in tokens:
        if _PLACEHOLDER.search(tok):
            if tok.startswith("--") and "=" in tok:
                name = tok[2:].split("=", 1)[0]
                tok = f"--{name}={synth(name, params.get(name), params)}"
            elif prev_flag is not None:
                typed = placeholder_value(tok)  # `--ref-sender <openDingTalkId>`: the placeholder names the type
                tok = typed if typed is not None else synth(prev_flag, params.get(prev_flag), params)
            else:
                tok = _PLACEHOLDER.sub(lambda m: synth_for_name(m.group(0)[1:-1]), tok)
        elif prev_flag is not None and _LOCAL_FILE.match(tok):
            tok = _example_file(tok)
        elif prev_flag is not None and tok.startswith("@") and _LOCAL_FILE.match(tok[1:]):  # `--csv @data.csv`
            tok = "@" + _example_file(tok[1:])
        elif tok.startswith("--") and "=" in tok and _LOCAL_FILE.match(tok.split("=", 1)[1]):
            tok = f"{tok.split('=', 1)[0]}={_example_file(tok.split('=', 1)[1])}"
        out.append(tok)
        prev_flag = tok[2:] if tok.startswith("--") and "=" not in tok else None
    return out


#: A literal local file in an example (`./report.pdf`, `/path/to/audit.jsonl`, `workflow.json`, `@data.csv`).
_LOCAL_FILE = re.compile(r"^(?:\./|/)?[\w./-]*\.(?:json|jsonl|csv|pdf|xlsx|xls|md|txt|png|jpg|docx|pptx|bin|dat)$",
                         re.IGNORECASE)


_FILE_TEXT = {".json": "{}\n", ".csv": "name,value\nsynthetic,1\n", ".md": "# 合成测试文件\n", ".jsonl": ""}


def _example_file(path: str) -> str:
    """The input-file mark for a file an example names: a file of that name (and a neutral content of its kind)
    in the invocation's working directory, as real commands read input files only there (docs/wire.md §8)."""
    name = path.rsplit("/", 1)[-1]
    return input_file(name, _FILE_TEXT.get("." + name.rsplit(".", 1)[-1].lower(), "synthetic\n"))
