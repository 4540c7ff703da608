"""SCHCLI-PLUGINS-LAZY (D2 §7 b2-b4): plugins load lazily; `schema` and `--help` never start or call them.

The suite's own test plugins (an HTTP one on the fake server, a stdio one: ``pytest_dws/inputs/data/stdio_plugin.py``)
are installed the way the expectations file's ``[schema.plugin]`` says. A release whose tree loads plugins but runs
none of their tools says why in ``[schema.plugin] unsupported`` (the gate is then not applicable for that reason).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from pytest_dws.assertions import (
    assert_exit_code,
    assert_no_requests,
)
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.helptext import parse_help
from pytest_dws.observe.binary.views import (
    schema_profile,
)
from pytest_dws.observe.binary.worlds import prebuilt
from pytest_dws.observe.calls import under_xdist
from pytest_dws.registry import Access, gate
from pytest_dws.verdict.cases import soft

# -- SCHCLI-PLUGINS-LAZY --------------------------------------------------------------------------------------
#: The suite's stdio test plugin: a newline-delimited JSON-RPC MCP server that appends "start" and then every
#: method it receives to the marker file named by its argument (so the gate sees Start / initialize / call).
STDIO_PLUGIN = (Path(__file__).resolve().parents[2] / "inputs" / "data" / "stdio_plugin.py").read_text(encoding="utf-8")


_PLUGIN_KEYS = {"files": dict, "env": dict, "commands": list, "exec_http": list, "exec_stdio": list,
                "auth_header": str, "unsupported": str}


def _plugin_spec(ctx: GateContext) -> dict[str, Any]:
    """`[schema.plugin]` of the expectations file: how to install the test plugins in this implementation."""
    spec = schema_profile(ctx).get("plugin")
    where = f"{ctx.expect.path}: $.schema.plugin"
    if not spec:
        raise NotApplicable("the profile names no plugin manifest format ([schema.plugin] files/env/exec_http/"
                            "exec_stdio in the expectations file), so no test plugin can be installed",
                            wants="a plugin manifest format ([schema.plugin])")
    for key, typ in _PLUGIN_KEYS.items():
        if key in spec and not isinstance(spec[key], typ):
            raise NotApplicable(f"{where}.{key}: expected a {typ.__name__}, got {spec[key]!r}",
                                wants="a valid [schema.plugin] table")
    if spec.get("unsupported"):
        # Why: a tree that loads plugins but can run none of their tools (so no run could prove the laziness
        # check saw a registered plugin) is not applicable for the reason its release file cites from the
        # tree, not because the file is short.
        raise NotApplicable(f"{where}.unsupported: {spec['unsupported']}",
                            wants="an implementation that runs a plugin's tool as a command")
    if not spec.get("exec_http") and not spec.get("exec_stdio"):
        raise NotApplicable(f"{where}: names neither exec_http nor exec_stdio (the plugin tool runs to judge)",
                            wants="exec_http or exec_stdio in [schema.plugin]")
    return spec


def _install_plugins(spec: dict[str, Any], home: Path, url: str) -> tuple[dict[str, str], Path]:
    """Write the spec's files (placeholders filled) and the stdio test plugin; returns the env and marker."""
    import json
    import sys

    marker, script = home / "stdio-plugin.marker", home / "stdio_plugin.py"
    script.write_text(STDIO_PLUGIN, encoding="utf-8")
    stdio = json.dumps([sys.executable, "-I", "-S", str(script), str(marker)])
    subst = {"{dir}": str(home), "{url}": url, "{stdio}": stdio, "{python}": sys.executable}

    def fill(text: str) -> str:
        for k, v in subst.items():
            text = text.replace(k, v)
        return text

    for rel, text in (spec.get("files") or {}).items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(fill(str(text)), encoding="utf-8")
    return {str(k): fill(str(v)) for k, v in (spec.get("env") or {}).items()}, marker


def _marks(marker: Path) -> list[str]:
    """What the stdio test plugin recorded since the last read (the marker is consumed)."""
    if not marker.exists():
        return []
    got = marker.read_text(encoding="utf-8", errors="replace").split()
    marker.unlink()
    return got


def _plugin_runs(ctx: GateContext) -> list[tuple[str, tuple[str, ...], Any, list[str]]]:
    """Every run of the gate, side by side on the bounded pool: ``[(kind, args, invocation, marks), ...]``
    (kind: lazy / exec_http / exec_stdio; marks: what the stdio test plugin recorded during that run)."""
    from pytest_dws.launch import Job

    spec = _plugin_spec(ctx)
    runner = ctx.cli()
    lazy = [("--help",), ("schema",), *[(c, "--help") for c in spec.get("commands") or []]]
    runs: list[tuple[str, tuple[str, ...], dict[str, Any]]] = [
        ("lazy", args, {"token": None, "globals_": False}) for args in lazy]
    runs += [(kind, tuple(spec[kind]), {}) for kind in ("exec_http", "exec_stdio") if spec.get(kind)]
    work = Path(tempfile.mkdtemp(prefix="plugin-", dir=ctx.tmp_root))
    try:
        # Every run has its own server and its own copy of the plugins (own marker), so each one's requests
        # and plugin starts are its own.
        world = ctx.memo(("schcli", "plugin-world"), lambda: prebuilt(PLUGIN_WORLD))
        with runner.backends(world, len(runs)) as servers:
            jobs, markers = [], []
            for i, ((_, args, kw), srv) in enumerate(zip(runs, servers, strict=True)):
                home = work / str(i)
                home.mkdir()
                env, marker = _install_plugins(spec, home, srv.url)
                jobs.append(Job(args, None, {**kw, "backend": srv, "env": env, "collect": [marker]}))
                markers.append(marker)
            invs = runner.run_jobs(jobs, workers=1 if under_xdist(ctx) else None)
        return [(kind, args, inv, _marks(marker))
                for (kind, args, _), inv, marker in zip(runs, invs, markers, strict=True)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


@gate("SCHCLI-PLUGINS-LAZY", doc="D2 §7 b2-b4", access={Access.MCP})
def plugins_lazy(ctx: GateContext) -> None:
    """A registered plugin is not probed or started by --help or schema; only executing its tool starts it."""
    spec = _plugin_spec(ctx)
    problems: list[str] = []
    for kind, args, inv, marks in _plugin_runs(ctx):
        inv.check()
        if kind == "lazy":
            _check_lazy(problems, spec, args, inv, marks)
        elif kind == "exec_http":
            _check_exec_http(problems, spec, inv)
        else:
            _check_exec_stdio(problems, spec, inv, marks)
    if problems:
        raise AssertionError("\n".join(problems))


#: The fake world of the plugin runs: empty, and the HTTP plugin's tool (which no world models) answers an empty
#: success (fake_mcp `unmodelled: empty`): the gate judges when the plugin is contacted, not what it returns.
PLUGIN_WORLD = {"name": "plugin", "world": {}, "overrides": [], "unmodelled": "empty"}


def _check_lazy(problems: list[str], spec: dict[str, Any], args: tuple[str, ...], inv: Any, started: list[str]
                ) -> None:
    """--help / schema with the plugins installed: no request, no plugin process, the plugin commands listed."""
    what = f"`dws {' '.join(args)}` with the test plugins installed"
    soft(problems, assert_no_requests, inv, f"{what} (an HTTP plugin was probed)")
    if started:
        problems.append(f"{what}: the stdio plugin was started (it saw {started})")
    if args == ("--help",):
        listed = parse_help(inv.stdout).commands
        missing = [c for c in spec.get("commands") or [] if c not in listed]
        if missing:
            problems.append(f"{what}: the plugin commands {missing} are not registered (not listed)")


def _check_exec_http(problems: list[str], spec: dict[str, Any], inv: Any) -> None:
    """Executing the HTTP plugin's tool reaches its endpoint, with the manifest's auth header."""
    what = f"`dws {' '.join(spec['exec_http'])}` (the HTTP plugin's tool)"
    soft(problems, assert_exit_code, inv, 0, what)
    calls = inv.calls()
    if not calls:
        problems.append(f"{what}: no tools/call reached the plugin endpoint: the laziness check proves "
                        f"nothing\n{inv.describe()}")
    header = str(spec.get("auth_header") or "").lower()
    if header and calls and not all(header in r.headers for r in calls):
        problems.append(f"{what}: the call does not carry the manifest's auth header {header!r}")


def _check_exec_stdio(problems: list[str], spec: dict[str, Any], inv: Any, got: list[str]) -> None:
    """Executing the stdio plugin's tool starts it: Start, initialize, then the tools/call."""
    what = f"`dws {' '.join(spec['exec_stdio'])}` (the stdio plugin's tool)"
    soft(problems, assert_exit_code, inv, 0, what)
    if got[:1] != ["start"] or "initialize" not in got or "tools/call" not in got[got.index("initialize"):]:
        problems.append(f"{what}: expected Start + initialize + tools/call, the plugin saw {got}")
