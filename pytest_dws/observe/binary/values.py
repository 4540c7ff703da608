"""Typed synthetic values for the binary's flags, placeholders and input files: what the release says a value is.

Why: D2 §3 makes the schema (types, formats, enums, descriptions, constraints) the contract an agent reads, and D2
§5 makes every example run: a value built from what the release itself says about a parameter (its schema entry,
the literal its tool's examples give it, the interface fact behind the flag) must be accepted, so a refusal of
it is the release's finding, never the suite's guess (issue 38).
"""

from __future__ import annotations

import functools
import json
import re
import shlex
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

_FORMATS = {"date-time": SYN_TIME, "date": "2026-01-01", "positive-integer": "1", "numeric-id": "10001",
            "json": "{}", "a1-range": "A1:B2", "file-path": "synthetic.txt", "dingtalk-media-id": "media-synthetic",
            "file-id-name-list": "file-synthetic:synthetic.txt"}


# -- synthetic values and argv ------------------------------------------------------------------------------
def is_file_flag(name: str, spec: dict[str, Any] | None) -> bool:
    """A flag naming a local input file (`--file`, `--file-path`, `--records-file`, format file-path, or a
    description that calls its value a file path: `--batch` "批次配置 JSON 文件路径")."""
    low = name.lower()
    described = str((spec or {}).get("description") or "").lower()
    named = "文件路径" in described and not any(w in described for w in _NOT_AN_INPUT_PATH)
    return (spec or {}).get("format") == "file-path" or low == "file" or low.endswith(("-file", "file-path")) \
        or named


#: Words of a description whose "文件路径" is not an input file the flag reads: an output (`本地保存路径`, `输出到`)
#: or an alternative spelling of an inline value (`json 或 @文件路径`: the flag takes the value itself).
_NOT_AN_INPUT_PATH = ("@文件路径", "保存", "输出")


@functools.lru_cache(maxsize=8192)
def example_words(example: str) -> tuple[str, ...]:
    """An example's shell words (`# …` a comment), parsed once per session: every schema run of a tool types its
    values from its examples (:func:`example_literals`). ValueError for an unbalanced quote."""
    return tuple(shlex.split(example, comments=True))


def example_literals(leaf: dict[str, Any] | None) -> dict[str, str]:
    """Flag -> the first literal value the tool's own examples give it: the release's own word for a value that
    runs (D2 §5: every example runs). A `<placeholder>` or an unbracketed one (`BASE_ID`, `NODE_ID`: capitals
    joined by underscores) is not a literal; `ORG`, `FIXED`, `2026-04-01`, `'[{"code":"c"}]'` are."""
    out: dict[str, str] = {}
    for ex in (leaf or {}).get("examples") or []:
        try:
            tokens = example_words(str(ex))
        except ValueError:
            continue
        for i, tok in enumerate(tokens):
            if not tok.startswith("--") or len(tok) < 3:
                continue
            if "=" in tok:
                name, value = tok[2:].split("=", 1)
            elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                name, value = tok[2:], tokens[i + 1]
            else:
                continue
            if name not in out and value and not PLACEHOLDER.search(value) and not CAPS_PLACEHOLDER.fullmatch(value):
                # `--csv @data.csv`: a file the example reads, made in the working directory like the example's own
                out[name] = "@" + example_file(value[1:]) if value.startswith("@") and LOCAL_FILE.match(
                    value[1:]) else value
    return out


#: An unbracketed placeholder of an example (`BASE_ID`, `USER_ID_1`): capitals and digits joined by underscores.
CAPS_PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")

#: The values the synthetic world knows by name (groups, people, IDs): a literal must not replace them.
_WORLD_VALUES = frozenset({SYN_CID, SYN_GROUP, SYN_PERSON, SYN_USER, SYN_ODID})


def synth(name: str, spec: dict[str, Any] | None, params: dict[str, Any] | None = None,
          literals: dict[str, str] | None = None) -> str:
    """A typed synthetic value for flag `name` (its schema entry `spec`; ``params`` its siblings; ``literals`` the
    values the tool's own examples give its flags, :func:`example_literals`). What the release says about the
    parameter decides, strongest first: its schema example, enum and format; a date shape its description names
    (`格式 YYYY-MM-DD`); the synthetic world's names and IDs for a flag named for one; the example's literal for a
    string; the schema type, then the interface type (an integer or boolean RPC property behind a string flag);
    what the description documents (a JSON shape, the accepted words, a `如 #E8F2FE`). D2 §3 makes all of it the
    contract an agent reads: a value built from it must be accepted."""
    spec = spec or {}
    if is_file_flag(name, spec):
        return _input_for(name, spec, params or {}, literals or {})
    if spec.get("example") not in (None, ""):
        return str(spec["example"])
    if spec.get("enum"):
        return str(spec["enum"][0])
    if spec.get("format") in _FORMATS:
        return SYN_TIME_END if name.startswith("end") and spec["format"] == "date-time" else _FORMATS[spec["format"]]
    typ = spec.get("type", "string")
    description = str(spec.get("description") or "")
    dated = described_date(name, description)
    if dated is not None and typ not in ("integer", "number", "boolean"):
        return dated
    # a name guess never beats a description that calls the value JSON (`--user-tags` "标签列表 JSON 数组"); a person's
    # name is the synthetic person (`--member-query` "按姓名/花名唯一解析的初始成员": a person, not a group)
    by_name = SYN_VALUE if "json" in description.lower() else synth_for_name(name)
    if names_a_person(name, spec):
        by_name = SYN_PERSON
    literal = (literals or {}).get(name)
    if by_name not in _WORLD_VALUES and literal is not None and typ in ("string", "array"):
        return literal
    if typ in ("integer", "number"):
        listed = _NUMBER_LIST.search(description)
        return listed.group(1) if listed else "1"
    if typ == "boolean":
        return "true"
    value = by_name
    if value == SYN_VALUE:  # the CLI's own words first, then the interface fact behind the flag
        value = described_value(description) or _BY_INTERFACE.get(str(spec.get("interface_type"))) or value
    if value == "[]" and spec.get("required") and "[]" not in description:  # a required list holds something
        value = "[{}]"
    m = _SUFFIX.search(description)  # `文件名，必须以 .md 结尾`
    suffix = (m.group(1) or m.group(2)) if m is not None else ""
    if suffix and not value.endswith(suffix):
        value += suffix
    return value


#: A numeric ID for a string flag whose RPC property is a number (`--dept`, interface type integer).
SYN_NUMBER = "10001"

#: The value of a string flag whose RPC property (its interface type) is a boolean or a number.
_BY_INTERFACE = {"boolean": "true", "integer": SYN_NUMBER, "number": SYN_NUMBER}

_DATE_SHAPE = re.compile(r"(?i:yyyy)-MM-(?i:dd)(?P<time>[ T]HH:mm(?::ss)?)?")


def described_date(name: str, description: str) -> str | None:
    """The date its description names the shape of (`格式 YYYY-MM-DD`, `yyyy-MM-dd HH:mm:ss`; the first shape
    where it names several), the next day for an end (`--end`), else None."""
    m = _DATE_SHAPE.search(description)
    if m is None:
        return None
    day = "2026-01-02" if name.lower().startswith(("end", "to", "until")) else "2026-01-01"
    clock = m.group("time")
    if not clock:
        return day
    return day + clock[0] + ("00:00:00" if clock.endswith(":ss") else "00:00")


def _input_for(name: str, spec: dict[str, Any], params: dict[str, Any], literals: dict[str, str]) -> str:
    """The input-file mark for file flag `name`: the sibling parameter's example (schema or the tool's examples)
    as content when there is one (`--contents-file` holds what `--contents` takes), else a file whose kind the
    name or description names."""
    text = f"{name} {spec.get('description') or ''}".lower()
    stem = re.sub(r"-?file(-path)?$", "", name)
    sibling = params.get(stem) or {}
    if stem and sibling.get("example") not in (None, ""):
        return input_file(f"synthetic-{stem}.json", str(sibling["example"]))
    if stem and stem != name and literals.get(stem):
        return input_file(f"synthetic-{stem}.json", literals[stem])
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

#: The first of the words a description lists: `day/halfDay/hour`, `可选值: user, bot`, `FIXED（固定班制）/ TURN`,
#: `企业/全公司/所有人`, `newer=…, older=…` (a word may carry a parenthesised gloss before the separator).
_WORD_LIST = re.compile(r"(?:[:：]|可选值|可选|输入)\s*(?P<word>[A-Za-z\u4e00-\u9fff][\w\u4e00-\u9fff-]*)\s*"
                        r"(?:[(（][^()（）]*[)）])?\s*(?:[/、,，|]|=)|"
                        r"(?:^|[\s(（:：])(?P<pair>[A-Za-z][\w-]*)=\S")

#: A value the description gives as an instance: `背景纯色，如 #E8F2FE`, `e.g. 30s`, `例如 2026-03-14`.
_SUCH_AS = re.compile(r"(?:如|例如|比如|e\.g\.)\s*[:：]?\s*[`\"“']?(?P<value>#[0-9A-Fa-f]{3,8}|[A-Za-z0-9][\w.:+-]*)",
                      re.ASCII)

#: Both boolean words named (`true 开启，false 关闭`): the flag takes a boolean written as a word.
_BOOLEAN_WORDS = re.compile(r"\btrue\b.*\bfalse\b|\bfalse\b.*\btrue\b", re.IGNORECASE)


_ID_KINDS = (("opendingtalkid", SYN_ODID), ("openconversationid", SYN_CID), ("openconversation_id", SYN_CID),
             ("userid", SYN_USER))


def described_value(description: str) -> str | None:
    """A value the description documents, or None: the first JSON literal it shows (`格式: [{"deptId":1}]`), an
    empty JSON array/object when it says the value is JSON, a quoted shape (`格式 "原文=>替换"`), `true` when it
    names both boolean words, the first of the words it lists (`newer=…, older=…`, `day/halfDay/hour`,
    `可选值: user, bot`, `企业/全公司/所有人`), the synthetic ID of the first ID kind it names (`单聊接收者
    openDingTalkId`), or the instance it gives (`如 #E8F2FE`). Used only where the flag's name says nothing
    (:func:`synth_for_name` is generic)."""
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
    if _BOOLEAN_WORDS.search(description):
        return "true"
    m = _WORD_LIST.search(description)
    if m is not None:
        return m.group("word") or m.group("pair")
    low = description.lower()
    kinds = sorted((low.find(key), value) for key, value in _ID_KINDS if key in low)
    if kinds:
        return kinds[0][1]
    instance = _SUCH_AS.search(description)
    return instance.group("value") if instance is not None else None


#: The words of a description that call the value a person's name (`--who` "要查忙闲的人的姓名/花名", `按姓名唯一解析`).
_PERSON_NAME = re.compile(r"姓名|花名")


def names_a_person(name: str, spec: dict[str, Any] | None) -> bool:
    """Does flag ``name`` take a person's name: its description says so (姓名/花名), or its name does (`--user-query`,
    `--sender-query`: :func:`synth_for_name`)? Upstream resolves such a value to exactly one contact (81f67c8d
    internal/shortcut/targetresolver `ResolveUser`), so it must name a person of the world, never a group."""
    description = str((spec or {}).get("description") or "")
    if (spec or {}).get("type") in ("integer", "number", "boolean") or "json" in description.lower():
        return False
    guess = synth_for_name(name)  # a `--name` of a 同事 (colleague) is a person; `对方 userId（同事…）` stays an ID
    colleague = guess == SYN_GROUP and "同事" in description
    return _PERSON_NAME.search(description) is not None or guess == SYN_PERSON or colleague


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


PLACEHOLDER = re.compile(r"<[^<>]+>")


#: A literal local file in an example (`./report.pdf`, `/path/to/audit.jsonl`, `workflow.json`, `@data.csv`).
LOCAL_FILE = re.compile(r"^(?:\./|/)?[\w./-]*\.(?:json|jsonl|csv|pdf|xlsx|xls|md|txt|png|jpg|docx|pptx|bin|dat)$",
                         re.IGNORECASE)


_FILE_TEXT = {".json": "{}\n", ".csv": "name,value\nsynthetic,1\n", ".md": "# 合成测试文件\n", ".jsonl": ""}


def example_file(path: str, flag: str = "", params: dict[str, Any] | None = None,
                  literals: dict[str, str] | None = None) -> str:
    """The input-file mark for a file an example names: a file of that name in the invocation's working
    directory, as real commands read input files only there (docs/wire.md §8). Its content: what the release
    says the flag's sibling takes (`--contents-file ./report.json` holds a `--contents` value: its schema
    example, else the literal the tool's examples give it), else a neutral content of its kind."""
    name = path.rsplit("/", 1)[-1]
    stem = re.sub(r"-?file(-path)?$", "", flag)
    sibling = (params or {}).get(stem) or {}
    given = sibling.get("example") if sibling.get("example") not in (None, "") else (literals or {}).get(stem)
    if stem and stem != flag and given:
        return input_file(name, str(given))
    return input_file(name, _FILE_TEXT.get("." + name.rsplit(".", 1)[-1].lower(), "synthetic\n"))
