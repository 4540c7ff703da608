"""Synthetic argv for the binary's tools: required flags, one-of branches and examples, valued by :mod:`.values`.

Why: D2 §3 makes the schema (types, formats, enums, descriptions, constraints) the contract an agent reads, so
a value built from it must be accepted; a dry run or a probe built here proves a flag or a path is real
without the costly `--help` (docs/wire.md §7).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pytest_dws.observe.binary.values import (
    LOCAL_FILE,
    PLACEHOLDER,
    example_file,
    example_literals,
    example_words,
    placeholder_value,
    synth,
    synth_for_name,
)

#: A flag no implementation defines: `<path> PROBE_FLAG` must fail with reason unknown_flag at the leaf.
PROBE_FLAG = "--dws-contract-probe-flag"


def flag_args(name: str, spec: dict[str, Any] | None, params: dict[str, Any] | None = None,
              literals: dict[str, str] | None = None) -> list[str]:
    """`--name=value` (the `=` form keeps boolean flags unambiguous)."""
    return [f"--{name}={synth(name, spec, params, literals)}"]


def required_args(leaf: dict[str, Any], *, skip: Sequence[str] = (), one_of: dict[int, str] | None = None
                  ) -> list[str]:
    """Flags an execution needs, from the schema's typed constraints: every required parameter (except
    `skip`), one member of every require_one_of group (``one_of`` picks the member per group index; else the
    first one no mutually_exclusive group rules out), then the closure of require_together and `required_when`,
    then the required positional arguments (upstream's own schema smoke, scripts/dev/schema_command_smoke.py,
    selects its inputs the same way). A one-of member may be a positional (`pat chmod <scope>… | --products`):
    picked, it is given as the positional. Values: :func:`synth`, with the literals of the tool's examples."""
    params = leaf.get("parameters") or {}
    literals = example_literals(leaf)
    positionals = {str(p.get("name")): p for p in leaf.get("positionals") or [] if p.get("name")}
    cons = leaf.get("constraints") or {}
    skipped = set(skip)
    chosen: list[str] = [n for n, p in sorted(params.items()) if p.get("required") and n not in skipped]
    picks = one_of or {}
    chosen += [m for m in picks.values() if (m in params or m in positionals) and m not in chosen]
    exclusive = [set(g) for g in cons.get("mutually_exclusive") or []]

    def excluded(name: str) -> bool:
        return any(name in g and any(c in g and c != name for c in chosen) for g in exclusive)

    def published(name: str) -> bool:  # a flag or positional the schema gives (a hidden alias is neither)
        return name in params or name in positionals

    for i, grp in enumerate(cons.get("require_one_of") or []):
        if any(m in chosen for m in grp):
            continue
        pick = picks.get(i) or next((m for m in grp if m not in skipped and not excluded(m) and published(m)),
                                    grp[0] if grp else None)
        if pick and pick not in skipped and published(pick):
            chosen.append(pick)
    changed = True
    while changed:
        changed = False
        for grp in cons.get("require_together") or []:
            if any(m in chosen for m in grp):
                for m in grp:
                    if m not in chosen and m in params and m not in skipped:
                        chosen.append(m)
                        changed = True
        for name, spec in sorted(params.items()):
            if name not in chosen and name not in skipped and required_when_holds(
                    str(spec.get("required_when") or ""), params, chosen, literals):
                chosen.append(name)
                changed = True
    out: list[str] = []
    for n in chosen:
        if n in params:
            out += flag_args(n, params.get(n), params, literals)
    # Required (or picked) positional arguments (`positionals`, D2 §3's typed annotations include 位置参数), in
    # index order.
    for pos in sorted((p for p in leaf.get("positionals") or []
                       if p.get("required") or (p.get("name") in chosen and p.get("name") not in params)),
                      key=lambda p: int(p.get("index") or 0)):
        out.append(synth(str(pos.get("name") or "arg"), pos, params, literals))
    return out


def alias_args(leaf: dict[str, Any], group: Sequence[str], member: str) -> list[str]:
    """A one-of member the schema gives neither as a parameter nor as a positional is a hidden compatibility alias
    of the group (a release may list one beside its published flag): run with that flag, typed like its first
    published sibling. [] when the member is published (``required_args`` gives it)."""
    params = leaf.get("parameters") or {}
    if member in params or member in {p.get("name") for p in leaf.get("positionals") or []}:
        return []
    sibling = next((m for m in group if m in params), None)
    return [f"--{member}={synth(sibling or member, params.get(sibling or ''), params, example_literals(leaf))}"]


def positional_tokens(args: Sequence[str], leaf: dict[str, Any]) -> list[str]:
    """The positional arguments of ``args`` (the argv after the command path): every token that is neither a flag
    nor a flag's value, by the schema's own parameter types (a boolean flag takes no separate value; `--x=v` holds
    its own). The planner's shape check: no planned call may pass more positionals than the schema declares."""
    params = leaf.get("parameters") or {}
    out: list[str] = []
    it = iter(args)
    for tok in it:
        if tok == "--":
            out += list(it)
            break
        if tok.startswith("--") and len(tok) > 2:
            name = tok[2:]
            if "=" not in name and (params.get(name) or {}).get("type") not in ("boolean", None):
                next(it, None)
            continue
        out.append(tok)
    return out


def positional_arity(leaf: dict[str, Any]) -> tuple[int, int | None]:
    """(least, most) positionals the schema declares (most None: a variadic one takes any number)."""
    pos = leaf.get("positionals") or []
    most = None if any(p.get("variadic") for p in pos) else len(pos)
    return sum(1 for p in pos if p.get("required")), most


_WHEN_USED = re.compile(r"(?:--)?(?P<flag>[\w.-]+) is used")

_WHEN_ANY = re.compile(r"any (?P<prefix>[\w.-]+)\* flag is provided")

_WHEN_IS = re.compile(r"(?:--)?(?P<flag>[\w.-]+) is (?P<values>.+)")

_WHEN_EQ = re.compile(r"--(?P<flag>[\w.-]+)=(?P<value>\S+)")


def required_when_holds(expr: str, params: dict[str, Any], chosen: Sequence[str],
                        literals: dict[str, str] | None = None) -> bool:
    """Whether a parameter's `required_when` condition holds for the flags ``chosen`` (with their synthetic
    values). The forms e81 uses: `X is A or B`, `--X is used`, `any X* flag is provided`, `--X=A or --X=B`;
    anything else is not understood and adds nothing."""
    expr = expr.strip()
    if not expr:
        return False

    def value(flag: str) -> str | None:
        spec = params.get(flag) or {}
        if flag in chosen:
            return synth(flag, spec, params, literals)
        if spec.get("default") not in (None, ""):
            return str(spec["default"]).lower() if spec.get("type") == "boolean" else str(spec["default"])
        return "false" if spec.get("type") == "boolean" else None

    if (m := _WHEN_USED.fullmatch(expr)) is not None:
        return m.group("flag") in chosen
    if (m := _WHEN_ANY.fullmatch(expr)) is not None:
        return any(c.startswith(m.group("prefix")) for c in chosen)
    eqs = [_WHEN_EQ.fullmatch(part.strip()) for part in expr.split(" or ")]
    if all(eqs):
        return any(value(e.group("flag")) == e.group("value") for e in eqs if e is not None)
    if (m := _WHEN_IS.fullmatch(expr)) is not None:
        return value(m.group("flag")) in [v.strip() for v in m.group("values").split(" or ")]
    return False


def example_argv(example: str, leaf: dict[str, Any]) -> list[str]:
    """An example as argv (without `dws`), `<placeholders>` replaced by typed synthetic values."""
    try:
        tokens = list(example_words(example))  # `dws … --format json   # Grid`: a shell comment
    except ValueError as exc:
        raise AssertionError(f"example is not a valid shell command ({exc}): {example}") from None
    if tokens[:1] == ["dws"]:
        tokens = tokens[1:]
    params = leaf.get("parameters") or {}
    literals = example_literals(leaf)
    out: list[str] = []
    prev_flag: str | None = None
    for tok in tokens:
        if PLACEHOLDER.search(tok):
            if tok.startswith("--") and "=" in tok:
                name = tok[2:].split("=", 1)[0]
                tok = f"--{name}={synth(name, params.get(name), params, literals)}"
            elif prev_flag is not None:
                typed = placeholder_value(tok)  # `--ref-sender <openDingTalkId>`: the placeholder names the type
                tok = typed if typed is not None else synth(prev_flag, params.get(prev_flag), params, literals)
            else:
                tok = PLACEHOLDER.sub(lambda m: synth_for_name(m.group(0)[1:-1]), tok)
        elif prev_flag is not None and LOCAL_FILE.match(tok):
            tok = example_file(tok, prev_flag, params, literals)
        elif prev_flag is not None and tok.startswith("@") and LOCAL_FILE.match(tok[1:]):  # `--csv @data.csv`
            tok = "@" + example_file(tok[1:], prev_flag, params, literals)
        elif tok.startswith("--") and "=" in tok and LOCAL_FILE.match(tok.split("=", 1)[1]):
            flag, path = tok[2:].split("=", 1)
            tok = f"--{flag}={example_file(path, flag, params, literals)}"
        out.append(tok)
        prev_flag = tok[2:] if tok.startswith("--") and "=" not in tok else None
    return out
