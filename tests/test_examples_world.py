"""The examples world names each person of the release's examples once (issue 38, group C).

Upstream resolves a person's name to exactly one contact of the backend's search (81f67c8d
internal/shortcut/targetresolver `ResolveUser` → `selectUsers`: any other count is `resolution_ambiguous` or
`resolution_not_found`, an exact name is not preferred among several candidates; only `ResolveChat` prefers the
exact group title). The backend's search matches substrings, and fake_mcp keeps it so. So the world, not the
search, must make each person name unique: these tests show the search's semantics, the world's construction from
example literals, and, on the real 81f67c8d catalog (the upstream-data tier), that 张三, 李四 and 王五 are one
candidate each (the world before issue 38's group C gave 张三 seven).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fake_mcp.world import World as FakeWorld
from pytest_dws.observe.binary.examples import ExamplesWorld, example_values, is_name, literal_names
from pytest_dws.observe.binary.views import BinSchema
from pytest_dws.observe.binary.worlds import SYN_GROUP, SYN_PERSON, synthetic_world

PERSON = {"type": "string", "description": "同事姓名/花名（必填）"}
PEOPLE = {"type": "array", "description": "执行人姓名/花名，逗号分隔（如 张三,李四）（必填）"}


def candidates(world: dict[str, Any], name: str) -> list[str]:
    """The names the fake backend's contact search answers for ``name`` (the rows upstream's ResolveUser counts)."""
    payload = FakeWorld(world["world"], unmodelled=world["unmodelled"]).call(
        "contact", "search_contact_by_key_word", {"keyword": name})
    return sorted(row["name"] for row in payload["result"])


# -- fake_mcp: the search's semantics -------------------------------------------------------------------------------
def test_contact_search_matches_substrings_and_prefers_no_exact_name() -> None:
    """A name contained in another is answered with both (the backend does not disambiguate: the resolver refuses
    it), a name no other contains with itself alone, an unknown name with none."""
    world = synthetic_world("t", set(), {"张三", "张三丰", "李四"})
    assert candidates(world, "张三") == ["张三", "张三丰"]
    assert candidates(world, "张三丰") == ["张三丰"]
    assert candidates(world, "李四") == ["李四"]
    assert candidates(world, "王五") == []


def test_contact_search_rows_carry_both_identities() -> None:
    """Each row has the userId and openDingtalkId upstream's ExtractUsers reads (a row without either is dropped;
    `+dm` and `+share-doc` need the openDingTalkId, the others the userId)."""
    world = synthetic_world("t", set(), {"张三"})
    row = FakeWorld(world["world"]).call("contact", "search_contact_by_key_word", {"keyword": "张三"})["result"][0]
    assert row["userId"] and row["openDingtalkId"] and row["name"] == "张三"


# -- the world's construction ---------------------------------------------------------------------------------------
def leaf(path: str, params: dict[str, Any], *examples: str) -> dict[str, Any]:
    return {"primary_cli_path": path, "parameters": params, "examples": list(examples)}


LEAVES = [
    leaf("todo +assign-multi", {"to": PEOPLE, "task": {"type": "string"}},
         'dws todo +assign-multi --to "张三,李四" --task "周五前提交排期"'),
    leaf("calendar +free", {"who": PERSON}, "dws calendar +free --who 王五 --start 2026-03-10T14:00:00+08:00"),
    leaf("sheet append", {"values": {"type": "string"}, "node": {"type": "string"}},
         """dws sheet append --node <NODE_ID> --values '[["张三","销售部",50000]]'"""),
    leaf("minutes +replace-batch", {"pair": {"type": "array"}}, 'dws minutes +replace-batch --pair "张三=>张三丰"'),
    leaf("contact user update", {"org-user-name": {"type": "string", "description": "员工在企业内的名称（可选）"},
                                 "user-id": {"type": "string"}},
         'dws contact user update --user-id user001 --org-user-name "张三三"'),
    leaf("contact +by-mobile", {"mobile": {"type": "string", "description": "手机号（必填）"}},
         "dws contact +by-mobile --mobile 13800138000"),
    leaf("chat +send-to-group", {"group": {"type": "string"}, "page-all": {"type": "boolean"}},
         'dws chat +send-to-group --page-all --group "项目冲刺" --url https://docs.dingtalk.com/x --mail a@b.com'),
    leaf("event consume", {"flatten": {"type": "boolean"}},
         "dws event consume user_im_message_receive_user --flatten --base BASE_ID --date 2026-03-03"),
]


def test_only_names_become_groups_and_only_person_names_persons() -> None:
    """A person is a value of a flag the release calls a person's name, split where the CLI splits it; a group is
    any value that reads as a name: never JSON, a pair, a number or mobile, a date, a URL, an e-mail, a path word or
    a `KEY_ID` placeholder. `--org-user-name 张三三` is a user's name by the flag's name, but contains 张三."""
    groups, people = literal_names(LEAVES)
    assert people == {"张三", "李四", "王五"}
    assert groups == {"周五前提交排期", "user001", "项目冲刺", "user_im_message_receive_user"}


def test_a_person_name_that_contains_another_is_left_out() -> None:
    """张三丰 would make 张三 two candidates: of the two, the name the other contains is kept."""
    _, people = literal_names([leaf("contact +lookup", {"name": PERSON}, "dws contact +lookup --name 张三",
                                    "dws contact +lookup --name 张三丰")])
    assert people == {"张三"}


def test_example_values_skip_the_command_path_and_boolean_flags() -> None:
    got = list(example_values("dws event consume k1 --flatten k2 --max-events 1 --x=y", LEAVES[-1]))
    assert got == [(None, "k1"), (None, "k2"), ("max-events", "1"), ("x", "y")]


@pytest.mark.parametrize("value", ['[["张三"]]', "张三=>张三丰", "我->汐峰", "张三,李四", "13800138000", "2026-03-03",
                                   "2026-03-10T14:00:00+08:00", "https://x.invalid", "a@b.com", "subject:周报",
                                   "A1:B2", "BASE_ID", "cidABCDEFGHIJ", "# 标题", ""])
def test_values_that_are_not_names(value: str) -> None:
    assert not is_name(value)


@pytest.mark.parametrize("value", ["张三", "Q1 项目冲刺群", "alice", "项目A群"])
def test_values_that_are_names(value: str) -> None:
    assert is_name(value)


class _Ctx:
    """The one thing ExamplesWorld reads of a session: the binary's catalog (``bin_schema``, memoised)."""

    def __init__(self, tools: dict[str, dict[str, Any]]) -> None:
        self.view = BinSchema({"products": []}, "e81", tools, [])

    def memo(self, key: Any, build: Any) -> Any:
        return self.view


def test_the_world_is_built_deterministically_with_the_synthetic_names() -> None:
    """Part of every example run's recording key: the same catalog gives the same document, whatever the order."""
    one = ExamplesWorld().build(_Ctx({f"t{i}": lf for i, lf in enumerate(LEAVES)}))  # type: ignore[arg-type]
    two = ExamplesWorld().build(_Ctx({f"t{i}": lf for i, lf in enumerate(reversed(LEAVES))}))  # type: ignore[arg-type]
    assert one == two
    assert SYN_GROUP in {g["title"] for g in one["world"]["groups"]}
    assert candidates(one, SYN_PERSON) == [SYN_PERSON] and candidates(one, "张三") == ["张三"]


# -- the real 81f67c8d catalog (upstream-data tier) -----------------------------------------------------------------
#: The tools of report-h38 §2c group C: their examples resolve persons by name.
GROUP_C = ["calendar.shortcut_book", "calendar.shortcut_free", "calendar.shortcut_invite",
           "calendar.shortcut_suggest_time", "chat.shortcut_dm", "chat.shortcut_chat_create", "contact.shortcut_lookup",
           "contact.shortcut_org", "contact.shortcut_team", "doc.shortcut_share_doc", "todo.shortcut_assign",
           "todo.shortcut_assign_multi"]


@pytest.fixture(scope="module")
def e81_tools(upstream: Path) -> dict[str, dict[str, Any]]:
    from pytest_dws.inputs.catalog import load_release

    return load_release(upstream / "dws-81f67c8d").tools


def test_the_81f67c8d_examples_world_names_each_person_once(e81_tools: dict[str, dict[str, Any]]) -> None:
    """Every person name of every group-C example is exactly one candidate of the examples world's search (the
    world of 779b395-d628ffd gave 张三 7, 李四 3, and made each of the 1,080 literal words a person)."""
    world = ExamplesWorld().build(_Ctx(e81_tools))  # type: ignore[arg-type]
    from pytest_dws.observe.binary.values import names_a_person

    asked = set()
    for key in GROUP_C:
        tool = e81_tools[key]
        for ex in tool["examples"]:
            for flag, value in example_values(ex, tool):
                if flag is not None and names_a_person(flag, tool["parameters"].get(flag)):
                    asked |= set(value.split(","))
    assert asked == {"张三", "李四", "王五"}
    assert {name: candidates(world, name) for name in sorted(asked)} == {n: [n] for n in sorted(asked)}
    assert len(world["world"]["contacts"]) == 5  # 张三 李四 王五 alice and the synthetic person


def test_the_81f67c8d_required_runs_type_the_synthetic_person(e81_tools: dict[str, dict[str, Any]]) -> None:
    """A required-flag or one-of run types a person's name as the synthetic person, which the synthetic and the
    examples world both hold once: never an example's 张三 the synthetic world lacks, nor a group's name (N5:
    `chat +chat-create --member-query`)."""
    from pytest_dws.gates.sch.examples import _branch_calls
    from pytest_dws.gates.sch.flags import _required_calls
    from pytest_dws.observe.binary.values import names_a_person

    calls = [c for key in GROUP_C for c in _required_calls(e81_tools[key]).values()]
    calls += [c for _, _, a, b in _branch_calls(e81_tools["chat.shortcut_chat_create"]) for c in (a, b)]
    typed = {}
    for call in calls:
        path = call.args[:2]
        tool = next(t for t in e81_tools.values() if t["primary_cli_path"].split() == list(path))
        for arg in call.args:
            flag, _, value = arg[2:].partition("=")
            if arg.startswith("--") and names_a_person(flag, tool["parameters"].get(flag)):
                typed[f"{' '.join(path)} --{flag}"] = value
    assert set(typed.values()) == {SYN_PERSON}
    assert "chat +chat-create --member-query" in typed and "calendar +free --who" in typed
    assert candidates(synthetic_world("s", {SYN_GROUP}, {SYN_PERSON}), SYN_PERSON) == [SYN_PERSON]
    assert candidates(ExamplesWorld().build(_Ctx(e81_tools)), SYN_PERSON) == [SYN_PERSON]  # type: ignore[arg-type]


# -- the world of a required-flag or one-of run --------------------------------------------------------------------
TODO_DONE = leaf("todo +todo-done", {"task": {"type": "string", "required": True, "description": "待办标题关键词"},
                                     "dimension": {"type": "string", "enum": ["ROWS", "COLUMNS"]},
                                     "hidden": {"type": "boolean"}, "to": PERSON},
                 "dws todo +todo-done --task 周报 --dimension ROWS --hidden true --to 张三")


@pytest.mark.parametrize(("args", "world"), [
    (["--task=周报"], "examples"),  # an example's name: the examples world holds the todo it names
    (["--task=synthetic-value"], "synthetic"),
    (["--dimension=ROWS", "--hidden=true"], "synthetic"),  # the schema gives these anyway: no example's name
    ([f"--to={SYN_PERSON}"], "synthetic"),  # a person is the synthetic one, which both worlds hold
])
def test_a_run_happens_in_the_world_its_values_name(args: list[str], world: str) -> None:
    from pytest_dws.observe.binary.examples import world_for

    assert world_for(TODO_DONE, args).name == world


def test_required_runs_name_their_world() -> None:
    from pytest_dws.gates.sch.flags import _required_calls

    calls = _required_calls(TODO_DONE)
    assert [c.args for c in calls.values()] == [("todo", "+todo-done", "--task=周报", "--dry-run"),
                                                ("todo", "+todo-done")]
    assert [c.scenario.name for c in calls.values() if c.scenario is not None] == ["examples", "synthetic"]


def test_the_81f67c8d_recording_holds_each_run_in_the_world_it_is_planned_in(
        e81_tools: dict[str, dict[str, Any]]) -> None:
    """Recording keys stay stable: a required-flag or one-of run is found on replay only when the recording holds its
    argv in the world the suite plans it in (the request's world digest is part of the key). The runs planned in the
    examples world are held in one world, which holds none of the runs planned in the synthetic world; every run
    planned in the synthetic world that the recording holds is held in the synthetic world (a recording made before
    issue 38 holds no examples-world run; the one made at 71df5e3 holds 328 of the 338)."""
    import os

    from pytest_dws.gates.sch.examples import _branch_calls
    from pytest_dws.gates.sch.flags import _required_calls
    from pytest_dws.launch.recording import Recording

    folder = Path(os.environ.get("DWS_RECORDINGS_DIR") or Path(__file__).resolve().parents[2] / "shared"
                  / "recordings") / "81f67c8d"
    if os.environ.get("DWS_REAL_BINARIES", "") not in ("1", "required") or not (folder / "manifest.json").is_file():
        pytest.skip(f"real-binary tier not run: DWS_REAL_BINARIES=1 and a recording at {folder} are needed")
    held: dict[tuple[str, ...], set[str]] = {}
    for d in Recording.load(folder).outcomes.values():
        if d[0]["request"]["argv"][1:5] == ["--token", "t", "--format", "json"]:
            held.setdefault(tuple(d[0]["request"]["argv"][5:]), set()).add(d[0]["request"]["world"])
    planned: dict[str, set[tuple[str, ...]]] = {}
    for leaf in e81_tools.values():
        for c in [*_required_calls(leaf).values(), *(x for _, _, a, b in _branch_calls(leaf) for x in (a, b))]:
            if c.scenario is not None:
                planned.setdefault(c.scenario.name, set()).add(c.args)
    moved, synthetic = planned["examples"], planned["synthetic"]
    assert len(moved) > 300 and len(synthetic) > 1000
    moved_worlds = set().union(*(held[a] for a in moved if a in held))
    synthetic_worlds = [held[a] for a in synthetic if a in held]
    assert len(moved_worlds) <= 1 and len(synthetic_worlds) > 1000
    common = set.intersection(*synthetic_worlds)
    assert len(common) == 1 and common.isdisjoint(moved_worlds)
