"""The target's source tree, handled without touching it: digests (before/after proof), working copies,
the offline environment that anything run in a copy gets (empty HOME, dead proxy, no credentials)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from fake_mcp.env import MINIMAL_PATH
from pytest_dws.core.protocols import Access, GateContext

GO_ENV = ("GOPATH", "GOMODCACHE", "GOCACHE", "GOROOT", "GOFLAGS", "GOTOOLCHAIN", "GOPROXY", "GONOSUMDB",
          "CGO_ENABLED")



def tree_text(ctx: GateContext, tree: Path, path: Path) -> str:
    """A text file of the tree under test, judged as far as it can be read: bytes that are not UTF-8 become U+FFFD
    and the file is named with the byte offset (the report's ``unreadable_files``, a "not judged" line of the
    summary); an unreadable file is empty text, named the same way. Real trees are messy (one of upstream's Skill
    documents holds a broken full-width comma): a gate never ends in a traceback over it (issue 29)."""
    rel = path.relative_to(tree).as_posix() if path.is_relative_to(tree) else str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        ctx.section("unreadable_files", {rel: f"cannot be read: {exc.strerror or exc}"})
        return ""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        ctx.section("unreadable_files", {rel: f"not valid UTF-8 at byte {exc.start} (read with U+FFFD there)"})
        return raw.decode("utf-8", "replace")


def files_under(root: Path, rels: list[str]) -> dict[str, bytes]:
    """{relative path: bytes} of the files and directories `rels` under `root` (missing ones are absent)."""
    out: dict[str, bytes] = {}
    for rel in rels:
        base = root / rel
        paths = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file()) if base.is_dir() else []
        for p in paths:
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def offline_env(ctx: GateContext, home: Path, tree: Path) -> dict[str, str]:
    """Empty HOME, dead proxy, no credentials: nothing of the suite's environment but Go's build caches."""
    from fake_mcp import isolation_env

    path = MINIMAL_PATH
    go = shutil.which("go")
    if go:
        path = f"{Path(go).parent}:{path}"
    env = {"PATH": path, "LANG": "C.UTF-8", **isolation_env(home)}
    if (tree / "go.mod").is_file():
        env.update({k: os.environ[k] for k in GO_ENV if k in os.environ})
        env.setdefault("GOTOOLCHAIN", "local")
        env.setdefault("GOPROXY", "off")
    env.update(ctx.settings.env)
    return env


def run_in_copy(ctx: GateContext, argv: list[str], copy: Path, home: Path, timeout: float,
                env: dict[str, str] | None = None) -> Any:
    """Run ``argv`` in a working copy of the tree, offline (:func:`offline_env` plus ``env``), jailed: the copy
    and its HOME are all it may write, the user's folders are hidden (issue 45,
    :func:`pytest_dws.launch.contain.containment.tree_jail`)."""
    from pytest_dws.launch import run_process
    from pytest_dws.launch.contain.containment import tree_jail

    full_env = {**offline_env(ctx, home, copy), **(env or {})}
    jail = tree_jail(ctx.settings, argv, copy, home, full_env)
    return run_process(argv, env=full_env, cwd=copy, timeout=timeout, jail=jail)


def remap(argv: list[str], tree: Path, copy: Path) -> list[str]:
    out = []
    for a in argv:
        p = Path(a)
        if p.is_absolute() and (p == tree or tree in p.parents):
            a = str(copy / p.relative_to(tree))
        out.append(a)
    return out


def tree_digest(root: Path) -> dict[str, bytes]:
    """Every file of a tree (minus VCS and caches) by relative path: the before/after proof of no writes."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not {".git", "__pycache__", ".ruff_cache", ".pytest_cache"} & set(rel.parts):
            out[rel.as_posix()] = path.read_bytes()
    return out


def copy_tree(src: Path, dst: Path) -> Path:
    """A working copy of the target tree (the original is never touched), without its VCS and tool caches.

    A Python tree's bytecode cache comes along, modification times kept: what runs in the copy (a generator, the
    tree's CLI) loads its modules as it would in the tree, instead of compiling every one again at each run (issue
    44: the reference's modules compiled afresh in each of a session's ~10 runs in copies). A cache entry is checked
    against its source's time and size, as in the tree itself, so an edited copy recompiles what it edited."""
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(".git", ".ruff_cache", ".pytest_cache"))
    return dst


def source_tree(ctx: GateContext) -> Path:
    """The configured source tree (``--dws-source``), or NotApplicable naming the option."""
    ctx.require(Access.SRC)
    tree = ctx.settings.source
    assert tree is not None  # require() passed
    return tree
