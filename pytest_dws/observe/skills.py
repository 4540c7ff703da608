"""The `dws ...` commands that Skill documents cite (skills/**/*.md), and whether `--help` resolves them.

Shared by SCH-SKILL-NO-PHANTOM, FIN-SKILL-COMMANDS and ALI-SKILL-NOT-DEFAULT."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.values import synth_for_name
from pytest_dws.observe.binary.worlds import plain
from pytest_dws.observe.calls import run_calls
from pytest_dws.observe.sourcetree import source_tree, tree_text

# -- Skills: cited commands ----------------------------------------------------------------------------------------
_BACKTICK = re.compile(r"`(dws\s+[^`]+)`")


_LINE = re.compile(r"^\s*(?:[>$]\s*)?(dws\s+.+?)\s*$")


ANTI_MARKERS = re.compile(r"禁止|不要|❌|避免|不推荐|\bdo not\b|\bdon't\b|\bnever\b", re.IGNORECASE)
#: Where a clause ends: a negation before this (in the line) does not reach a command after it. A colon does not end
#: one ("❌ 不要使用：`dws ...`" negates the command it introduces).
_CLAUSE_END = re.compile(r"[，,。;；!！?？|]")


def negated(line: str, start: int) -> bool:
    """The command starting at ``start`` is a counter-example: a negation marker stands before it in its own clause
    ("避免 `dws ...`", "❌ 不要使用：`dws ...`"), not merely somewhere on its line ("推荐 `dws ...`，避免先查 CID" is a
    recommendation)."""
    before = line[:start]
    ends = list(_CLAUSE_END.finditer(before))
    return bool(ANTI_MARKERS.search(before[ends[-1].end():] if ends else before))


@dataclass(frozen=True)
class Cited:
    """One `dws ...` command cited by a Skill document."""

    where: str  # file:line
    text: str
    tokens: tuple[str, ...]  # argv after `dws`, placeholders replaced
    path: str  # command path (tokens before the first flag/placeholder/value)
    anti: bool  # the line carries an anti-marker (a counter-example, or a line that warns about something else)
    negated: bool = False  # the command's own clause negates it (:func:`negated`): a counter-example of this command


def source_files(ctx: GateContext, lister: Any, what: str) -> tuple[Path, list[Path]]:
    """The source tree and the files ``lister(tree)`` picks; NotApplicable naming ``what`` when there are none
    (a tree without them is not judged, never passed)."""
    tree = source_tree(ctx)
    files = lister(tree)
    if not files:
        raise NotApplicable(f"no {what} in {tree}", wants=str(what))
    return tree, files


def skill_files(tree: Path) -> list[Path]:
    base = tree / "skills"
    return sorted(base.rglob("*.md")) if base.is_dir() else []


def cited_commands(ctx: GateContext) -> list[Cited]:
    """Every `dws ...` command in skills/**/*.md (backticked, or a line starting with `dws`), memoised."""

    def build() -> list[Cited]:
        tree, files = source_files(ctx, skill_files, "Skill documents (skills/**/*.md)")
        out = []
        for md in files:
            rel = md.relative_to(tree).as_posix()
            for lineno, line in enumerate(tree_text(ctx, tree, md).splitlines(), 1):
                found = [(m.group(1), m.start()) for m in _BACKTICK.finditer(line)] or \
                    [(m.group(1), m.start(1)) for m in _LINE.finditer(line)]
                for text, start in found:
                    tokens, path = command_of(text)
                    if path:
                        out.append(Cited(f"{rel}:{lineno}", text, tokens, path, bool(ANTI_MARKERS.search(line)),
                                         negated(line, start)))
        ctx.observe("skill_commands", len(out))
        return out

    return ctx.memo(("skills", "cited"), build)


def command_of(text: str) -> tuple[tuple[str, ...], str]:
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


def help_resolves(ctx: GateContext, cited: list[tuple[str, tuple[str, ...], str]]) -> list[str]:
    """Run `dws <tokens> --help` for each (label, tokens, path); the usage line must be `dws <path>`."""
    from pytest_dws.observe.binary.helptext import parse_help

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
