"""The world of SCH-EXAMPLES: every literal value a reviewed example uses resolves (D2 §5: examples run).

Why apart from :mod:`.worlds`: it is built from the binary's own catalog (its examples), so it needs the views.

Why literal-aware (issue 38): the world once made every literal word of every example a person and a group. The
backend's contact search matches substrings and upstream's user resolver prefers no exact match among several
candidates (81f67c8d internal/shortcut/targetresolver `ResolveUser` → `selectUsers`: any count but one is
`resolution_ambiguous`), so `张三` named seven "persons" (`[["张三","销售部",50000]]`, `张三=>张三丰`, `张三,李四`, …)
and every example that resolves it exited 3. Now a person is a name the release itself calls a person's
(:func:`pytest_dws.observe.binary.values.names_a_person`: the flag's description says 姓名/花名, or its name
says a user query), split where the CLI splits a list, and a group is any value that reads as a name (not JSON,
not a `原文=>替换` pair, not a number, date, time, URL, e-mail, range or `KEY_ID` placeholder). Groups may share
words (upstream's `ResolveChat` prefers the exact title among them); persons may not, so a person name that
contains another's is left out, which the test of the real 81f67c8d catalog shows leaves `张三` one candidate.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.values import (
    CAPS_PLACEHOLDER,
    LOCAL_FILE,
    PLACEHOLDER,
    example_literals,
    example_words,
    names_a_person,
    synth,
)
from pytest_dws.observe.binary.views import bin_schema, primary_path
from pytest_dws.observe.binary.worlds import SYN_GROUP, SYN_PERSON, SYNTHETIC, World, synthetic_world


@dataclass(frozen=True)
class ExamplesWorld(World):
    """The synthetic world plus the examples' literal names: each person name a unique person, each name a group."""

    name: str = "examples"

    def build(self, ctx: GateContext) -> dict[str, Any]:
        """The names are the examples' own literal values (not the values the suite types for their
        placeholders): the world, part of every example run's recording key, changes only when the release's
        examples or their flags' descriptions do, never when the suite types a value better (issue 38)."""
        try:
            leaves = list(bin_schema(ctx).tools.values())
        except (AssertionError, NotApplicable):
            leaves = []
        groups, people = literal_names(leaves)
        return synthetic_world("schema-examples", groups | {SYN_GROUP}, people | {SYN_PERSON})


def literal_names(leaves: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """(group names, person names) of the examples of ``leaves``: every value that reads as a name is a group; the
    values of a flag that names a person, split at commas (the CLI splits those lists), are persons, less any that
    contains another person's name (the backend's search would return both for the shorter one)."""
    groups: set[str] = set()
    people: set[str] = set()
    for leaf in leaves:
        params = leaf.get("parameters") or {}
        for ex in leaf.get("examples") or []:
            for flag, value in example_values(str(ex), leaf):
                if flag is not None and names_a_person(flag, params.get(flag)):
                    people |= {p.strip() for p in re.split(r"[,，]", value) if is_name(p.strip())}
                elif is_name(value):
                    groups.add(value)
    folded = {p: p.casefold() for p in people}
    unique = {p for p in people if not any(q != p and folded[q] in folded[p] for q in people)}
    return groups, unique


def example_values(example: str, leaf: dict[str, Any]) -> Iterator[tuple[str | None, str]]:
    """(flag, value) per literal value of an example, with None for a positional argument: neither the command's
    own path words, nor a `<placeholder>`, nor a local file the example names."""
    try:
        tokens = list(example_words(example))
    except ValueError:
        return
    tokens = tokens[1:] if tokens[:1] == ["dws"] else tokens
    paths = sorted(([primary_path(leaf), *(leaf.get("aliases") or [])]), key=len, reverse=True)
    path: list[str] = next((p.split() for p in paths if p and tokens[:len(p.split())] == p.split()), [])
    params = leaf.get("parameters") or {}
    rest, i = tokens[len(path):], 0
    while i < len(rest):
        tok, flag, value = rest[i], None, None
        if tok.startswith("--") and "=" in tok:
            flag, value = tok[2:].split("=", 1)
        elif tok.startswith("-"):
            name = tok.lstrip("-")
            takes = (params.get(name) or {}).get("type") != "boolean"
            if takes and i + 1 < len(rest) and not rest[i + 1].startswith("-"):
                flag, value, i = name, rest[i + 1], i + 1
        else:
            value = tok
        i += 1
        if value and not PLACEHOLDER.search(value) and not LOCAL_FILE.match(value.lstrip("@")):
            yield flag, value


#: What a value that is not a name contains: a JSON or Markdown opening, a pair (`原文=>替换`, `我->汐峰`), a key or
#: clock (`subject:周报`, `A1:B2`, `14:00`), a URL or e-mail, a list (`张三,李四`), a quote, a line break.
_NOT_A_NAME = re.compile(r"""^[\[{#'"~./+@-]|=>|->|[:@,，\n"'=]""")


def is_name(value: str) -> bool:
    """Does a literal value read as the name of a person or group: it has a letter, and is none of JSON, a pair,
    a number, a date or time, a URL, an e-mail, a mobile, a list, an ID (`cid…`) or a `KEY_ID` placeholder?"""
    return (0 < len(value) <= 64 and re.search(r"[^\W\d_]", value) is not None and not _NOT_A_NAME.search(value)
            and not value.lower().startswith("cid") and not CAPS_PLACEHOLDER.fullmatch(value))


def world_for(leaf: dict[str, Any], args: list[str]) -> World:
    """The world a schema run of ``leaf`` (its required flags, a one-of branch) happens in: the examples world where
    a value is the literal its tool's examples give that flag and that literal is one of the examples world's
    names (`todo +todo-done --task=周报`), so that what it names is in the world the run reads (fake_mcp's
    listings hold one entity per name of the world: fake_mcp/directory.py); else the synthetic world. Names of
    the world's own kinds are typed the synthetic ones (a person, a group, an ID:
    :func:`pytest_dws.observe.binary.values.synth`), which both worlds hold. Why not every run in the examples
    world: a run whose values name nothing of it keeps the world that does not depend on the release's examples,
    and its recording key (issue 38: a run whose values did not change stays judged from an existing recording)."""
    literals, params = example_literals(leaf), leaf.get("parameters") or {}
    typed = [(k, v) for k, v in (a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
             if literals.get(k) == v]
    if not typed:
        return SYNTHETIC
    groups, people = literal_names([leaf])
    # a literal the schema would give anyway (an enum's first word, a boolean's true) came from no example
    return EXAMPLES if any(v in groups | people and synth(k, params.get(k), params) != v
                           for k, v in typed) else SYNTHETIC


EXAMPLES = ExamplesWorld()


def worlds(ctx: GateContext) -> dict[str, dict[str, Any]]:
    """Every world document the schema gates run in, by name (the self-tests validate them all)."""
    return {w.name: w.build(ctx) for w in (World("synthetic"), EXAMPLES, World("empty"))}
