"""Symbols of a case: ``{{symbol}}`` placeholders, their kinds, and random synthetic values for them
(FIT-NO-OVERFIT: nothing may depend on a fixed name or CID)."""

from __future__ import annotations

import random
import re
import string
from typing import Any

SYMBOL_KINDS = ("cid", "name", "kw", "text", "trace", "odid")

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")

# -- symbols --------------------------------------------------------------------------------------------
def symbol_kind(key: str) -> str:
    """``cid_a`` -> ``cid``; the prefix decides how a random replacement is drawn."""
    kind = key.split("_", 1)[0]
    if kind not in SYMBOL_KINDS:
        raise ValueError(f"symbol {key!r}: the prefix must be one of {', '.join(SYMBOL_KINDS)}")
    return kind


def render(value: Any, symbols: dict[str, str]) -> Any:
    """``value`` with every ``{{key}}`` replaced (recursively); an unknown key is a KeyError naming it."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: symbols[m.group(1)], value)
    if isinstance(value, list):
        return [render(v, symbols) for v in value]
    if isinstance(value, dict):
        return {render(k, symbols): render(v, symbols) for k, v in value.items()}
    return value


NAME_CHARS = "星河松竹梅兰晨曦远航启明青禾北辰云帆锦程朝阳知行致远"

NAME_TAIL = string.ascii_letters + string.digits + "-_·" + NAME_CHARS

ID_CHARS = string.ascii_letters + string.digits


def random_value(kind: str, rng: random.Random, role: int) -> str:
    """One synthetic value; ``role`` (a distinct small int per symbol) keeps values pairwise unrelated.

    Names start with a CJK character (never ``cid``) and end with a per-role marker that occurs nowhere
    else, so no name is a substring of another one (search_groups matches substrings).
    """
    marker = ROLE_MARKERS[role % len(ROLE_MARKERS)]
    if kind == "cid":
        return "cid" + marker[1] + "".join(rng.choice(ID_CHARS) for _ in range(rng.randint(10, 22)))
    if kind == "name":
        return rng.choice(NAME_CHARS) + "".join(rng.choice(NAME_TAIL) for _ in range(rng.randint(1, 6))) + marker[0]
    if kind == "kw":
        return "".join(rng.choice(NAME_CHARS) for _ in range(rng.randint(1, 3))) + marker[0] + str(role)
    if kind == "text":
        return "通知" + "".join(rng.choice(NAME_TAIL) for _ in range(rng.randint(3, 12)))
    if kind == "trace":
        return "trace-" + "".join(rng.choice(ID_CHARS) for _ in range(16))
    return "odid-" + "".join(rng.choice(ID_CHARS) for _ in range(12))


#: (name marker, cid marker) per role; the name markers appear in no other generated text.
ROLE_MARKERS = [("甲", "A"), ("乙", "B"), ("丙", "C"), ("丁", "D"), ("戊", "E"), ("己", "F"), ("庚", "G"),
                 ("辛", "H"), ("壬", "J"), ("癸", "K"), ("子", "L"), ("丑", "M")]


def random_symbols(symbols: dict[str, str], rng: random.Random) -> dict[str, str]:
    """The same keys with fresh random values of the same kind (distinct per key)."""
    return {key: random_value(symbol_kind(key), rng, role) for role, key in enumerate(sorted(symbols))}
