"""Command line: ``python -m fake_mcp serve|validate``.

``serve`` is for evaluation runners and manual debugging: it prints ``export`` lines (endpoints,
trusted-loopback and isolation variables for a fresh temp HOME) that a shell can ``eval``, serves until
SIGINT/SIGTERM, then writes the transcript as JSONL.  ``validate`` checks a scenario file and prints the
one-line error on failure (exit 2), so scenario authors get the same message the server would give.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

from .env import isolation_env
from .scenario import Scenario, ScenarioError
from .server import FakeMCPServer


def _serve(opts: argparse.Namespace) -> int:
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):  # installed first: an early Ctrl-C must not print a traceback
        signal.signal(sig, lambda *_: done.set())
    try:
        scenario = Scenario.load(opts.scenario)
        srv = FakeMCPServer(host=opts.host, port=opts.port, scenario=scenario)
    except (ScenarioError, ValueError) as exc:
        print(f"fake_mcp: {exc}", file=sys.stderr)
        return 2
    try:
        srv.start()
    except OSError as exc:
        print(f"fake_mcp: cannot listen on {opts.host}:{opts.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    home = Path(tempfile.mkdtemp(prefix="fake_mcp-home-"))
    try:
        env = {**srv.env(), **isolation_env(home)}
        for key in sorted(env):
            print(f"export {key}={shlex.quote(env[key])}")
        print(f"# fake_mcp serving scenario {scenario.name!r} on {srv.url}; Ctrl-C to stop", flush=True)
        while not done.wait(0.5):
            pass
    finally:
        srv.stop()
        if opts.log:
            srv.transcript.dump_jsonl(opts.log)
            print(f"# transcript: {len(srv.transcript)} records written to {opts.log}", file=sys.stderr)
        shutil.rmtree(home, ignore_errors=True)
    return 0


def _validate(opts: argparse.Namespace) -> int:
    try:
        scenario = Scenario.load(opts.file)
    except ScenarioError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"{opts.file}: ok (scenario {scenario.name!r}, {len(scenario.overrides)} overrides)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fake_mcp", description="Loopback fake MCP backend.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve a scenario until SIGINT/SIGTERM")
    serve.add_argument("--scenario", required=True, help="scenario file (.json or .toml)")
    serve.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    serve.add_argument("--host", default="127.0.0.1", help="loopback address (default 127.0.0.1)")
    serve.add_argument("--log", help="write the transcript here as JSONL on exit")
    check = sub.add_parser("validate", help="validate a scenario file (exit 2 with a one-line error)")
    check.add_argument("file")
    opts = parser.parse_args(argv)
    return _serve(opts) if opts.command == "serve" else _validate(opts)


if __name__ == "__main__":
    raise SystemExit(main())
