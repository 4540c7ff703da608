"""The generator run twice in temporary copies of the tree, offline (D2 §4, §7 b5, §8; docs/contract.md R7).

The generator (``--dws-generator`` / ini ``dws_generator``; default ``make generate-schema`` for a Go tree) only
ever runs in temporary copies of the tree: twice in copy A (consecutive runs) and once in copy B, offline
(empty HOME, dead proxy, no credentials). The target tree is hashed before and after and must be unchanged."""

from __future__ import annotations

import shlex
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_dws.assertions import assert_byte_identical_regeneration
from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.views import schema_profile
from pytest_dws.observe.calls import target_time
from pytest_dws.observe.sourcetree import copy_tree, files_under, remap, run_in_copy, source_tree, tree_digest

#: What the generator writes and what it must not touch, per upstream layout (docs/contract.md R7), unless the
#: expectations file says otherwise (`[schema] generated = [...]`, `reviewed_inputs = [...]`).
LAYOUTS = {
    "e81": {"marker": "internal/cli/schema_catalog/catalog.json",
            "generated": ["internal/cli/schema_catalog", "internal/cli/schema_agent_metadata",
                          "internal/cli/schema_agent_metadata_audit.json", "internal/cli/param_aliases_generated.go"],
            "reviewed_inputs": ["internal/cli/schema_command_registry", "internal/cli/param_concepts.json",
                                "internal/cli/param_concepts.schema.json", "internal/cli/schema_hints/metadata",
                                "internal/cli/schema_hints/selection"]},
    "cf": {"marker": "internal/cli/schema_catalog.json",
           "generated": ["internal/cli/schema_catalog.json", "internal/cli/schema_agent_metadata",
                         "internal/cli/schema_agent_metadata_audit.json"],
           "reviewed_inputs": ["internal/cli/schema_command_surface.json", "skills/mono/schema-hints"]},
}


# -- the regeneration runs (memoised once per session) ---------------------------------------------------------
@dataclass
class GenRun:
    label: str
    exit_code: int | None
    stderr: str
    outputs: dict[str, bytes]
    reviewed_after: dict[str, bytes]
    leaked: list[str] = field(default_factory=list)  # absolute temp paths found in the outputs


@dataclass
class Regen:
    tree: Path
    argv: list[str]
    generated: list[str]
    reviewed: list[str]
    committed: dict[str, bytes]
    reviewed_before: dict[str, bytes]
    runs: list[GenRun]
    tree_before: dict[str, bytes]
    tree_after: dict[str, bytes]

    def check_tree(self) -> None:
        """The target's own tree was not modified by anything the suite ran."""
        __tracebackhide__ = True
        assert_byte_identical_regeneration(self.tree_before, self.tree_after,
                                           f"the target tree {self.tree} before vs after regeneration")

    def check_ran(self) -> None:
        __tracebackhide__ = True
        for run in self.runs:
            if run.exit_code != 0:
                tail = "\n".join(run.stderr.strip().splitlines()[-15:])
                raise AssertionError(f"generation {run.label} failed offline: `{shlex.join(self.argv)}` exited "
                                     f"{run.exit_code}\n{tail}")


def _layout(ctx: GateContext, tree: Path) -> dict[str, Any]:
    spec = schema_profile(ctx)
    layouts: dict[str, dict[str, Any]] = LAYOUTS
    for name, layout in layouts.items():
        if (tree / layout["marker"]).is_file():
            return {"generated": spec.get("generated", layout["generated"]),
                    "reviewed_inputs": spec.get("reviewed_inputs", layout["reviewed_inputs"]), "name": name}
    if spec.get("generated") and spec.get("reviewed_inputs"):
        return {"generated": spec["generated"], "reviewed_inputs": spec["reviewed_inputs"], "name": "profile"}
    from pytest_dws.inputs.catalog.layout import detect

    if detect(tree) is None:  # issue 27: newer upstream trees retired the committed JSON catalog
        raise NotApplicable("this tree assembles its catalog at build time, without a committed catalog: nothing "
                            "committed to regenerate or drift from; SCH-BYTE-IDENTICAL[bin] compares two "
                            "`dws schema --all` of the build", wants="a committed catalog")
    raise NotApplicable("unknown catalog layout: set [schema] generated / reviewed_inputs in the expectations file",
                        wants="a known catalog layout ([schema] in the expectations file)")


def generator_argv(ctx: GateContext, tree: Path) -> list[str]:
    """The configured generator, else `make generate-schema` for a Go tree with a Makefile."""
    if ctx.settings.generator:
        return list(ctx.settings.generator)
    if (tree / "go.mod").is_file() and (tree / "Makefile").is_file():
        return ["make", "generate-schema"]
    raise NotApplicable("no generator command (--dws-generator CMD or ini dws_generator; the Go default "
                        "`make generate-schema` needs go.mod and a Makefile)",
                        wants="a generator command (--dws-generator)")


def regen(ctx: GateContext) -> Regen:
    """Copy the tree twice, run the generator (A, A again, B) offline, snapshot everything."""

    def build() -> Regen:

        tree = source_tree(ctx)
        argv = generator_argv(ctx, tree)
        layout = _layout(ctx, tree)
        before = tree_digest(tree)
        timeout = float(schema_profile(ctx).get("generator_timeout", max(ctx.settings.timeout, 900)))
        work = Path(tempfile.mkdtemp(prefix="regen-", dir=ctx.tmp_root))
        copies = {name: copy_tree(tree, work / name) for name in ("A", "B")}

        def generate(label: str, copy: Path) -> GenRun:
            home = Path(tempfile.mkdtemp(prefix="home-", dir=work))
            inv = run_in_copy(ctx, remap(argv, tree, copy), copy, home, timeout)
            target_time(ctx, inv)
            outputs = files_under(copy, layout["generated"])
            leaked = sorted(rel for rel, data in outputs.items()
                            if str(work).encode() in data or str(home).encode() in data)
            return GenRun(label, inv.exit_code, inv.stderr, outputs, files_under(copy, layout["reviewed_inputs"]),
                          leaked)

        try:
            with ThreadPoolExecutor(max_workers=2) as pool:  # copy B is independent of A's two runs
                in_b = pool.submit(generate, "B#1", copies["B"])
                runs = [generate("A#1", copies["A"]), generate("A#2", copies["A"]), in_b.result()]
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return Regen(tree, argv, layout["generated"], layout["reviewed_inputs"],
                     files_under(tree, layout["generated"]), files_under(tree, layout["reviewed_inputs"]), runs,
                     before, tree_digest(tree))

    return ctx.memo(("regen",), build)


# -- the generator without / with a tampered previous catalog (D2 §4 "generator 不依赖上一次 Catalog 自回放") --------
#: What a tampered previous catalog says differently: every selection list, description and parameter set.
TAMPER_MARK = "dws-contract-tampered"


def catalog_paths(generated: list[str]) -> list[str]:
    """The previous catalog among the generated paths (cf ``schema_catalog.json``, e81 ``schema_catalog/``)."""
    return [g for g in generated if Path(g).name.startswith("schema_catalog")]


def _tamper(value: Any) -> Any:
    """The same JSON shape with other selection semantics and parameter metadata (a wrong previous catalog)."""
    if isinstance(value, dict):
        out = {k: _tamper(v) for k, v in value.items()}
        for key in ("use_when", "avoid_when", "examples"):
            if isinstance(out.get(key), list):
                out[key] = [f"{TAMPER_MARK} {key}"]
        if isinstance(out.get("description"), str):
            out["description"] += f" ({TAMPER_MARK})"
        if isinstance(out.get("parameters"), dict):
            out["parameters"][TAMPER_MARK] = {"type": "string", "description": TAMPER_MARK, "required": True,
                                              "property": "tamperedProperty"}
        return out
    if isinstance(value, list):
        return [_tamper(v) for v in value]
    return value


def _tamper_files(copy: Path, paths: list[str]) -> int:
    import json

    done = 0
    for rel in paths:
        root = copy / rel
        for f in ([root] if root.is_file() else sorted(root.rglob("*.json")) if root.is_dir() else []):
            try:
                doc = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            f.write_text(json.dumps(_tamper(doc), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
            done += 1
    return done


def replay_runs(ctx: GateContext) -> tuple[Regen, list[GenRun]]:
    """The generator once in a copy whose previous catalog is REMOVED and once in a copy where it is TAMPERED
    (valid JSON, other selection semantics and parameters, the hashes stale): what it generates must not change
    (compared with the committed files), since it may not replay the previous catalog."""

    def build() -> tuple[Regen, list[GenRun]]:

        base = regen(ctx)
        tree = base.tree
        layout = _layout(ctx, tree)
        previous = catalog_paths(layout["generated"])
        if not previous:
            raise NotApplicable(f"no catalog among the generated paths {layout['generated']}",
                                wants="a catalog among the generated paths")
        timeout = float(schema_profile(ctx).get("generator_timeout", max(ctx.settings.timeout, 900)))
        work = Path(tempfile.mkdtemp(prefix="replay-", dir=ctx.tmp_root))
        runs = []
        try:
            for label in ("previous catalog removed", "previous catalog tampered"):
                copy = copy_tree(tree, work / label.split()[-1])
                if label.endswith("removed"):
                    for rel in previous:
                        target = copy / rel
                        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
                elif not _tamper_files(copy, previous):
                    continue
                home = Path(tempfile.mkdtemp(prefix="home-", dir=work))
                inv = run_in_copy(ctx, remap(base.argv, tree, copy), copy, home, timeout)
                target_time(ctx, inv)
                runs.append(GenRun(label, inv.exit_code, inv.stderr, files_under(copy, layout["generated"]),
                                   files_under(copy, layout["reviewed_inputs"])))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return base, runs

    return ctx.memo(("regen", "replay"), build)
