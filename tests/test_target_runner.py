"""The runner (RUNNER_API.md): argv, scrubbed environment, JSON parsing, transcript slices, the bounded pool."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from fake_mcp import FakeMCPServer
from pytest_dws.launch import Job, Runner, first_json

PY = sys.executable
DUMP_ENV = "import json, os, sys; print(json.dumps({'argv': sys.argv[1:], 'env': dict(os.environ)}))"
#: One tools/call to im/<tool named by argv[-1]> through the endpoint variable, the way an implementation would.
CALL = """
import json, os, sys, urllib.request
body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "search_groups", "arguments": {"keyword": sys.argv[-1], "limit": 10}}})
req = urllib.request.Request(os.environ["DINGTALK_IM_MCP_URL"], body.encode(), {"Content-Type": "application/json"})
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
print(opener.open(req, timeout=5).read().decode())
"""


def ctx_stub(tmp_path: Path, **env: str) -> SimpleNamespace:
    return SimpleNamespace(settings=SimpleNamespace(timeout=10.0, env=dict(env), profile=None), tmp_root=tmp_path)


@pytest.fixture(scope="module")
def server():
    with FakeMCPServer() as srv:
        yield srv


def test_first_json_document_wins() -> None:
    assert first_json('{"error": {"code": 1}}\nRECOVERY_EVENT_ID=evt_1\n') == {"error": {"code": 1}}
    assert first_json('warning: slow\n{"a": 1}\n{"b": 2}') == {"a": 1}
    assert first_json("not json at all") is None
    assert first_json("") is None


def test_global_flags_go_before_the_command(tmp_path: Path) -> None:
    runner = Runner([PY, "-c", DUMP_ENV], ctx_stub(tmp_path))
    assert runner.run("chat", "+x").stdout_json["argv"] == ["--token", "t", "--format", "json", "chat", "+x"]
    assert runner.run("chat", token=None).stdout_json["argv"] == ["--format", "json", "chat"]
    assert runner.run("chat", "--help", globals_=False).stdout_json["argv"] == ["chat", "--help"]


def test_environment_is_built_from_scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DWS_LEAK_CANARY", "secret")
    monkeypatch.setenv("DINGTALK_IM_MCP_URL", "https://example.invalid/mcp/im")
    inv = Runner([PY, "-c", DUMP_ENV], ctx_stub(tmp_path, DWS_REF_MUTANT="pick-first")).run()
    env = inv.stdout_json["env"]
    assert "DWS_LEAK_CANARY" not in env
    assert env["DINGTALK_IM_MCP_URL"] == "http://127.0.0.1:1/mcp/im"  # dead loopback without a server
    # Every proxy variable names the loopback egress recorder, tagged with this invocation's private HOME.
    proxy = urlsplit(env["HTTPS_PROXY"])
    assert env["HTTPS_PROXY"] == env["HTTP_PROXY"] == env["http_proxy"] == env["https_proxy"]
    assert proxy.hostname == "127.0.0.1" and proxy.username == Path(env["HOME"]).name.replace("_", "-")
    assert env["DWS_DISABLE_KEYCHAIN"] == "1" and env["HOME"].startswith(str(tmp_path))
    assert env["DWS_REF_MUTANT"] == "pick-first"  # --dws-env values on top
    assert env["GOGC"] == "400"  # Go's collector pacing (a Go target's CPU per call; overridable)
    assert not Path(env["HOME"]).exists()  # the per-invocation home is removed afterwards


#: A target that tries to leave the machine through its proxy: HTTPS (CONNECT) and plain HTTP, then prints the exit.
LEAVE = """
import os, urllib.request, sys
for url in ("https://egress.example.invalid/x", "http://plain.example.invalid:8080/y"):
    try:
        urllib.request.urlopen(url, timeout=5)
    except Exception as exc:
        print(type(exc).__name__, file=sys.stderr)
sys.exit(5)
"""


def test_egress_is_refused_and_recorded_per_invocation(tmp_path: Path) -> None:
    """Nothing leaves the machine, and the gate learns where the target tried to go, by name."""
    runner = Runner([PY, "-c", LEAVE], ctx_stub(tmp_path))
    try:
        left, stayed = runner.run(globals_=False, check=False), runner.run_many([["--help"]], check=False)[0]
    finally:
        runner.close()
    assert left.exit_code == 5
    assert left.egress == ["egress.example.invalid:443", "plain.example.invalid:8080"]
    assert "tried to leave the machine" in left.describe() and "egress.example.invalid:443" in left.describe()
    assert stayed.egress == left.egress  # the same script: attempts are kept apart per invocation, not shared


def test_egress_recorder_parses_connect_and_absolute_requests() -> None:
    from fake_mcp.egress import parse_request

    auth = "Proxy-Authorization: Basic aW52LTM6eA=="  # inv-3:x
    connect = parse_request(f"CONNECT api.example.invalid:443 HTTP/1.1\r\n{auth}\r\n\r\n".encode())
    plain = parse_request(b"GET http://h.example.invalid/p HTTP/1.1\r\nHost: h\r\n\r\n")
    assert connect is not None and (connect.tag, connect.target) == ("inv-3", "api.example.invalid:443")
    assert plain is not None and (plain.tag, plain.target) == ("", "h.example.invalid:80")
    assert parse_request(b"") is None and parse_request(b"GET /relative HTTP/1.1\r\n\r\n") is None


def test_transcript_is_sliced_per_invocation(tmp_path: Path, server: FakeMCPServer) -> None:
    server.load({"name": "one", "world": {"groups": [{"cid": "cidTESTrunner000001", "title": "runner group"}]}})
    runner = Runner([PY, "-c", CALL], ctx_stub(tmp_path))
    first = runner.run("first", backend=server, globals_=False)
    second = runner.run("second", backend=server, globals_=False)
    assert [r.arguments["keyword"] for r in first.transcript] == ["first"]
    assert [r.arguments["keyword"] for r in second.transcript] == ["second"]
    assert first.stdout_json["result"]["content"][0]["type"] == "text"
    assert first.duration > 0 and first.cpu > 0
    assert runner.count == 2 and runner.total_wall >= first.duration + second.duration


def test_run_many_keeps_order_with_a_fresh_world_each(tmp_path: Path) -> None:
    scenario = {"name": "pool", "world": {"groups": [{"cid": "cidTESTrunner000002", "title": "pooled"}]}}
    runner = Runner([PY, "-c", CALL], ctx_stub(tmp_path), workers=3)
    try:
        words = [f"w{i}" for i in range(7)]
        out = runner.run_many([[w] for w in words], scenario=scenario, globals_=False)
        assert [[r.arguments["keyword"] for r in inv.transcript] for inv in out] == [[w] for w in words]
        jobs = runner.run_jobs([Job(("x",), scenario, {"globals_": False}), Job(("y",), None, {"globals_": False})])
        assert len(jobs[0].transcript) == 1 and jobs[1].exit_code != 0  # no server: the dead port refuses
    finally:
        runner.close()


def test_describe_is_compact(tmp_path: Path) -> None:
    inv = Runner([PY, "-c", "import sys, json; sys.stderr.write(json.dumps({'error': {'code': 3}}, indent=2)); "
                  "sys.exit(3)"], ctx_stub(tmp_path)).run()
    text = inv.describe()
    assert "exit: 3" in text and '{"error": {"code": 3}}' in text and json.dumps(inv.error) == '{"code": 3}'


def test_identical_help_and_schema_calls_run_once_and_runs_always_run(tmp_path: Path) -> None:
    """A leaf --help costs seconds on the real binary: a second identical call is answered by the first (and
    counted as reused); dry runs and executions are observed every time they are asked for."""
    from pytest_dws.launch.plan import Ledger

    log = tmp_path / "calls.log"
    script = tmp_path / "impl.py"
    script.write_text(f"import sys\nopen({str(log)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\nprint('ok')\n")
    ctx = ctx_stub(tmp_path)
    ctx.ledger = Ledger()
    runner = Runner([PY, str(script)], ctx, writable=[tmp_path])  # (its call log: a side channel of the test)
    try:
        answers = [runner.run("chat", "--help", globals_=False) for _ in range(2)]
        runner.run_many([("chat", "--help"), ("chat", "--help")], scenario={"name": "e", "world": {}},
                        globals_=False)
        for _ in range(2):
            runner.run("chat", "send", "--dry-run", globals_=False)
        runner.run("chat", "--help", globals_=False, env={"X": "1"})  # another environment: another call
    finally:
        runner.close()
    made = log.read_text().splitlines()
    assert made.count("chat --help") == 3 and made.count("chat send --dry-run") == 2
    assert answers[0] is answers[1]
    assert ctx.ledger.seen["help"].count == 3 and ctx.ledger.seen["help"].reused == 2
