"""The D1 world and its scenarios: who is unique, who shares a title, what matches nothing, and the faults.

The cast (names and CIDs) and the scenario data live in ``fixtures/scenarios/d1`` (world.json, cast.toml,
faults.toml); a scenario (:class:`Sc`) is the plain world plus an optional fault reply on one tool, name
resolution pages, page caps. It is a world of the planner (:mod:`pytest_dws.observe.calls`): ``Sc.scenario(ctx)``."""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.datasets import scenarios_root
from pytest_dws.inputs.profile import Profile, Tool, active_profile

D1_DIR = scenarios_root() / "d1"

# -- cast and scenario data -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cast:
    """Roles of the D1 world (cast.toml): who is unique, who shares a title, what matches nothing."""

    name: str
    cid: str
    second_name: str
    second_cid: str
    twin_name: str
    twin_cids: tuple[str, ...]
    missing_name: str
    conversations: int
    conversation_page_cap: int
    messages: int
    names: frozenset[str]  # every natural name of the world and of the runs (for the global name rule)
    world: dict[str, Any]
    replies: dict[str, Any]
    resolver_cases: dict[str, Any]


def cast(ctx: GateContext) -> Cast:
    """The cast and scenario data, loaded once per session."""
    return ctx.memo(("d1", "cast"), lambda: load_cast(D1_DIR))


def load_cast(root: Path) -> Cast:
    """Read cast.toml, world.json and faults.toml; a malformed file is one line naming it."""
    path = root / "cast.toml"
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        world_path = root / raw["world"]
        world = json.loads(world_path.read_text(encoding="utf-8"))
        faults = tomllib.loads((root / raw["faults"]).read_text(encoding="utf-8"))
        twins = raw["twins"]
        names = {g["title"] for g in world["world"]["groups"]} | {c["name"] for c in world["world"]["contacts"]}
        names |= {raw["missing"]["name"]}
        return Cast(
            name=raw["unique"]["name"], cid=raw["unique"]["cid"], second_name=raw["second"]["name"],
            second_cid=raw["second"]["cid"], twin_name=twins["name"], twin_cids=tuple(twins["cids"]),
            missing_name=raw["missing"]["name"], conversations=int(raw["conversations"]["count"]),
            conversation_page_cap=int(raw["conversations"]["page_cap"]), messages=int(raw["messages"]["count"]),
            names=frozenset(names), world=world, replies=faults["replies"], resolver_cases=faults["resolver"],
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DwsInputError(path, "", f"D1 scenario data unreadable: {type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class Sc:
    """A scenario of the D1 world: an optional fault reply on one tool (every call), an optional sequence of
    name-resolution pages, optional page caps. ``Sc()`` is the plain world."""

    reply: str | None = None
    on: str | None = None
    page: int | None = None  # the reply hits only this page of the tool (1-based), else every call
    after: int | None = None  # the reply hits every call of the tool after the first ``after`` (any paging)
    resolver: str | None = None
    page_caps: tuple[tuple[str, int], ...] = ()

    def scenario(self, ctx: GateContext) -> Any:
        """The validated fake_mcp Scenario of this world (the planner's world protocol,
        :mod:`pytest_dws.observe.calls`)."""
        return scenario(ctx, self)

    @property
    def label(self) -> str:
        where = f"{self.on}#{self.page}" if self.page else f"{self.on}>{self.after}" if self.after else self.on
        parts = [f"{self.reply}@{where}" if self.reply else "", f"resolver:{self.resolver}" if self.resolver
                 else "", ",".join(f"{t}<={n}" for t, n in self.page_caps)]
        return "d1-" + ("+".join(p for p in parts if p) or "world")


WORLD = Sc()
#: How many calls after ``Sc.after`` its reply covers (a client's retries and page limit stay below it).
AFTER_CALLS = 200


def scenario_doc(ctx: GateContext, sc: Sc) -> dict[str, Any]:
    """The fake_mcp scenario document of ``sc`` (memoised)."""
    return ctx.memo(("d1", "scenario", sc), lambda: _compose(cast(ctx), active_profile(ctx), sc))


def scenario(ctx: GateContext, sc: Sc) -> Any:
    """The validated fake_mcp Scenario of ``sc`` (memoised: servers load it without re-validating)."""
    from fake_mcp import Scenario

    return ctx.memo(("d1", "validated", sc), lambda: Scenario.coerce(scenario_doc(ctx, sc)))


def _compose(c: Cast, prof: Profile, sc: Sc) -> dict[str, Any]:
    doc = {"name": sc.label, "world": copy.deepcopy(c.world["world"]), "overrides": []}
    if sc.page_caps:
        doc["world"]["page_sizes"] = dict(sc.page_caps)
    if sc.reply is not None:
        tool = Tool.parse(sc.on or "")
        reply = copy.deepcopy(c.replies[sc.reply])
        entry = {"tool": tool.name, "product": tool.product, "page": sc.page, "reply": reply}
        if sc.after:  # by call number: time-anchored reads have no page index (their cursor is a time)
            entry["call"] = list(range(sc.after + 1, sc.after + AFTER_CALLS))
        doc["overrides"].append(entry)
    if sc.resolver is not None:
        calls = c.resolver_cases[sc.resolver]["calls"]
        for i, reply in enumerate(calls):
            last = i == len(calls) - 1
            doc["overrides"].append({"tool": prof.resolver.name, "product": prof.resolver.product,
                                     "call": None if last else i + 1, "reply": _fill(c, prof, reply)})
    return doc


def _fill(c: Cast, prof: Profile, value: Any) -> Any:
    """Substitute the cast placeholders of faults.toml."""
    if value == "{full_page}":
        filler = [{"title": f"{c.name}-{i:02d}", "openConversationId": f"cidTESTd1fill{i:07d}"}
                  for i in range(1, prof.resolver_page_size)]
        return [{"title": c.name, "openConversationId": c.cid}, *filler]
    if isinstance(value, str):
        marks = {"{name}": c.name, "{cid}": c.cid, "{twin}": c.twin_name, "{twin_a}": c.twin_cids[0],
                 "{twin_b}": c.twin_cids[1]}
        for mark, real in marks.items():
            value = value.replace(mark, real)
        return value
    if isinstance(value, dict):
        return {k: _fill(c, prof, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(c, prof, v) for v in value]
    return value


def expand(c: Cast, args: Iterable[str], **extra: str) -> list[str]:
    """Replace {cid} / {name} (and ``extra`` marks such as {flag}) in profile argument lists."""
    marks = {"{cid}": c.cid, "{name}": c.name, **{f"{{{k}}}": v for k, v in extra.items()}}
    return [marks.get(a, a) for a in args]
