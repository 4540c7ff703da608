"""Scenario files, schema errors (one line each), the Python builder and the command line."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fake_mcp import FakeMCPServer, MCPClient, Reply, Scenario, ScenarioError, override

ROOT = Path(__file__).resolve().parents[1]
BASIC = ROOT / "fixtures" / "scenarios" / "basic"
CID = "cidTESTa00000001"
GOOD = {
    "name": "good",
    "world": {"groups": [{"cid": CID, "title": "项目群A", "owner": "user-a",
                          "members": [{"name": "张三", "openDingtalkId": "odid-0001", "userId": "u1"}],
                          "bots": [{"name": "bot", "robotCode": "rc-1"}],
                          "messages": [{"openMessageId": "m1", "sender": "odid-0001", "content": "hello",
                                        "createTime": 1767225600000}]}],
              "contacts": [{"name": "张三", "userId": "u1", "openDingtalkId": "odid-0001"}]},
    "overrides": [{"tool": "list_all_conversations", "product": "im", "call": 1, "page": None,
                   "reply": {"kind": "business", "payload": {"success": False, "code": "NETWORK_ERROR",
                                                             "trace_id": "T1", "retryable": True}, "as": "text"}}],
}


def mutate(path: str, value: object) -> dict:
    """GOOD with one JSON-path-ish location replaced (``DEL`` removes it)."""
    data = copy.deepcopy(GOOD)
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]
    target = data
    for key in keys[:-1]:
        target = target[key]
    if value == "DEL":
        del target[keys[-1]]
    elif isinstance(target, list) and keys[-1] == len(target):
        target.append(value)
    else:
        target[keys[-1]] = value
    return data


MALFORMED = [
    ("missing name", mutate("name", "DEL"), "$: missing required property 'name'"),
    ("short cid", mutate("world.groups.0.cid", "cid-test-a"), "$.world.groups[0].cid: expected a synthetic CID"),
    ("cid not prefixed", mutate("world.groups.0.cid", "groupAAAAAAAAAA"), "$.world.groups[0].cid: expected"),
    ("title looks like cid", mutate("world.groups.0.title", "cidGroupName"),
     "$.world.groups[0].title: expected a natural name"),
    ("unknown world key", mutate("world.chats", []), "$.world.chats: unexpected property"),
    ("unknown group key", mutate("world.groups.0.name", "x"), "$.world.groups[0].name: unexpected property"),
    ("member without id", mutate("world.groups.0.members.0.openDingtalkId", "DEL"),
     "$.world.groups[0].members[0]: missing required property 'openDingtalkId'"),
    ("createTime as string", mutate("world.groups.0.messages.0.createTime", "2026-01-01"),
     "$.world.groups[0].messages[0].createTime: expected epoch milliseconds"),
    ("override without tool", mutate("overrides.0.tool", "DEL"), "$.overrides[0]: missing required property 'tool'"),
    ("bogus reply kind", mutate("overrides.0.reply.kind", "explode"), "$.overrides[0].reply.kind: expected one of"),
    ("http without status", mutate("overrides.0.reply", {"kind": "http"}),
     "$.overrides[0].reply: missing required property 'status'"),
    ("call zero", mutate("overrides.0.call", 0), "$.overrides[0].call: expected a 1-based call number"),
    ("bogus carrier", mutate("overrides.0.reply.as", "html"), "$.overrides[0].reply.as: expected one of text"),
    ("bogus preset", mutate("overrides.0.reply", {"kind": "business", "preset": "NOPE"}),
     "$.overrides[0].reply.preset: expected one of"),
    ("key of another kind", mutate("overrides.0.reply", {"kind": "drop", "status": 500}),
     "$.overrides[0].reply.status: unexpected property"),
    ("page size zero", mutate("world.page_sizes", {"list_all_conversations": 0}),
     "$.world.page_sizes.list_all_conversations: expected a positive integer page size"),
    ("duplicate cid", mutate("world.groups.1", {"cid": CID, "title": "另一个群"}),
     "$.world.groups[1].cid: expected a unique CID"),
    ("not an object", ["name"], "$: expected a scenario object"),
]


@pytest.mark.parametrize(("data", "expected"), [(d, e) for _, d, e in MALFORMED], ids=[n for n, _, _ in MALFORMED])
def test_schema_errors_are_one_line_with_json_path(tmp_path, data, expected):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        Scenario.load(path)
    line = str(info.value)
    assert "\n" not in line and len(line) < 400
    assert line.startswith(f"{path}: {expected}"), line


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("broken.json", '{"name": "x",\n  "world": }', ": $: invalid JSON at line 2 column"),
    ("broken.toml", 'name = "x"\nworld = [', ": $: invalid TOML:"),
    ("missing.json", None, ": $: cannot read scenario file"),
])
def test_file_level_errors(tmp_path, name, content, expected):
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        Scenario.load(path)
    assert str(info.value).startswith(f"{path}{expected}") and "\n" not in str(info.value)


def test_api_example_scenario_is_valid():
    assert Scenario.from_dict(GOOD).overrides[0]["reply"]["kind"] == "business"


def test_a_document_valid_once_is_not_walked_again_and_an_invalid_one_is_refused_every_time():
    """The validation memo (fake_mcp/scenario.py _VALID_SEEN) keeps only what passed: the same content is accepted
    from memory, a changed copy is judged anew, and a bad document is refused again with its one line."""
    from fake_mcp import scenario as sc

    good = copy.deepcopy(GOOD)
    sc.validate(good, "a")
    assert sc._digest(good) in sc._VALID_SEEN
    bad = copy.deepcopy(GOOD)
    bad["overrides"][0]["reply"]["kind"] = "no-such-kind"
    for _ in range(2):
        with pytest.raises(ScenarioError) as info:
            sc.validate(bad, "b.json")
        assert str(info.value).startswith("b.json: $.overrides[0].reply")
    assert sc._digest(bad) not in sc._VALID_SEEN


def test_every_basic_fixture_is_valid_and_synthetic():
    files = sorted(BASIC.glob("*.json"))
    assert len(files) >= 6
    for path in files:
        scenario = Scenario.load(path)
        for group in scenario.world.get("groups", []):
            assert len(group["cid"]) >= 12 and group["cid"].lower().startswith("cid")
            assert not group["title"].lower().startswith("cid")


def test_toml_scenario_equals_json(tmp_path):
    toml = tmp_path / "s.toml"
    toml.write_text(f'''name = "good"

[[world.groups]]
cid = "{CID}"
title = "项目群A"
owner = "user-a"
members = [{{ name = "张三", openDingtalkId = "odid-0001", userId = "u1" }}]
bots = [{{ name = "bot", robotCode = "rc-1" }}]
messages = [{{ openMessageId = "m1", sender = "odid-0001", content = "hello", createTime = 1767225600000 }}]

[[world.contacts]]
name = "张三"
userId = "u1"
openDingtalkId = "odid-0001"

[[overrides]]
tool = "list_all_conversations"
product = "im"
call = 1

[overrides.reply]
kind = "business"
as = "text"
payload = {{ success = false, code = "NETWORK_ERROR", trace_id = "T1", retryable = true }}
''', encoding="utf-8")
    from_toml = Scenario.load(toml)
    expected = copy.deepcopy(GOOD)
    del expected["overrides"][0]["page"]  # TOML has no null
    assert from_toml.to_dict() == Scenario.from_dict(expected).to_dict()


def test_builder_build_and_round_trip(tmp_path):
    built = (Scenario.builder("b", "built in Python")
             .group(CID, "项目群A", owner="u1", members=[{"name": "张三", "openDingtalkId": "odid-1"}])
             .conversation(CID, "项目群A", type="group")
             .contact("张三", userId="u1", openDingtalkId="odid-1")
             .at_me({"openMessageId": "m9", "openConversationId": CID, "content": "@张三", "createTime": 1})
             .direct_chat("odid-1", messages=[{"openMessageId": "d1", "content": "hi", "createTime": 2}])
             .invite_url(CID, "http://127.0.0.1/invite/x")
             .page_size("search_groups", 5)
             .world(utc_offset_minutes=0)
             .override("search_groups", Reply.http(503), call=1)
             .build())
    assert built.world["page_sizes"] == {"search_groups": 5} and built.description == "built in Python"
    path = tmp_path / "b.json"
    built.dump(path)
    assert Scenario.load(path).to_dict() == built.to_dict()
    one_call = Scenario.build("b", groups=[{"cid": CID, "title": "项目群A"}],
                              overrides=[override("search_groups", Reply.drop())])
    assert one_call.world["groups"][0]["cid"] == CID and one_call.overrides[0]["reply"] == {"kind": "drop"}
    with pytest.raises(ScenarioError, match=r"^<scenario bad>: \$\.world\.groups\[0\]\.cid: expected"):
        Scenario.builder("bad").group("cid-short", "名字").build()


def test_server_load_accepts_every_form(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(GOOD), encoding="utf-8")
    with FakeMCPServer() as srv:
        for form in (Scenario.from_dict(GOOD), GOOD, str(path), path):
            assert srv.load(form).name == "good"
        with pytest.raises(ScenarioError):
            srv.load({"name": "x", "world": {"groups": [{"cid": "short", "title": "t"}]}})
        assert srv.scenario.name == "good"  # a rejected scenario leaves the old one in place


def test_import_stays_stdlib_only():
    code = ("import sys, fake_mcp; bad = [m for m in ('jsonschema', 'pytest') if m in sys.modules]; "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fake_mcp", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_cli_validate(tmp_path):
    ok = run_cli("validate", str(BASIC / "unique_group.json"))
    assert ok.returncode == 0 and "ok" in ok.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(mutate("world.groups.0.cid", "cid-test-a")), encoding="utf-8")
    res = run_cli("validate", str(bad))
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"{bad}: $.world.groups[0].cid: ")
    assert "Traceback" not in res.stderr


def test_cli_serve_prints_env_serves_and_logs(tmp_path):
    log = tmp_path / "t.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "fake_mcp", "serve", "--scenario",
                             str(BASIC / "unique_group.json"), "--log", str(log)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        env = {}
        for line in proc.stdout:
            if line.startswith("#"):
                break
            assert line.startswith("export ")
            key, _, value = line[len("export "):].strip().partition("=")
            env[key] = value.strip("'")
        assert env["DWS_ALLOW_HTTP_ENDPOINTS"] == "1" and env["DWS_DISABLE_KEYCHAIN"] == "1"
        assert env["HTTPS_PROXY"] == "http://127.0.0.1:1" and Path(env["DWS_CONFIG_DIR"]).is_dir()
        im_url = env["DINGTALK_IM_MCP_URL"]
        with MCPClient(im_url.rsplit("/mcp/", 1)[0]) as c:
            reply = c.call("im", "search_groups", {"cursor": "0", "keyword": "项目群A", "limit": 10})
            assert reply.payload["result"][0]["openConversationId"] == CID
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r["product"], r["tool"], r["status"]) for r in records] == [("im", "search_groups", 200)]
    assert not Path(env["HOME"]).exists()  # the temp HOME is removed on exit


def test_cli_serve_bad_scenario_is_one_line(tmp_path):
    res = run_cli("serve", "--scenario", str(tmp_path / "nope.json"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "cannot read scenario file" in res.stderr


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery differs on Windows")
def test_cli_serve_stops_on_sigint(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "fake_mcp", "serve", "--scenario", str(BASIC / "zero_hits.json")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.startswith("#"):
                break
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
