"""SCHCLI-*: the `dws schema` command surface (D2 §6, §7; GATES.md R3). The binary's `schema --all` is read
once (:mod:`pytest_dws.binary.views`); the other levels are queried only as far as the gate is about them.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_dws.assertions import (
    assert_byte_identical_regeneration,
    assert_equal,
    assert_error_classified,
    assert_exit_code,
    assert_no_requests,
    assert_summary_projects_leaf,
)
from pytest_dws.binary.helptext import parse_help
from pytest_dws.binary.views import (
    bin_schema,
    check_offline_runs,
    offline_calls,
    sample,
    schema_profile,
    subject_list,
    unsharded_sample,
)
from pytest_dws.binary.views import prefetch_selected as prefetch
from pytest_dws.binary.worlds import plain, prebuilt
from pytest_dws.calls import Call, plans, run_calls, run_one, under_xdist
from pytest_dws.cases import soft
from pytest_dws.errors import NotApplicable
from pytest_dws.registry import Access, gate

#: --compact (R3.5): keys stripped from payload / product / tool objects, and from parameter entries.
COMPACT_STRIP = frozenset({
    "agent_metadata_source", "agent_source_refs", "agent_summary_source", "effect_source", "metadata_source",
    "source", "agent_metadata", "interface_metadata", "field_provenance", "reviewed", "name", "path", "cli_name",
    "primary_cli_path", "is_alias", "has_parameters", "parameter_count", "product_id", "display", "title", "group",
    "source_product_id", "aliases", "catalog_hash", "surface_hash", "workflow_refs", "prerequisites", "tips",
    "interface_ref",
})
COMPACT_PARAM_STRIP = frozenset({"interface_description", "interface_type", "property", "field_provenance"})
UNKNOWN_PATH = "dws-contract-no-such-schema-path"
TAMPER = "TAMPERED-BY-DWS-CONTRACT"


def _json(ctx: Any, *args: str, what: str = "") -> Any:
    inv = run_one(ctx, plain(*args))
    if inv.exit_code != 0 or not isinstance(inv.stdout_json, dict):
        raise AssertionError(f"`dws {' '.join(args)}` failed{what} (exit {inv.exit_code})\n{inv.describe()}")
    return inv.stdout_json


def _primary(leaf: dict[str, Any]) -> str:
    return leaf.get("primary_cli_path") or leaf.get("cli_path") or ""


# -- SCHCLI-PROGRESSIVE ------------------------------------------------------------------------------------------
def _progressive_plan(ctx: Any) -> tuple[list[str], str, str | None, list[Call]]:
    view = bin_schema(ctx)
    keys = unsharded_sample(ctx, view.tools)  # representatives: a fixed gate (shard 1 judges it)
    if not keys:
        raise AssertionError("`dws schema --all` lists no tool")
    product = view.product_of(keys[0])
    deep = next((k for k in keys if len(_primary(view.tools[k]).split()) >= 3), None)
    calls = [plain("schema"), plain("schema", product), plain("schema", keys[0]), plain("schema", UNKNOWN_PATH)]
    group = " ".join(_primary(view.tools[deep]).split()[:2]) if deep else None
    if group:
        calls += [plain("schema", group), plain("schema", group.replace(" ", "."))]
    return keys, product, group, calls


plans("SCHCLI-PROGRESSIVE")(lambda ctx: _progressive_plan(ctx)[3])


@gate("SCHCLI-PROGRESSIVE", doc="D2 §6; cf TestEmbeddedSchemaCatalogProgressiveQueries", access={Access.BIN})
def progressive(ctx: Any) -> None:
    """root ⇒ products, product ⇒ summaries, group ⇒ matching summaries, tool ⇒ full leaf, --all ⇒ catalog."""
    prefetch(ctx)
    view = bin_schema(ctx)
    keys, product, group, calls = _progressive_plan(ctx)
    run_calls(ctx, calls)
    problems = []

    def level(args: tuple[str, ...], want: str | None) -> dict[str, Any]:
        doc = _json(ctx, *args)
        if doc.get("level") != want:
            problems.append(f"`dws {' '.join(args)}`: level {doc.get('level')!r}, expected {want!r}")
        return doc

    level(("schema",), "products")
    doc = level(("schema", product), "product")
    if (doc.get("product") or {}).get("id") != product:
        problems.append(f"`dws schema {product}` describes product {(doc.get('product') or {}).get('id')!r}")
    leaf = level(("schema", keys[0]), None)
    if leaf.get("canonical_path") != keys[0] or "parameters" not in leaf:
        problems.append(f"`dws schema {keys[0]}` is not the full leaf")
    if view.doc.get("level") != "catalog":
        problems.append(f"`dws schema --all`: level {view.doc.get('level')!r}, expected 'catalog'")
    if group:
        for form in (group, group.replace(" ", ".")):
            got = level(("schema", form), "group")
            paths = [t.get("cli_path", "") for t in got.get("tools") or []]
            if not paths or any(not (p + " ").startswith(group + " ") and not any(
                    a.startswith(group + " ") for a in view.tools.get(t.get("canonical_path"), {}).get("aliases") or [])
                    for p, t in zip(paths, got.get("tools") or [], strict=True)):
                problems.append(f"`dws schema {form}` lists tools outside {group!r}: {paths}")
    else:
        ctx.observe("schema_group_level", "no tool path deeper than product + leaf: group level not exercised")
    soft(problems, assert_error_classified, run_one(ctx, plain("schema", UNKNOWN_PATH)), exit_code=3,
         category="validation", what=f"an unknown schema path (`dws schema {UNKNOWN_PATH}`)")
    if problems:
        raise AssertionError("\n".join(problems))


@gate("SCHCLI-LIST-EQ-ROOT", doc="D2 §6", access={Access.BIN})
def list_equals_root(ctx: Any) -> None:
    """`dws schema list` is exactly `dws schema`."""
    prefetch(ctx)
    run_calls(ctx, [plain("schema"), plain("schema", "list")])
    assert_equal(_json(ctx, "schema"), _json(ctx, "schema", "list"), "`dws schema` (expected) vs `dws schema list`")


# -- SCHCLI-EQUALS-CATALOG --------------------------------------------------------------------------------------------
def _overview(products: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """check-schema-binary.sh's jq projection of the catalog's products (R3.1)."""
    out = []
    for p in products:
        row = {"id": p.get("id"), "tool_count": p.get("tool_count"), "schema_path": p.get("id")}
        if p.get("agent_summary"):
            row["agent_summary"] = p["agent_summary"]
        elif p.get("use_when"):
            row["use_when"] = p["use_when"][:1]
        else:
            row["description"] = p.get("description", "")
        out.append(row)
    return out


def disk_catalog(ctx: Any) -> Any:
    """The release on disk (helper `pytest_dws.catalog`), or NotApplicable when only the binary is configured."""
    if ctx.settings.source is None and ctx.settings.catalog is None:
        raise NotApplicable("no catalog on disk to compare the binary with (--dws-source or --dws-catalog)")
    return ctx.release()


def _equals_calls(ctx: Any) -> dict[str, tuple[Call, Call]]:
    view = bin_schema(ctx)
    keys = sample(ctx, sorted(set(view.tools) & set(disk_catalog(ctx).tools)))
    return {k: (plain("schema", k), plain("schema", "--cli-path", _primary(view.tools[k]))) for k in keys}


plans("SCHCLI-EQUALS-CATALOG")(lambda ctx: [plain("schema")] + [c for pair in _equals_calls(ctx).values()
                                                                  for c in pair])


@gate("SCHCLI-EQUALS-CATALOG", doc="e81 scripts/policy/check-schema-binary.sh", access={Access.BIN, Access.DATA},
      per_tool=True)
def equals_catalog(ctx: Any) -> None:
    """What the binary prints is an exact projection of the catalog on disk (hashes, leaves, overview)."""
    prefetch(ctx)
    rel = disk_catalog(ctx)
    if ctx.settings.cli is None:
        raise NotApplicable("no implementation binary configured (--dws-cli CMD)")
    view = bin_schema(ctx)
    disk_tools = rel.tools
    problems = []
    if set(view.tools) != set(disk_tools):
        problems.append(f"tool sets differ: only in the binary {sorted(set(view.tools) - set(disk_tools))}, only "
                        f"on disk {sorted(set(disk_tools) - set(view.tools))}")
    differing = sorted(k for k in set(view.tools) & set(disk_tools) if view.tools[k] != disk_tools[k])
    if differing:
        from pytest_dws.assertions import render_diff

        k = differing[0]
        problems.append(f"{len(differing)} tool(s) differ from the catalog on disk: {differing[:20]}\n  first, {k} "
                        f"(disk -> binary):\n{render_diff(disk_tools[k], view.tools[k])}")
    root = _json(ctx, "schema")
    hashes = {"catalog_hash": rel.doc.get("source_hash"), "surface_hash": rel.doc.get("surface_hash")}
    for key, want in hashes.items():
        got = root.get(key, view.doc.get(key))
        if want and got != want:
            problems.append(f"`dws schema` {key} {got!r} != catalog {want!r}")
    if root.get("products") != _overview(rel.products):
        from pytest_dws.assertions import render_diff

        problems.append("`dws schema` products are not the overview projection of the catalog:\n"
                        + render_diff(_overview(rel.products), root.get("products")))
    calls = _equals_calls(ctx)
    results = run_calls(ctx, [c for pair in calls.values() for c in pair])
    for k, (by_key, by_path) in calls.items():
        a, b = results[by_key].check().stdout_json, results[by_path].check().stdout_json
        if not (a == b == view.tools[k]):
            problems.append(f"{k}: `schema <canonical>`, `schema --cli-path <primary>` and the --all entry differ")
    if problems:
        raise AssertionError("\n".join(problems))


# -- SCHCLI-ALIAS-VIEW, SCHCLI-PROJECTION, SCHCLI-COMPACT --------------------------------------------------------------
def _alias_subjects(ctx: Any) -> list[str]:
    try:
        return sorted(bin_schema(ctx).aliases)
    except (AssertionError, NotApplicable):
        return []


@gate("SCHCLI-ALIAS-VIEW", doc="D2 §6; check-schema-binary.sh", access={Access.BIN}, subjects=_alias_subjects)
def alias_view(ctx: Any, subject: str | None = None) -> None:
    """An alias query returns the same leaf with only cli_path = alias and is_alias = true."""
    view = bin_schema(ctx)
    if subject is None:
        raise NotApplicable("no tool of the binary's catalog declares an alias path")
    prefetch(ctx)
    run_calls(ctx, [plain("schema", a) for a in _alias_subjects(ctx)])
    got = _json(ctx, "schema", subject)
    leaf = view.tools[view.aliases[subject]]
    if got.get("is_alias") is not True or got.get("cli_path") != subject:
        raise AssertionError(f"`dws schema {subject}`: is_alias {got.get('is_alias')!r}, cli_path "
                             f"{got.get('cli_path')!r} (expected true / the alias path)")
    strip = ("cli_path", "is_alias")
    assert_equal({k: v for k, v in leaf.items() if k not in strip}, {k: v for k, v in got.items() if k not in strip},
                 f"alias view of {subject} minus cli_path/is_alias (canonical leaf -> alias view)")


def _product_subjects(ctx: Any) -> list[str]:
    try:
        view = bin_schema(ctx)
    except (AssertionError, NotApplicable):
        return []
    products = sorted({p.get("id") for p in view.products if p.get("id")})
    return subject_list(sample(ctx, products), products)


@gate("SCHCLI-PROJECTION", doc="e81 ToolSpec.ToSummaryPayload", access={Access.BIN},
      subjects=_product_subjects, per_tool=True)
def projection(ctx: Any, subject: str | None = None) -> None:
    """Product summaries are projections of the full leaves (never assembled independently)."""
    view = bin_schema(ctx)
    if subject is None:
        raise NotApplicable("the binary's catalog has no product")
    prefetch(ctx)
    run_calls(ctx, [plain("schema", p) for p in _product_subjects(ctx)])
    doc = _json(ctx, "schema", subject)
    tools = (doc.get("product") or {}).get("tools") or []
    expected = sorted(k for k in view.tools if view.product_of(k) == subject)
    assert_equal(expected, sorted(t.get("canonical_path") for t in tools), f"tools of `dws schema {subject}`")
    for t in tools:
        assert_summary_projects_leaf(t, view.tools[t["canonical_path"]], f"`dws schema {subject}`: "
                                     f"{t['canonical_path']}")


def _compact_problems(full: Any, small: Any, where: str, out: list[str]) -> None:
    """`small` = `full` minus the compact keys; parameters lose only their interface/provenance keys."""
    if not isinstance(full, dict) or not isinstance(small, dict):
        if full != small:
            out.append(f"{where}: differs")
        return
    leaked = sorted(set(small) & COMPACT_STRIP)
    if leaked:
        out.append(f"{where}: compact output keeps {leaked}")
    missing = sorted(set(full) - COMPACT_STRIP - set(small))
    if missing:
        out.append(f"{where}: compact output lost {missing}")
    for key in sorted(set(full) & set(small)):
        a, b = full[key], small[key]
        if key == "parameters" and isinstance(a, dict) and isinstance(b, dict):
            want = {n: {k: v for k, v in p.items() if k not in COMPACT_PARAM_STRIP} for n, p in a.items()
                    if isinstance(p, dict)}
            if b != want:
                out.append(f"{where}.parameters: not the parameters minus {sorted(COMPACT_PARAM_STRIP)}")
        elif key in ("products", "tools") and isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                _compact_problems(x, y, f"{where}.{key}[{i}]", out)
        elif key == "product":
            _compact_problems(a, b, f"{where}.product", out)
        elif a != b:
            out.append(f"{where}.{key}: value changed by --compact")


def _compact_calls(ctx: Any) -> list[Call]:
    keys = unsharded_sample(ctx, bin_schema(ctx).tools)[:1]
    return [plain("schema", "--all", "--compact")] + [c for k in keys for c in
                                                       (plain("schema", k), plain("schema", k, "--compact"))]


plans("SCHCLI-COMPACT")(_compact_calls)
plans("SCHCLI-LIST-EQ-ROOT")(lambda ctx: [plain("schema"), plain("schema", "list")])
plans("SCHCLI-ALIAS-VIEW")(lambda ctx: [plain("schema", a) for a in _alias_subjects(ctx)])
plans("SCHCLI-PROJECTION")(lambda ctx: [plain("schema", p) for p in _product_subjects(ctx)])


@gate("SCHCLI-COMPACT", doc="D2 §6; runtime_schema.go schemaCompactStripKeys", access={Access.BIN})
def compact_strips_only(ctx: Any) -> None:
    """--compact strips provenance/debug keys only; every other field equals the full output."""
    prefetch(ctx)
    view = bin_schema(ctx)
    keys = unsharded_sample(ctx, view.tools)[:1]
    run_calls(ctx, _compact_calls(ctx))
    problems: list[str] = []
    _compact_problems(view.doc, _json(ctx, "schema", "--all", "--compact"), "--all", problems)
    for k in keys:
        _compact_problems(_json(ctx, "schema", k), _json(ctx, "schema", k, "--compact"), k, problems)
    if problems:
        raise AssertionError("\n".join(problems[:40]))


# -- SCHCLI-NO-DISCOVERY (the runs of SCH-NO-LISTTOOLS[bin]: pytest_dws.binary.views.offline_calls) ----------
plans("SCHCLI-NO-DISCOVERY")(offline_calls)


@gate("SCHCLI-NO-DISCOVERY", doc="D2 §7 b1, §2; cf TestSchemaUsesEmbeddedCatalogWithoutRuntimeLoad",
      access={Access.MCP})
def no_discovery(ctx: Any) -> None:
    """schema (every level) and --help: exit 0, zero requests, with an empty HOME and no token."""
    check_offline_runs(ctx, succeed=True)


# -- SCHCLI-CORRUPT (source tree) ---------------------------------------------------------------------------
def tree_digest(root: Path) -> dict[str, bytes]:
    """Every file of a tree (minus VCS and caches) by relative path: the before/after proof of no writes."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not {".git", "__pycache__", ".ruff_cache", ".pytest_cache"} & set(rel.parts):
            out[rel.as_posix()] = path.read_bytes()
    return out


def copy_tree(src: Path, dst: Path) -> Path:
    """A working copy of the target tree (the original is never touched)."""
    shutil.copytree(src, dst, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", "__pycache__", ".ruff_cache", ".pytest_cache"))
    return dst


def _catalog_file(tree: Path, spec: dict[str, Any]) -> Path | None:
    """The embedded catalog file to tamper with: `[schema] catalog_file`, else the layout's first data file."""
    if spec.get("catalog_file"):
        return tree / spec["catalog_file"]
    shards = sorted((tree / "internal/cli/schema_catalog/tools").glob("*.json"))
    if shards:
        return shards[0]
    single = tree / "internal/cli/schema_catalog.json"
    return single if single.is_file() else None


def _tampered(path: Path, variant: str) -> str | None:
    """Rewrite `path` in place; returns a canonical path whose leaf was altered (value variant), if any."""
    import json

    if variant == "truncated":
        raw = path.read_bytes()
        path.write_bytes(raw[: max(1, len(raw) // 2)])
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    tools = doc.get("tools") or {}
    key = sorted(tools)[0] if tools else None
    if key is not None:
        tools[key]["description"] = f"{tools[key].get('description', '')} {TAMPER}"
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return key


def _corrupt_runs(ctx: Any) -> tuple[dict[str, bytes], list[tuple[str, tuple[str, ...], Any]]]:
    """The target tree's digest, then both tampered copies and their runs as ONE batch on the bounded pool:
    ``(before, [(variant, args, invocation), ...])``."""
    from pytest_dws.settings import _cli_argv
    from pytest_dws.target import Job

    tree = ctx.settings.source
    if tree is None:
        raise NotApplicable("no source tree configured (--dws-source TREE)")
    spec = schema_profile(ctx)
    if not spec.get("tree_cli"):
        raise NotApplicable("the profile does not say how to run the CLI of a tree copy ([schema] tree_cli in the "
                            "expectations file); rebuilding a Go binary with a tampered catalog is not supported")
    before = tree_digest(tree)
    world = ctx.memo(("schcli", "corrupt-world"), lambda: prebuilt(CORRUPT_WORLD))
    work = Path(tempfile.mkdtemp(prefix="corrupt-", dir=ctx.tmp_root))
    try:
        runs: list[tuple[str, tuple[str, ...], Job]] = []
        for variant in ("value", "truncated"):
            copy = copy_tree(tree, work / variant)
            target = _catalog_file(copy, spec)
            if target is None:
                raise NotApplicable("no embedded catalog file found in the tree ([schema] catalog_file)")
            key = _tampered(target, variant)
            prefix = _cli_argv(spec["tree_cli"].replace("{tree}", str(copy)), copy)
            for args in [("schema",)] + ([("schema", key)] if key else []):
                runs.append((variant, args, Job(args, world, {"token": None, "globals_": False,
                                                             "prefix": prefix})))
        invs = _run_tree_jobs(ctx, [job for _, _, job in runs])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return before, [(variant, args, inv) for (variant, args, _), inv in zip(runs, invs, strict=True)]


@gate("SCHCLI-CORRUPT", doc="D2 §7 b1", access={Access.SRC})
def corrupt_catalog(ctx: Any) -> None:
    """A corrupt embedded catalog falls back to the local tree or fails closed, never to discovery."""
    before, runs = _corrupt_runs(ctx)
    problems: list[str] = []
    for variant, args, inv in runs:
        inv.check()
        what = f"{variant} corruption, `dws {' '.join(args)}`"
        soft(problems, assert_no_requests, inv, f"{what} (no discovery)")
        if inv.exit_code == 0 and TAMPER in inv.stdout:
            problems.append(f"{what}: the tampered catalog was served as if valid")
        if inv.exit_code != 0:  # failing closed is allowed, with a typed error
            soft(problems, assert_error_classified, inv, what=what)
    assert_byte_identical_regeneration(before, tree_digest(ctx.settings.source),
                                       "the target tree before vs after the gate")
    if problems:
        raise AssertionError("\n".join(problems))


#: The fake world of the corrupt-catalog runs: empty (any request at all is discovery).
CORRUPT_WORLD = {"name": "corrupt", "world": {}, "overrides": []}


def _run_tree_jobs(ctx: Any, jobs: list[Any]) -> list[Any]:
    """Run jobs whose ``prefix`` option names a tree copy's CLI: on the session runner's pool when there is one
    or else on a runner of their own; either records them in the session's ledger."""
    from pytest_dws.target import Runner, resolve_prefix

    jobs = [replace(j, options={**j.options, "prefix": resolve_prefix(j.options["prefix"])}) for j in jobs]
    workers = 1 if under_xdist(ctx) else None
    if ctx.settings.cli is not None:
        return ctx.cli().run_jobs(jobs, workers=workers)
    runner = Runner(jobs[0].options["prefix"], ctx)
    try:
        invs = runner.run_jobs(jobs, workers=workers)
    finally:
        runner.close()
    return invs


# -- SCHCLI-PLUGINS-LAZY --------------------------------------------------------------------------------------
#: The suite's stdio test plugin: a newline-delimited JSON-RPC MCP server that appends "start" and then every
#: method it receives to the marker file named by its argument (so the gate sees Start / initialize / call).
STDIO_PLUGIN = """\
import json, sys
marker = sys.argv[1]
def note(what):
    with open(marker, "a", encoding="utf-8") as fh:
        fh.write(what + "\\n")
note("start")
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if not isinstance(msg, dict):
        continue
    note(str(msg.get("method")))
    if "id" not in msg:
        continue
    if msg.get("method") == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "dws-contract-stdio-plugin", "version": "1"}}
    elif msg.get("method") == "tools/call":
        args = (msg.get("params") or {}).get("arguments")
        result = {"content": [{"type": "text", "text": json.dumps({"success": True, "echo": args})}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
    sys.stdout.flush()
"""
_PLUGIN_KEYS = {"files": dict, "env": dict, "commands": list, "exec_http": list, "exec_stdio": list,
                "auth_header": str}


def _plugin_spec(ctx: Any) -> dict[str, Any]:
    """`[schema.plugin]` of the expectations file: how to install the test plugins in this implementation."""
    spec = schema_profile(ctx).get("plugin")
    where = f"{ctx.expect.path}: $.schema.plugin"
    if not spec:
        raise NotApplicable("the profile names no plugin manifest format ([schema.plugin] files/env/exec_http/"
                            "exec_stdio in the expectations file), so no test plugin can be installed")
    for key, typ in _PLUGIN_KEYS.items():
        if key in spec and not isinstance(spec[key], typ):
            raise NotApplicable(f"{where}.{key}: expected a {typ.__name__}, got {spec[key]!r}")
    if not spec.get("exec_http") and not spec.get("exec_stdio"):
        raise NotApplicable(f"{where}: names neither exec_http nor exec_stdio (the plugin tool runs to judge)")
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
    got = marker.read_text(encoding="utf-8").split()
    marker.unlink()
    return got


def _plugin_runs(ctx: Any) -> list[tuple[str, tuple[str, ...], Any, list[str]]]:
    """Every run of the gate, side by side on the bounded pool: ``[(kind, args, invocation, marks), ...]``
    (kind: lazy / exec_http / exec_stdio; marks: what the stdio test plugin recorded during that run)."""
    from pytest_dws.target import Job

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
                jobs.append(Job(args, None, {**kw, "backend": srv, "env": env}))
                markers.append(marker)
            invs = runner.run_jobs(jobs, workers=1 if under_xdist(ctx) else None)
        return [(kind, args, inv, _marks(marker))
                for (kind, args, _), inv, marker in zip(runs, invs, markers, strict=True)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


@gate("SCHCLI-PLUGINS-LAZY", doc="D2 §7 b2-b4", access={Access.MCP})
def plugins_lazy(ctx: Any) -> None:
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


#: The fake world of the plugin runs: empty (the HTTP plugin's tool answers from the server's defaults).
PLUGIN_WORLD = {"name": "plugin", "world": {}, "overrides": []}


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
