"""The contract profile: the packaged e81 default, one-line errors, and `--dws-profile` for a renamed implementation."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_dws.core.errors import DwsInputError
from pytest_dws.inputs.profile import DEFAULT_PROFILE, load_profile
from pytest_dws.registry import gate_ids

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "fixtures" / "reference" / "dws"


def test_default_profile_describes_e81() -> None:
    prof = load_profile(DEFAULT_PROFILE)
    assert prof.matrix() == ["+chat-members-list", "+chat-messages", "+search-msg"]
    assert prof.global_args("t") == ["--token", "t", "--format", "json"]
    assert str(prof.resolver) == "im/search_groups" and prof.resolver_page_size == 10
    assert {a.gate for a in prof.aliases if a.gate} <= set(gate_ids())
    assert len([a for a in prof.aliases if a.gate]) == 7  # the seven D1 §5 spellings (ACC-DRIFT-11)
    cmd = prof.command("+search-msg")
    argv = cmd.argv(["--text", "k"], drop=("--query",))
    assert argv[:4] == ["chat", "+search-msg", "--text", "k"] and "--query" not in argv and "--no-enrich" in argv


def test_a_global_flag_the_command_defines_itself_is_left_out() -> None:
    """cobra's local flag shadows the persistent one: 81f67c8d's `audit export` has its own `--format` (jsonl|csv,
    in its schema and Help), so the suite's global `--format json` would set it and be refused. A dry run built
    from a tool whose schema lists `format` gets no global one; the token stays (the tool has no `token`)."""
    from pytest_dws.observe.binary.worlds import executed

    prof = load_profile(DEFAULT_PROFILE)
    assert prof.global_args("t", ["format", "since"]) == ["--token", "t"]
    assert prof.global_args(None, ["format"]) == []
    tool = {"parameters": {"format": {"default": "jsonl"}, "since": {"type": "string"}}}
    call = executed("audit", "export", "--since", "2026-07-01", "--dry-run", tool=tool)
    assert call.globals_ and call.own == ("format", "since")
    assert executed("chat", "group", "rename", tool={"parameters": {"id": {}}}).own == ("id",)


@pytest.mark.parametrize(("text", "where"), [
    ("[cli]\ntoken = 1\n", "$.cli.token"),
    ("not = [toml", ""),
    ('[cli]\ntoken=["--token"]\nformat=[]\ntable_format=[]\nunknown_command=[]\nauth_actions=[]\ndry_run="d"\n'
     'yes="y"\nhelp="h"\n[ids]\nstable_keys=[]\n[resolver]\ntool="im/x"\nkeyword="k"\ncursor="c"\npage_size=0\n'
     '[commands.a]\npath=["a"]\n[probes]\nread="a"\nwrite="b"\n', "$.probes.write"),
])
def test_malformed_profile_is_one_line(tmp_path: Path, text: str, where: str) -> None:
    bad = tmp_path / "profile.toml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(DwsInputError) as info:
        load_profile(bad)
    message = str(info.value)
    assert str(bad) in message and where in message and "\n" not in message


def test_bad_profile_option_is_a_usage_error(run_contract, tmp_path: Path) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text("[cli]\n", encoding="utf-8")
    run = run_contract("--dws-cli", f"{{python}} -I -S {REFERENCE}", "--dws-profile", str(bad), "-k", "TGT-GROUP-CID")
    assert run.ret == 4, run.output()[-2000:]
    assert f"{bad}: $.cli.token: missing" in run.output() and "Traceback" not in run.output()


SHIM = """
import os, sys
args = sys.argv[1:]
if "+chat-members-list" in args:
    sys.stderr.write('{"error": {"code": 5, "category": "internal", "message": "unknown command", '
                     '"reason": "unknown_command"}}\\n')
    sys.exit(5)
args = ["+chat-members-list" if a == "+chat-roster" else a for a in args]
os.execv(sys.executable, [sys.executable, "-I", "-S", %r, *args])
"""


def test_renamed_implementation_supplies_its_own_profile(run_contract, tmp_path: Path) -> None:
    shim = tmp_path / "renamed_dws.py"
    shim.write_text(SHIM % str(REFERENCE), encoding="utf-8")
    renamed = tmp_path / "renamed.toml"
    renamed.write_text(DEFAULT_PROFILE.read_text(encoding="utf-8").replace(
        'path = ["chat", "+chat-members-list"]', 'path = ["chat", "+chat-roster"]'), encoding="utf-8")
    select = ["--dws-cli", f"{{python}} -I -S {shim}", "-k", "TGT-GROUP-CID or TGT-GROUP-NAME"]
    default = run_contract(*select)
    assert default.gates["TGT-GROUP-CID"]["failed_items"] == ["+chat-members-list"]
    own = run_contract(*select, "--dws-profile", str(renamed))
    assert own.failing() == set(), own.output()[-2000:]
    assert own.status("TGT-GROUP-CID") == own.status("TGT-GROUP-NAME") == "passed"


#: D1 §5 / §8.1 (issue 43): advice read as the actions it tells the Agent to do, one class each. The three
#: backend-dependency hints below contain no word of the old forbidden list (auth|login|认证|check param|检查参数)
#: and still send the Agent to its parameters or permissions: each must be refused by its class's rule.
MISLEADING_FOR_BACKEND = ["Check permissions and parameters, then retry", "请检查权限和参数后重试", "检查输入参数"]


@pytest.mark.parametrize("text", MISLEADING_FOR_BACKEND)
def test_backend_dependency_advice_that_names_a_check_is_refused(text: str) -> None:
    advice = load_profile(DEFAULT_PROFILE).advice
    backend = next(c for c in advice.classes if c.name == "backend_dependency")
    assert advice.kinds(text) & set(backend.may_not), text
    assert not set(backend.must) <= advice.kinds(text), text  # and none of them says to keep the trace ID


def test_the_upstream_backend_advice_names_its_class_actions_only() -> None:
    """GATES.md ERR-NO-MISLEADING-HINT: the 81f67c8d classifier's hint and actions (the bare '参数' of '请求参数无需
    修改' / '使用相同参数' names no parameter check)."""
    advice = load_profile(DEFAULT_PROFILE).advice
    backend = next(c for c in advice.classes if c.name == "backend_dependency")
    texts = ["请求参数无需修改；请使用相同参数稍后重试。持续失败时请提供 Trace ID 排查 MCP 服务。",
             "使用相同参数重试一次", "持续失败时保留 Trace ID 并排查 MCP 后端依赖"]
    assert not any(advice.kinds(t) & set(backend.may_not) for t in texts)
    assert set(backend.must) <= set().union(*map(advice.kinds, texts))
    # every class has replies and at least one action; each D1 §8.1 class its own
    assert {c.name for c in advice.classes} >= {"backend_dependency", "parameter", "permission", "resource"}
    assert len({c.must for c in advice.classes if c.name in ("parameter", "permission", "resource")}) == 3


@pytest.mark.parametrize(("advice", "where"), [
    ('[advice.actions]\nretry = ["("]\n[advice.classes.a]\nreplies = ["x"]\nmust = ["retry"]\n',
     "$.advice.actions.retry"),
    ('[advice.actions]\nretry = ["r"]\n[advice.classes.a]\nreplies = ["x"]\nmust = ["keep"]\n', "$.advice.classes.a"),
    ('[advice.actions]\nretry = ["r"]\n[advice.classes.a]\nreplies = ["x"]\nmust = []\nretryable = "y"\n',
     "$.advice.classes.a.retryable"),
])
def test_malformed_advice_is_one_line(tmp_path: Path, advice: str, where: str) -> None:
    text = DEFAULT_PROFILE.read_text(encoding="utf-8")
    bad = tmp_path / "profile.toml"
    bad.write_text(text[:text.index("# -- recovery advice")] + advice, encoding="utf-8")
    with pytest.raises(DwsInputError) as info:
        load_profile(bad)
    message = str(info.value)
    assert str(bad) in message and where in message and "\n" not in message


def test_a_profile_without_advice_gets_the_default_wording(tmp_path: Path) -> None:
    text = DEFAULT_PROFILE.read_text(encoding="utf-8")
    own = tmp_path / "profile.toml"
    own.write_text(text[:text.index("# -- recovery advice")], encoding="utf-8")
    assert [c.name for c in load_profile(own).advice.classes] == [c.name for c in
                                                                   load_profile(DEFAULT_PROFILE).advice.classes]


def test_members_list_is_also_run_with_both_buckets() -> None:
    """D1 §7.4 smoke 2 / §4 rule 5 (issue 43): the pinned `--member-types user` run never calls the bots bucket; the
    profile also runs +chat-members-list without it, so bot/list_group_bots gets the target too (judged by
    TGT-NAME-NEVER-IN-ID and TGT-OTHER-SHORTCUTS on names, SMK-MEMBERS on a failed bots read)."""
    prof = load_profile(DEFAULT_PROFILE)
    pinned = prof.command("+chat-members-list")
    both = [c for c in prof.commands.values() if c.path == pinned.path and c.also_calls]
    assert [str(t) for c in both for t in c.also_calls] == ["bot/list_group_bots"]
    assert all(not c.pinned and c.other and c.group for c in both)


def _with_errors(tmp_path: Path, section: str) -> Path:
    """The default profile with its ``[errors]`` section replaced by ``section`` ('' : without one)."""
    import re

    text, n = re.subn(r"^\[errors\]\n.*?(?=^# -- )", lambda _: section, DEFAULT_PROFILE.read_text(encoding="utf-8"),
                      flags=re.MULTILINE | re.DOTALL)
    assert n == 1
    path = tmp_path / "profile.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_default_error_envelope_is_r41s_own(tmp_path: Path) -> None:
    """Issue 42: the packaged [errors] names every typed field under docs/contract.md R4.1's own key, so reading
    through it changes nothing for the real builds; a profile without the section reads the same."""
    from pytest_dws.core.envelope import FIELDS, Envelope

    errors = load_profile(DEFAULT_PROFILE).errors
    assert errors.at == ("error",) and dict(errors.keys) == {f: f for f in FIELDS} and not errors.renamed
    assert load_profile(_with_errors(tmp_path, "")).errors == Envelope()
    doc = {"error": {"code": 3, "reason": "flag_conflict", "request_id": "r"}}
    assert errors.error_of(doc) is doc["error"] and errors.error_of({"result": {}}) is None


def test_an_envelope_reads_the_releases_keys_under_the_canonical_ones() -> None:
    from pytest_dws.core.envelope import Envelope

    env = Envelope(("failure",), {"reason": "code", "code": "exit", "category": "kind"})
    got = env.error_of({"failure": {"exit": 3, "kind": "validation", "code": "flag_conflict", "reason": "text",
                                    "hint": "h"}})
    assert got == {"code": 3, "category": "validation", "reason": "flag_conflict", "hint": "h"}  # .reason: no field
    assert Envelope((), {"reason": "why"}).error_of({"code": 5, "why": "x"}) == {"code": 5, "reason": "x"}
    assert Envelope(("a", "b")).error_of({"a": {"b": {"code": 1}}}) == {"code": 1}
    assert env.error_of({"error": {"code": 3}}) is None and env.error_of(None) is None


@pytest.mark.parametrize(("section", "where"), [
    ('[errors]\nobject = 1\n', "$.errors.object"),
    ('[errors]\npath = "error"\n', "$.errors.path"),
    ('[errors]\n[errors.keys]\nreasn = "code"\n', "$.errors.keys.reasn"),
    ('[errors]\n[errors.keys]\nreason = "code"\ncategory = "code"\n', "$.errors.keys.category"),
    ('[errors]\n[errors.keys]\nreason = ""\n', "$.errors.keys.reason"),
])
def test_malformed_error_envelope_is_one_line(tmp_path: Path, section: str, where: str) -> None:
    bad = _with_errors(tmp_path, section + "\n")
    with pytest.raises(DwsInputError) as info:
        load_profile(bad)
    message = str(info.value)
    assert str(bad) in message and where in message and "\n" not in message
