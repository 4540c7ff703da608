"""SCHCLI-CORRUPT (D2 §7 b1): a build whose embedded catalog is tampered with refuses to serve it.

The tree is copied (never touched), the catalog file tampered in the copy, and the copy's CLI run offline against
an empty fake world: either as it is (``[schema] tree_cli``: a tree that runs from source, the reference) or
rebuilt first (``[schema] tree_build``: a Go tree embeds its catalog at build time, so only a build of the
tampered copy answers from the tampered catalog).
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_dws.assertions import (
    assert_byte_identical_regeneration,
    assert_error_classified,
    assert_no_requests,
)
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.views import (
    schema_profile,
)
from pytest_dws.observe.binary.worlds import prebuilt
from pytest_dws.observe.calls import under_xdist
from pytest_dws.observe.sourcetree import copy_tree, source_tree, tree_digest
from pytest_dws.registry import Access, gate
from pytest_dws.verdict.cases import soft

TAMPER = "TAMPERED-BY-DWS-CONTRACT"


# -- SCHCLI-CORRUPT (source tree) ---------------------------------------------------------------------------
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


def _corrupt_runs(ctx: GateContext) -> tuple[dict[str, bytes], list[tuple[str, tuple[str, ...], Any]]]:
    """The target tree's digest, then both tampered copies and their runs as ONE batch on the bounded pool:
    ``(before, [(variant, args, invocation), ...])``."""
    from pytest_dws.inputs.launchers import cli_argv
    from pytest_dws.launch import Job

    tree = ctx.settings.source
    if tree is None:
        raise NotApplicable("no source tree configured (--dws-source TREE)", wants="--dws-source")
    spec = schema_profile(ctx)
    if not spec.get("tree_cli") and not spec.get("tree_build"):
        raise NotApplicable("the expectations file does not say how to run the CLI of a tree copy ([schema] "
                            "tree_cli) or how to build it ([schema] tree_build)",
                            wants="[schema] tree_cli or tree_build in the expectations file")
    if not spec.get("tree_cli"):
        _toolchain(ctx, spec["tree_build"])
    before = tree_digest(tree)
    world = ctx.memo(("schcli", "corrupt-world"), lambda: prebuilt(CORRUPT_WORLD))
    work = Path(tempfile.mkdtemp(prefix="corrupt-", dir=ctx.tmp_root))
    try:
        runs: list[tuple[str, tuple[str, ...], Job]] = []
        for variant in ("value", "truncated"):
            copy = copy_tree(tree, work / variant)
            target = _catalog_file(copy, spec)
            if target is None:
                raise NotApplicable("no embedded catalog file found in the tree ([schema] catalog_file)",
                                    wants="an embedded catalog file ([schema] catalog_file)")
            key = _tampered(target, variant)
            if spec.get("tree_cli"):
                prefix = cli_argv(spec["tree_cli"].replace("{tree}", str(copy)), copy)
            else:
                prefix = [str(_built(ctx, spec, copy, work / f"{variant}-build", variant))]
            for args in [("schema",)] + ([("schema", key)] if key else []):
                runs.append((variant, args, Job(args, world, {"token": None, "globals_": False,
                                                             "prefix": prefix})))
        invs = _run_tree_jobs(ctx, [job for _, _, job in runs])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return before, [(variant, args, inv) for (variant, args, _), inv in zip(runs, invs, strict=True)]


def _toolchain(ctx: GateContext, command: str) -> None:
    """The build command's program on the suite's PATH (a replay builds nothing: it needs none)."""
    program = (shlex.split(command) or [""])[0]
    if ctx.settings.replay is not None or program == "{python}" or shutil.which(program):
        return
    if program == "go":
        raise NotApplicable("a Go tree embeds its catalog at build time and there is no `go` toolchain on PATH to "
                            "rebuild the tampered copy ([schema] tree_build)", wants="a Go toolchain on PATH")
    raise NotApplicable(f"`{program}` ([schema] tree_build) is not on PATH", wants=f"`{program}` on PATH")


def _built(ctx: GateContext, spec: dict[str, Any], copy: Path, out_dir: Path, variant: str) -> Path:
    """The CLI of the tampered copy, built by ``[schema] tree_build`` (``{out}``: the binary, ``{python}``: the
    suite's Python) in the copy, offline and jailed like the tree's other commands (FIN-*): the copy, the build's
    HOME (``out_dir``, where the binary lands) and Go's build cache are all it may write.

    Beside the binary, :data:`~pytest_dws.launch.recording.BUILT_FROM` names what it was built from (the tampered
    copy's content and the command template): a recording keys the binary's runs by it, and a replay builds
    nothing (it writes the name and an empty stand-in at the binary's path, and the recording answers).

    A build that fails is not applicable, with its exit code and output tail (``tree_builds`` section of the
    report): the gate judges what the built CLI answers from a corrupt catalog (D2 §7 b1: the local tree or fail
    closed, never discovery), and a Go build copies embedded files as bytes without reading them, so a conforming
    release fails closed when the CLI runs; a failed build says nothing about that (a missing module, a toolchain
    too old fail it the same way), and counting it as failing closed would pass a tree nobody ran.
    """
    from pytest_dws.core.identity import path_digest
    from pytest_dws.launch.recording import BUILT_FROM
    from pytest_dws.observe.sourcetree import run_in_copy

    command = str(spec["tree_build"])
    out_dir.mkdir(parents=True)
    out = out_dir / "dws"
    (out_dir / BUILT_FROM).write_text(f"{path_digest(copy)}\0{command}", encoding="utf-8")
    if ctx.settings.replay is not None:
        out.write_bytes(b"")
        return out
    import sys

    argv = [sys.executable if w == "{python}" else w.replace("{out}", str(out)) for w in shlex.split(command)]
    inv = run_in_copy(ctx, argv, copy, out_dir, float(spec.get("go_timeout", 1800)))
    ctx.section("tree_builds", {f"SCHCLI-CORRUPT {variant}": {
        "command": command, "exit_code": inv.exit_code, "timed_out": inv.timed_out,
        "seconds": round(inv.duration, 1)}})
    if inv.exit_code != 0 or not out.is_file():
        tail = " | ".join((inv.stdout + inv.stderr).strip().splitlines()[-5:])[-600:]
        said = "timed out" if inv.timed_out else f"exited {inv.exit_code}"
        raise NotApplicable(f"the build of the tampered copy ({variant} corruption) {said}"
                            f"{'' if out.is_file() else ' without writing the binary'}: `{command}`: {tail}",
                            wants="a tampered tree copy that builds ([schema] tree_build)")
    return out


@gate("SCHCLI-CORRUPT", doc="D2 §7 b1", access={Access.SRC})
def corrupt_catalog(ctx: GateContext) -> None:
    """A corrupt embedded catalog falls back to the local tree or fails closed, never to discovery."""
    before, runs = _corrupt_runs(ctx)
    problems: list[str] = []
    seen: dict[str, Any] = {}
    for variant, args, inv in runs:
        inv.check()
        what = f"{variant} corruption, `dws {' '.join(args)}`"
        error = inv.error or {}
        seen[what] = {"exit_code": inv.exit_code, "reason": error.get("reason"), "category": error.get("category"),
                      "requests": len(inv.transcript), "served_tampered": TAMPER in inv.stdout}
        soft(problems, assert_no_requests, inv, f"{what} (no discovery)")
        if inv.exit_code == 0 and TAMPER in inv.stdout:
            problems.append(f"{what}: the tampered catalog was served as if valid")
        if inv.exit_code != 0:  # failing closed is allowed, with a typed error
            soft(problems, assert_error_classified, inv, what=what)
    ctx.section("schcli_corrupt", seen)  # the observed facts, passing or not (exit code, typed reason, requests)
    assert_byte_identical_regeneration(before, tree_digest(source_tree(ctx)),
                                       "the target tree before vs after the gate")
    if problems:
        raise AssertionError("\n".join(problems))


#: The fake world of the corrupt-catalog runs: empty (any request at all is discovery).
CORRUPT_WORLD = {"name": "corrupt", "world": {}, "overrides": []}


def _run_tree_jobs(ctx: GateContext, jobs: list[Any]) -> list[Any]:
    """Run jobs whose ``prefix`` option names a tree copy's CLI: on the session runner's pool when there is one
    or else on a runner of their own; either records them in the session's ledger."""
    from pytest_dws.launch import Runner, resolve_prefix

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
