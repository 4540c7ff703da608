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
:mod:`.runner` (argv, environment and batches); :mod:`.plan` (costs, the sample, shards), :mod:`.xshare` (xdist
workers share the calls), :mod:`.watchdog` (kills the targets of a suite killed outright).

May import the release inputs, the core leaves and fake_mcp. The names below import lazily, so a DATA run that
reads :mod:`.plan` never loads the runner.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, typed, for the type checker
    from pytest_dws.core.identity import resolve_prefix
    from pytest_dws.core.jsondoc import first_json
    from pytest_dws.launch.homes import HomePool
    from pytest_dws.launch.invocation import CallList, Invocation, TargetFailure
    from pytest_dws.launch.places import Places
    from pytest_dws.launch.process import DEFAULT_OUTPUT_CAP, LiveGroups, run_process
    from pytest_dws.launch.runner import DEAD_BASE_URL, MINIMAL_PATH, TARGET_GOGC, Job, Runner
    from pytest_dws.launch.servers import ServerPool, scenario_key

#: Public name -> the module of this package that defines it.
_EXPORTS = {
    "first_json": "pytest_dws.core.jsondoc",
    "HomePool": "pytest_dws.launch.homes",
    "CallList": "pytest_dws.launch.invocation", "Invocation": "pytest_dws.launch.invocation",
    "TargetFailure": "pytest_dws.launch.invocation",
    "Places": "pytest_dws.launch.places",
    "DEFAULT_OUTPUT_CAP": "pytest_dws.launch.process", "LiveGroups": "pytest_dws.launch.process",
    "run_process": "pytest_dws.launch.process",
    "DEAD_BASE_URL": "pytest_dws.launch.runner", "MINIMAL_PATH": "pytest_dws.launch.runner",
    "TARGET_GOGC": "pytest_dws.launch.runner", "Job": "pytest_dws.launch.runner", "Runner": "pytest_dws.launch.runner",
    "resolve_prefix": "pytest_dws.core.identity",
    "ServerPool": "pytest_dws.launch.servers", "scenario_key": "pytest_dws.launch.servers",
}

__all__ = ["DEAD_BASE_URL", "DEFAULT_OUTPUT_CAP", "MINIMAL_PATH", "TARGET_GOGC", "CallList", "HomePool", "Invocation",
           "Job", "LiveGroups", "Places", "Runner", "ServerPool", "TargetFailure", "first_json", "resolve_prefix",
           "run_process", "scenario_key"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'pytest_dws.launch' has no attribute {name!r}")
