"""Source-tree gates: byte-identical, offline, drift-free regeneration that leaves reviewed inputs alone
(D2 §4, §7 b5, §8, §9 b13; GATES.md R7), and the static scans of Skills and runtime code (D1 §7.3 b4, §8.3,
§9.1; D2 §1).

The generator (``--dws-generator`` / ini ``dws_generator``; default ``make generate-schema`` for a Go tree) only
ever runs in temporary copies of the tree: twice in copy A (consecutive runs) and once in copy B, offline
(empty HOME, dead proxy, no credentials). The target tree is hashed before and after and must be unchanged.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_dws.assertions import assert_byte_identical_regeneration
from pytest_dws.binary.argv import synth_for_name
from pytest_dws.binary.views import prefetch_selected as prefetch
from pytest_dws.binary.views import schema_profile
from pytest_dws.binary.worlds import plain
from pytest_dws.calls import plans, run_calls, target_time
from pytest_dws.errors import NotApplicable
from pytest_dws.gates.schcli import copy_tree, tree_digest
from pytest_dws.registry import Access, gate

#: What the generator writes and what it must not touch, per upstream layout (GATES.md R7), unless the
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
GO_ENV = ("GOPATH", "GOMODCACHE", "GOCACHE", "GOROOT", "GOFLAGS", "GOTOOLCHAIN", "GOPROXY", "GONOSUMDB",
          "CGO_ENABLED")
MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"


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


def files_under(root: Path, rels: list[str]) -> dict[str, bytes]:
    """{relative path: bytes} of the files and directories `rels` under `root` (missing ones are absent)."""
    out: dict[str, bytes] = {}
    for rel in rels:
        base = root / rel
        paths = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file()) if base.is_dir() else []
        for p in paths:
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def _layout(ctx: Any, tree: Path) -> dict[str, Any]:
    spec = schema_profile(ctx)
    for name, layout in LAYOUTS.items():
        if (tree / layout["marker"]).is_file():
            return {"generated": spec.get("generated", layout["generated"]),
                    "reviewed_inputs": spec.get("reviewed_inputs", layout["reviewed_inputs"]), "name": name}
    if spec.get("generated") and spec.get("reviewed_inputs"):
        return {"generated": spec["generated"], "reviewed_inputs": spec["reviewed_inputs"], "name": "profile"}
    raise NotApplicable("unknown catalog layout: set [schema] generated / reviewed_inputs in the expectations file")


def generator_argv(ctx: Any, tree: Path) -> list[str]:
    """The configured generator, else `make generate-schema` for a Go tree with a Makefile."""
    if ctx.settings.generator:
        return list(ctx.settings.generator)
    if (tree / "go.mod").is_file() and (tree / "Makefile").is_file():
        return ["make", "generate-schema"]
    raise NotApplicable("no generator command (--dws-generator CMD or ini dws_generator; the Go default "
                        "`make generate-schema` needs go.mod and a Makefile)")


def offline_env(ctx: Any, home: Path, tree: Path) -> dict[str, str]:
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


def _remap(argv: list[str], tree: Path, copy: Path) -> list[str]:
    out = []
    for a in argv:
        p = Path(a)
        if p.is_absolute() and (p == tree or tree in p.parents):
            a = str(copy / p.relative_to(tree))
        out.append(a)
    return out


def regen(ctx: Any) -> Regen:
    """Copy the tree twice, run the generator (A, A again, B) offline, snapshot everything."""

    def build() -> Regen:
        from pytest_dws.target import run_process

        ctx.require(Access.SRC)
        tree = ctx.settings.source
        argv = generator_argv(ctx, tree)
        layout = _layout(ctx, tree)
        before = tree_digest(tree)
        timeout = float(schema_profile(ctx).get("generator_timeout", max(ctx.settings.timeout, 900)))
        work = Path(tempfile.mkdtemp(prefix="regen-", dir=ctx.tmp_root))
        copies = {name: copy_tree(tree, work / name) for name in ("A", "B")}

        def generate(label: str, copy: Path) -> GenRun:
            home = Path(tempfile.mkdtemp(prefix="home-", dir=work))
            inv = run_process(_remap(argv, tree, copy), env=offline_env(ctx, home, copy), cwd=copy, timeout=timeout)
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


@gate("SCH-BYTE-IDENTICAL", doc="D2 §4; check-generated-drift.sh", access={Access.SRC})
def byte_identical(ctx: Any) -> None:
    """Consecutive generations (and a second clean copy) are byte-identical."""
    r = regen(ctx)
    r.check_tree()
    r.check_ran()
    a1, a2, b1 = r.runs
    assert_byte_identical_regeneration(a1.outputs, a2.outputs, "generation A#1 vs the next run A#2 in the same copy")
    assert_byte_identical_regeneration(a1.outputs, b1.outputs, "generation in copy A vs generation in copy B")


@gate("SCH-NO-DRIFT", doc="D2 §9 b13, §8; check-generated-drift.sh", access={Access.SRC})
def no_drift(ctx: Any) -> None:
    """The generated catalog and metadata equal the committed files."""
    r = regen(ctx)
    r.check_tree()
    r.check_ran()
    ctx.observe("generated_files", len(r.committed))
    if not r.committed:
        raise AssertionError(f"none of the generated paths exists in the tree: {r.generated}")
    assert_byte_identical_regeneration(r.committed, r.runs[0].outputs, "committed (expected) vs regenerated")


@gate("SCH-SURFACE-REVIEWED-INPUT", doc="D2 §8, §3 table; e81 Makefile generate-schema", access={Access.SRC})
def reviewed_inputs_untouched(ctx: Any) -> None:
    """Generation never rewrites the reviewed surface or hint inputs."""
    r = regen(ctx)
    r.check_tree()
    if not r.reviewed_before:
        raise AssertionError(f"none of the reviewed inputs exists in the tree: {r.reviewed}")
    ctx.observe("reviewed_input_files", len(r.reviewed_before))
    for run in r.runs:
        assert_byte_identical_regeneration(r.reviewed_before, run.reviewed_after,
                                           f"reviewed inputs before vs after generation {run.label}")


@gate("SCH-GEN-OFFLINE", doc="D2 §7 b5", access={Access.SRC})
def generation_offline(ctx: Any) -> None:
    """Generation needs no login, network, token or cache: offline it succeeds and reproduces the commit."""
    r = regen(ctx)
    r.check_tree()
    r.check_ran()
    leaked = sorted({p for run in r.runs for p in run.leaked})
    if leaked:
        raise AssertionError(f"generated files embed the machine's temporary paths (HOME/working copy): {leaked}")
    assert_byte_identical_regeneration(r.committed, r.runs[-1].outputs,
                                       "committed (expected) vs generated offline in a clean copy")


# -- Skills: cited commands ----------------------------------------------------------------------------------------
_BACKTICK = re.compile(r"`(dws\s+[^`]+)`")
_LINE = re.compile(r"^\s*(?:[>$]\s*)?(dws\s+.+?)\s*$")
ANTI_MARKERS = re.compile(r"禁止|不要|❌|避免|不推荐|\bdo not\b|\bdon't\b|\bnever\b", re.IGNORECASE)


@dataclass(frozen=True)
class Cited:
    """One `dws ...` command cited by a Skill document."""

    where: str  # file:line
    text: str
    tokens: tuple[str, ...]  # argv after `dws`, placeholders replaced
    path: str  # command path (tokens before the first flag/placeholder/value)
    anti: bool  # the line carries an anti-marker (a counter-example)


def source_files(ctx: Any, lister: Any, what: str) -> tuple[Path, list[Path]]:
    """The source tree and the files ``lister(tree)`` picks; NotApplicable naming ``what`` when there are none
    (a tree without them is not judged, never passed)."""
    ctx.require(Access.SRC)
    tree = ctx.settings.source
    files = lister(tree)
    if not files:
        raise NotApplicable(f"no {what} in {tree}")
    return tree, files


def skill_files(tree: Path) -> list[Path]:
    base = tree / "skills"
    return sorted(base.rglob("*.md")) if base.is_dir() else []


def cited_commands(ctx: Any) -> list[Cited]:
    """Every `dws ...` command in skills/**/*.md (backticked, or a line starting with `dws`), memoised."""

    def build() -> list[Cited]:
        tree, files = source_files(ctx, skill_files, "Skill documents (skills/**/*.md)")
        out = []
        for md in files:
            rel = md.relative_to(tree).as_posix()
            for lineno, line in enumerate(md.read_text(encoding="utf-8").splitlines(), 1):
                found = _BACKTICK.findall(line) or _LINE.findall(line)
                for text in found:
                    tokens, path = _command(text)
                    if path:
                        out.append(Cited(f"{rel}:{lineno}", text, tokens, path, bool(ANTI_MARKERS.search(line))))
        ctx.observe("skill_commands", len(out))
        return out

    return ctx.memo(("skills", "cited"), build)


def _command(text: str) -> tuple[tuple[str, ...], str]:
    try:
        raw = shlex.split(text)
    except ValueError:
        raw = text.split()
    tokens: list[str] = []
    for tok in raw[1:]:
        if tok in ("|", ">", ">>", "&&", ";", "||") or tok.startswith(("|", "#")):
            break
        tokens.append(tok)
    path: list[str] = []
    for tok in tokens:
        if tok.startswith("-") or "<" in tok or "=" in tok:
            break
        path.append(tok)
    out, prev = [], None
    for tok in tokens:
        if "<" in tok and ">" in tok:
            name = prev if prev is not None else tok.strip("<>")
            tok = (tok.split("=", 1)[0] + "=" + synth_for_name(tok.split("=", 1)[0].lstrip("-"))
                   if tok.startswith("--") and "=" in tok else synth_for_name(name))
        out.append(tok)
        prev = tok[2:] if tok.startswith("--") and "=" not in tok else None
    return tuple(out), " ".join(path)


def _help_resolves(ctx: Any, cited: list[tuple[str, tuple[str, ...], str]]) -> list[str]:
    """Run `dws <tokens> --help` for each (label, tokens, path); the usage line must be `dws <path>`."""
    from pytest_dws.binary.helptext import parse_help

    calls = {label: plain(*tokens, "--help") for label, tokens, _ in cited}
    results = run_calls(ctx, calls.values())
    problems = []
    for label, tokens, path in cited:
        inv = results[calls[label]].check()
        usage = parse_help(inv.stdout)
        if inv.exit_code != 0 or not usage.usage_is(path):
            reason = (inv.error or {}).get("reason")
            problems.append(f"{label}: `dws {' '.join(tokens)} --help` does not resolve to `dws {path}` (exit "
                            f"{inv.exit_code}, reason {reason!r}, usage {usage.usage!r})")
    return problems


plans("SCH-SKILL-NO-PHANTOM")(lambda ctx: [plain(*c.tokens, "--help") for c in cited_commands(ctx) if not c.anti])
plans("FIN-SKILL-COMMANDS")(lambda ctx: [plain(*p.split(), "--help")
                                         for p in sorted({c.path for c in cited_commands(ctx) if not c.anti})])


@gate("SCH-SKILL-NO-PHANTOM", doc="D2 §1, §3 table; e81 scripts/policy/check-skill-commands.sh",
      access={Access.SRC, Access.BIN})
def skill_no_phantom(ctx: Any) -> None:
    """Skills never cite a command or a flag the binary does not have."""
    ctx.require(Access.BIN)
    prefetch(ctx)
    cmds = [c for c in cited_commands(ctx) if not c.anti]
    problems = _help_resolves(ctx, [(f"{c.where} `{c.text}`", c.tokens, c.path) for c in cmds])
    if problems:
        raise AssertionError("\n".join(problems))


@gate("ALI-SKILL-NOT-DEFAULT", doc="D1 §7.3 b4, §8.3; check-multi-im-skill-chain.sh", access={Access.SRC})
def skill_not_default(ctx: Any) -> None:
    """Skills never recommend a compatibility alias (hidden command or flag spelling) as the route."""
    from pytest_dws.profile import active_profile

    prof = active_profile(ctx)
    command_aliases = {a.alias for a in prof.aliases if a.kind == "command"}
    flag_aliases: dict[tuple[str, ...], set[str]] = {}
    for a in prof.aliases:
        if a.kind == "flag" and a.command in prof.commands:
            flag_aliases.setdefault(tuple(prof.commands[a.command].path), set()).add(a.alias)
    bad = []
    for c in cited_commands(ctx):
        if c.anti:
            continue
        words = c.text.split()
        if command_aliases & set(words):
            bad.append(f"{c.where}: `{c.text}` uses the hidden command alias {sorted(command_aliases & set(words))}")
        for path, aliases in flag_aliases.items():
            if tuple(c.path.split()) == path:
                used = sorted(al for al in aliases if any(w == al or w.startswith(al + "=") for w in words))
                if used:
                    bad.append(f"{c.where}: `{c.text}` recommends the compatibility spelling {used}")
    if bad:
        raise AssertionError("Skills present compatibility aliases as the default route:\n" + "\n".join(bad))


# -- FIT-NO-OVERFIT (static half) -------------------------------------------------------------------------------------
FIT_PATTERNS = {
    "fixed test-group name": re.compile(r"dws测试群\d+"),
    "CID literal": re.compile(r"\bcid[A-Za-z0-9+/=]{10,}"),
    "evaluation case label": re.compile(r"""["'`][^"'`\n]*\bH\d{1,2}\b[^"'`\n]*["'`]"""),
    "fixed trace ID": re.compile(r"""(?i)trace[_-]?id["']?\s*[:=]\s*["'][A-Za-z0-9_-]{6,}["']"""),
}
CODE_SUFFIXES = (".go", ".py", ".js", ".ts", ".rs", ".java", ".kt", ".sh", ".rb")
TEST_DIRS = {"test", "tests", "testdata", "__tests__", "spec", "mock_mcp", "fixtures"}


def runtime_files(tree: Path) -> list[Path]:
    """Non-test runtime code plus the Skill documents."""
    out = list(skill_files(tree))
    for p in sorted(tree.rglob("*")):
        rel = p.relative_to(tree)
        if not p.is_file() or p.suffix not in CODE_SUFFIXES or set(rel.parts[:-1]) & (TEST_DIRS | {".git"}):
            continue
        name = p.name
        if name.endswith(("_test.go", "_test.py", ".test.ts", ".spec.ts")) or name.startswith("test_") \
                or name == "conftest.py":
            continue
        out.append(p)
    return out


@gate("FIT-NO-OVERFIT", doc="D1 §9.1, §8.3", access={Access.SRC}, part="src")
def no_overfit_static(ctx: Any) -> None:
    """No fitting in runtime code or Skills: no fixed test groups, case labels, CID or trace-ID literals."""
    tree, files = source_files(ctx, runtime_files, "runtime code or Skill documents to scan")
    hits = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            for what, rx in FIT_PATTERNS.items():
                m = rx.search(line)
                if m:
                    hits.append(f"{path.relative_to(tree).as_posix()}:{lineno}: {what}: {m.group(0)[:60]}")
    ctx.observe("fit_scanned_files", len(files))
    if hits:
        raise AssertionError(f"{len(hits)} fitted literal(s) in runtime code / Skills:\n" + "\n".join(hits[:40]))


