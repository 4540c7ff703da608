"""Unit tests of the pure helpers behind the schema/help gates: help parsing, typed synthetic values, example
argv, compact comparison, Skill command extraction."""

from __future__ import annotations

import pytest

from pytest_dws.gates.schcli.views import _compact_problems
from pytest_dws.observe.binary.argv import example_argv, required_args
from pytest_dws.observe.binary.helptext import parse_help, schema_flags
from pytest_dws.observe.binary.values import synth
from pytest_dws.observe.binary.worlds import SYN_CID, SYN_GROUP, SYN_ODID, SYN_PERSON, SYN_USER
from pytest_dws.observe.calls import input_file, materialise
from pytest_dws.observe.skills import command_of as _command

HELP = """按关键词搜索消息

Usage:
  dws chat +search-msg [flags]

Examples:
  dws chat +search-msg --query "周报"

Flags:
      --chat-query strings   按群名解析（可重复）
      --days int             回溯天数 (default 7)
      --cursor string        分页游标 (default "0")
  -h, --help                 help for +search-msg
      --no-enrich            不再富化

Global Flags:
      --dry-run         预览
      --format string   输出格式 (default "json")
      --json string     原始 JSON 请求体（payload）
"""


def test_parse_help_sections() -> None:
    h = parse_help(HELP)
    assert h.usage == "dws chat +search-msg [flags]"
    assert h.usage_is("chat +search-msg") and not h.usage_is("chat +search")
    assert {n: (f.type, f.default) for n, f in h.flags.items()} == {
        "chat-query": ("strings", None), "days": ("int", "7"), "cursor": ("string", "0"), "help": ("bool", None),
        "no-enrich": ("bool", None)}
    assert schema_flags(h) == {"chat-query", "days", "cursor", "no-enrich"}  # no execution controls, no --json


def test_help_flags_with_a_phrase_as_value_name_and_a_listed_json() -> None:
    """cf8cf95: cobra shows a backticked phrase as the value name (`--rooms room search`); a `--json` the schema
    lists is the command's input (`aitable view update filter --json`), not the generic escape hatch."""
    text = ("更新\n\nUsage:\n  dws x y [flags]\n\nFlags:\n"
            "      --json string                filter 数组 JSON\n"
            "      --rooms room search          会议室 roomId 列表\n"
            "      --title string               标题\n")
    h = parse_help(text)
    assert (h.flags["rooms"].type, h.flags["title"].type) == ("room search", "string")
    assert schema_flags(h) == {"rooms", "title"}
    assert schema_flags(h, {"json": {}, "rooms": {}, "title": {}}) == {"json", "rooms", "title"}


def test_parse_group_help_lists_commands() -> None:
    text = "群聊\n\nUsage:\n  dws chat [command]\n\nAvailable Commands:\n  +at-me   查看\n  group    群管理\n\nFlags:\n"
    assert parse_help(text).commands == ["+at-me", "group"]


def test_parse_the_decorated_root_help_of_the_real_builds() -> None:
    """Issue 35 (7): 81f67c8d and cf8cf95 print their root help with decorated headers and bulleted items, the
    products under a header naming services and the rest under one naming commands (the shape, as the
    recordings in ../shared/recordings hold it; the words here are ours)."""
    text = ("CLI · console\n────\n\n▍ Discovered MCP Services:\n\n  ● chat        群聊\n  ● aitable     表格\n\n"
            "▍ Usage:\n  • dws <service> [command] [flags]\n\n▍ Utility Commands:\n\n  • schema      渐进查看\n"
            "  • version     版本\n\n▍ Global Flags:\n\n  -f, --format string         输出格式\n"
            "  -y, --yes                   跳过确认\n\nNext: Use \"dws <service> --help\"\n")
    h = parse_help(text)
    assert h.commands == ["chat", "aitable", "schema", "version"]
    assert h.usage_is("") and sorted(h.inherited) == ["format", "yes"] and not h.flags


@pytest.mark.parametrize(("name", "spec", "value"), [
    ("group", {"type": "string"}, SYN_CID),
    ("conversation-id", {"type": "string"}, SYN_CID),
    ("chat-query", {"type": "array"}, SYN_GROUP),
    ("user-query", {"type": "string"}, SYN_PERSON),
    # a name its description calls a person's (81f67c8d contact +org --name "同事姓名/花名"): the synthetic person
    ("name", {"type": "string", "description": "同事姓名/花名（必填）"}, SYN_PERSON),
    ("member-query", {"type": "string", "description": "按姓名/花名唯一解析的初始成员"}, SYN_PERSON),
    ("name", {"type": "string", "description": "机器人名称"}, SYN_GROUP),
    ("limit", {"type": "integer"}, "1"),
    ("page-all", {"type": "boolean"}, "true"),
    ("member-types", {"type": "array", "enum": ["user", "bot"]}, "user"),
    ("start", {"type": "string", "format": "date-time"}, "2026-01-01T00:00:00+08:00"),
    ("time", {"type": "string", "example": "2026-01-01 00:00:00"}, "2026-01-01 00:00:00"),
    # Described values (e81 descriptions): only where the name says nothing.
    ("depts", {"type": "string", "description": '员工所属部门列表 JSON 数组（可选），格式: [{"deptId":1}]'},
     '[{"deptId":1}]'),
    ("criteria", {"type": "string", "description": "筛选条件，JSON 数组"}, "[]"),
    ("element", {"type": "string", "description": "块元素 JSON (高级)"}, "{}"),
    ("direction", {"type": "string", "description": "时间方向: newer=往现在拉，older=往以前拉"}, "newer"),
    ("unit", {"type": "string", "description": "假期单位：day/halfDay/hour（可选）"}, "day"),
    ("receiver", {"type": "string", "description": "单聊接收者 openDingTalkId（单聊时必填）"}, SYN_ODID),
    ("receiver", {"type": "string", "description": "接收者 userId；搜索匹配 openDingTalkId"}, SYN_USER),
    ("mute-time", {"type": "integer", "description": "禁言时长（毫秒），支持 300000/3600000/86400000"}, "300000"),
    ("name", {"type": "string", "description": "文件名，必须以 .md 结尾"}, SYN_GROUP + ".md"),
    ("base-id", {"type": "string", "description": "Base ID (必填)"}, "synthetic-value"),
    ("pair", {"type": "array", "description": '替换规则，格式 "原文=>替换"，可重复传多组（必填）'}, "原文=>替换"),
])
def test_synthetic_values_are_typed(name: str, spec: dict, value: str) -> None:
    assert synth(name, spec) == value


def test_synthetic_ids_are_cid_shaped() -> None:
    assert len(SYN_CID) >= 12 and SYN_CID.lower().startswith("cid")
    assert not SYN_GROUP.lower().startswith("cid")


def test_required_args_pick_one_member_per_group() -> None:
    leaf = {"parameters": {"group": {"type": "string"}, "user": {"type": "string"}, "text": {"type": "string",
                                                                                               "required": True}},
            "constraints": {"require_one_of": [["group", "user"]]}}
    assert required_args(leaf) == ["--text=synthetic-value", f"--group={SYN_CID}"]
    assert required_args(leaf, skip=["group"], one_of={0: "user"}) == ["--text=synthetic-value",
                                                                       "--user=user-synthetic-0001"]


def test_example_argv_replaces_placeholders_by_type() -> None:
    leaf = {"parameters": {"conversation-id": {"type": "string"}, "page-limit": {"type": "integer"}}}
    argv = example_argv("dws chat +chat-messages --conversation-id <openConversationId> --page-limit <n>", leaf)
    assert argv == ["chat", "+chat-messages", "--conversation-id", SYN_CID, "--page-limit", "1"]


def test_compact_comparison() -> None:
    full = {"canonical_path": "a.b", "name": "b", "effect": "read",
            "parameters": {"name": {"type": "string", "property": "p", "required": False}}}
    good = {"canonical_path": "a.b", "effect": "read", "parameters": {"name": {"type": "string", "required": False}}}
    out: list[str] = []
    _compact_problems(full, good, "t", out)
    assert out == []
    _compact_problems(full, {k: v for k, v in good.items() if k != "effect"}, "t", out)
    assert out == ["t: compact output lost ['effect']"]


@pytest.mark.parametrize(("text", "path", "tokens"), [
    ("dws chat +search-msg --query 周报 | jq .", "chat +search-msg", ("chat", "+search-msg", "--query", "周报")),
    ('dws chat group rename --id <openConversationId> --name "新名"', "chat group rename",
     ("chat", "group", "rename", "--id", SYN_CID, "--name", "新名")),
    ('dws schema --cli-path "chat +search-msg"', "schema", ("schema", "--cli-path", "chat +search-msg")),
])
def test_skill_command_extraction(text: str, path: str, tokens: tuple[str, ...]) -> None:
    assert _command(text) == (tokens, path)


def test_required_args_follow_the_typed_constraints() -> None:
    """require_one_of picks respect mutually_exclusive; require_together and required_when close the set."""
    leaf = {"parameters": {"scope": {"type": "string"}, "export-format": {"type": "string"},
                           "task-id": {"type": "string"},
                           "table-id": {"type": "string", "required_when": "scope is table or all"},
                           "name": {"type": "string", "required_when": "--content is used"},
                           "content": {"type": "string"},
                           "mute-time": {"type": "integer", "required_when": "off is false"},
                           "off": {"type": "boolean"}},
            "constraints": {"require_one_of": [["scope", "task-id"], ["export-format", "task-id"]],
                            "mutually_exclusive": [["task-id", "scope"], ["task-id", "export-format"]],
                            "require_together": [["scope", "export-format"]]}}
    names = lambda args: sorted(a[2:].split("=", 1)[0] for a in args)  # noqa: E731
    assert names(required_args(leaf, one_of={1: "task-id"})) == ["mute-time", "task-id"]
    assert names(required_args(leaf, one_of={0: "scope"})) == ["export-format", "mute-time", "scope"]
    leaf["parameters"]["scope"]["example"] = "all"
    assert "table-id" in names(required_args(leaf, one_of={0: "scope"}))
    leaf["parameters"]["content"]["required"] = True
    assert "name" in names(required_args(leaf, one_of={0: "scope"}))


def test_required_args_give_the_required_positionals_in_order() -> None:
    """cf8cf95 `devdoc article rag-pretest` refuses a run without its positional (`expects 1..1 argument(s)`)."""
    leaf = {"parameters": {"keyword": {"type": "string", "required": True}},
            "positionals": [{"name": "page", "index": 1, "required": True, "type": "integer"},
                            {"name": "keyword", "index": 0, "required": True, "type": "string"},
                            {"name": "extra", "index": 2, "required": False, "type": "string"}]}
    value = synth("keyword", {"type": "string"})
    assert required_args(leaf) == [f"--keyword={value}", value, "1"]


def test_input_files_are_relative_to_the_working_directory() -> None:
    args, files = materialise(("--file=" + input_file("synthetic.md"), "--contents-file",
                               input_file("c.json", '[{"k":1}]'), "--text=x"))
    assert args == ("--file=synthetic.md", "--contents-file", "c.json", "--text=x")
    assert files == {"synthetic.md": "# 合成测试文件\n", "c.json": '[{"k":1}]'}
    leaf = {"parameters": {"contents": {"type": "string", "example": '[{"key":"work"}]'},
                           "contents-file": {"type": "string"}}}
    assert synth("contents-file", leaf["parameters"]["contents-file"], leaf["parameters"]) == input_file(
        "synthetic-contents.json", '[{"key":"work"}]')


def test_help_types_follow_pflag_value_names() -> None:
    """A Go duration flag is typed on the command line as one text, so its schema type is string (81f67c8d
    `event consume --duration`, Help `duration`); an integer flag is never a schema string."""
    from pytest_dws.gates.sch.flags import help_type_problems

    h = parse_help("Usage:\n  dws event consume [flags]\n\nFlags:\n"
                   "      --duration duration   运行时长上限\n      --limit int   条数\n")
    assert help_type_problems(h, {"duration": {"type": "string"}, "limit": {"type": "integer"}}) == []
    assert help_type_problems(h, {"limit": {"type": "string"}}) == ["--limit: schema type 'string' vs Help type 'int'"]


@pytest.mark.parametrize(("name", "spec", "literals", "value"), [
    # issue 38: what the release says decides (81f67c8d refusals of the suite's old guesses)
    ("start", {"type": "string", "description": "起始日期，格式 YYYY-MM-DD (必填)"}, {}, "2026-01-01"),
    ("end", {"type": "string", "description": "结束时间, 格式 yyyy-MM-dd HH:mm:ss（必填）"}, {}, "2026-01-02 00:00:00"),
    ("enabled", {"type": "string", "description": "分享开关：true 开启，false 关闭 (必填)"}, {}, "true"),
    ("type", {"type": "string", "description": "考勤组类型：FIXED（固定班制）/ TURN（排班制）（必填）"}, {}, "FIXED"),
    ("scope", {"type": "string", "description": "全局范围确认，必须明确输入：企业/全公司/所有人（必填）"}, {}, "企业"),
    ("color", {"type": "string", "description": "背景纯色，如 #E8F2FE (必填)"}, {}, "#E8F2FE"),
    ("dept", {"type": "string", "description": "部门 ID (必填)", "interface_type": "integer"}, {}, "10001"),
    ("direction", {"type": "string", "description": "时间方向: newer=往现在拉，older=往以前拉",
                   "interface_type": "boolean"}, {}, "newer"),  # the CLI's own words before the interface fact
    ("category-ids", {"type": "string", "description": "分组 ID 列表，逗号分隔 (必填)"}, {"category-ids": "123,456"},
     "123,456"),
    ("user-tags", {"type": "string", "description": "标签列表 JSON 数组 (必填)"},
     {"user-tags": '[{"code":"code1"}]'}, '[{"code":"code1"}]'),
    ("items", {"type": "string", "description": "设置项 JSON 数组 (必填)", "required": True}, {}, "[{}]"),
    ("json", {"type": "string", "description": "JSON 数组（传 [] 清空）(必填)", "required": True}, {}, "[]"),
    ("group", {"type": "string"}, {"group": "项目群"}, SYN_CID),  # a world name is never replaced by a literal
    # a person's name is the synthetic person (issue 38 N5), never the example's 张三 nor a group's name
    ("member-query", {"type": "array", "description": "按姓名/花名唯一解析的初始成员，可逗号分隔或重复传入"},
     {"member-query": "张三,李四"}, SYN_PERSON),
    ("who", {"type": "string", "description": "要查忙闲的人的姓名/花名（必填）"}, {"who": "张三"}, SYN_PERSON),
    ("name", {"type": "string", "description": "同事姓名/花名（必填）"}, {"name": "张三"}, SYN_PERSON),
    ("chat-query", {"type": "string", "description": "按群名解析唯一 openConversationId"}, {}, SYN_GROUP),
    ("dept", {"type": "string", "description": "部门名/关键词（必填）"}, {"dept": "技术部"}, "技术部"),
    ("base-id", {"type": "string"}, {}, "synthetic-value"),
])
def test_synthetic_values_follow_what_the_release_says(name: str, spec: dict, literals: dict, value: str) -> None:
    assert synth(name, spec, None, literals) == value


def test_example_literals_skip_placeholders() -> None:
    from pytest_dws.observe.binary.values import example_literals

    leaf = {"examples": ["dws x y --base-id BASE_ID --view-id <VIEW_ID> --share-type ORG --start 2026-04-01 --flag",
                         "dws x y --share-type PUBLIC --csv @data.csv"]}
    lits = example_literals(leaf)
    assert lits["share-type"] == "ORG" and lits["start"] == "2026-04-01"
    assert "base-id" not in lits and "view-id" not in lits and "flag" not in lits
    assert lits["csv"].startswith("@{dws-input:data.csv")


def test_a_one_of_member_that_is_a_positional_is_given_as_one() -> None:
    """81f67c8d `pat chmod`: require_one_of [scope (a positional), product, ...]; without it `requires at least 1
    arg(s)` (the suite gave nothing)."""
    leaf = {"parameters": {"product": {"type": "array"}},
            "positionals": [{"name": "scope", "index": 0, "required": False, "type": "array"}],
            "constraints": {"require_one_of": [["scope", "product"]]}}
    assert required_args(leaf) == ["synthetic-value"]
    assert required_args(leaf, one_of={0: "product"}) == ["--product=synthetic-value"]


def test_a_dry_run_plan_request_is_not_a_write() -> None:
    from fake_mcp import is_write_call

    assert is_write_call("pat.batch_plan", {"dryRun": False}) and is_write_call("update_draft", None)
    assert not is_write_call("pat.batch_plan", {"dryRun": True}) and not is_write_call("get_x", None)
