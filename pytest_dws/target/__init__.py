"""Launching the implementation under test: argv, environment, process hygiene, output capture.

Every invocation runs in a scrubbed environment (nothing inherited: a minimal PATH, ``LANG``, a clean private
temp HOME with empty config/keychain dirs (:class:`HomePool`), a recording proxy (:mod:`fake_mcp.egress`),
endpoint variables pointing at the fake MCP server or at a dead loopback port, plus ``--dws-env`` values), in
its own process group with that HOME
as working directory, under a wall-clock timeout. A target that hangs is killed with its whole process group;
one that crashes or floods its output is reported as :class:`TargetFailure` (an ``AssertionError``: a failure
of the gate that ran it), never as a crash of the suite, and never leaves a process behind.

Batches (:meth:`Runner.run_jobs`) run at most ``workers`` targets at a time (:class:`Places`); the suite's own
per-run work is done by spare threads while targets run, so it does not add to the session's wall time.

Example::

    runner = ctx.cli()
    inv = runner.run("chat", "+conversation-list", "--page-all", backend=srv)
    assert inv.exit_code == 0, inv.describe()
    rows = inv.stdout_json["conversations"]

The package: :mod:`.invocation` (a finished run), :mod:`.process` (one supervised process), :mod:`.places`
(concurrency bounds), :mod:`.homes` (private HOMEs), :mod:`.servers` (pooled fake backends and their worlds),
:mod:`.runner` (argv, environment and batches).
"""

from __future__ import annotations

from pytest_dws.jsondoc import first_json
from pytest_dws.target.homes import HomePool
from pytest_dws.target.invocation import CallList, Invocation, TargetFailure
from pytest_dws.target.places import Places
from pytest_dws.target.process import DEFAULT_OUTPUT_CAP, LiveGroups, run_process
from pytest_dws.target.runner import DEAD_BASE_URL, MINIMAL_PATH, TARGET_GOGC, Job, Runner, resolve_prefix
from pytest_dws.target.servers import ServerPool, scenario_key

__all__ = ["DEAD_BASE_URL", "DEFAULT_OUTPUT_CAP", "MINIMAL_PATH", "TARGET_GOGC", "CallList", "HomePool", "Invocation",
           "Job", "LiveGroups", "Places", "Runner", "ServerPool", "TargetFailure", "first_json", "resolve_prefix",
           "run_process", "scenario_key"]
