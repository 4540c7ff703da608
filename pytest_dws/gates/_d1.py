"""Shared machinery of the D1 runtime gates (ERR, TGT, ALI, SMK, ACC): cast, scenarios, runs.

A gate states WHAT it runs as :class:`Spec` values (a scenario plus the arguments after the global flags) and
judges the :class:`~pytest_dws.target.Invocation` it gets back. Runs are memoised per session, so gates that
need the same run (TGT-GROUP-CID and ACC-TARGET-24, an alias and TGT-CONVID-CID ...) share one process, and
the first gate of a family runs the whole family's specs at once on the runner's bounded pool (each run on a
fresh world). Global transcript rules (a name never under a stable-ID key, a CID never searched) are judged
over every run of every family via :func:`everything`.

The cast (names and CIDs) and the scenario data live in ``fixtures/scenarios/d1`` (world.json, cast.toml,
faults.toml); the names of commands, flags and tools come from the contract profile.
"""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_dws.cases import collect  # noqa: F401 - the gates' case collector (re-exported)
from pytest_dws.datasets import scenarios_root
from pytest_dws.errors import DwsInputError, NotApplicable
from pytest_dws.profile import Command, Profile, Tool, active_profile

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


def cast(ctx: Any) -> Cast:
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
    resolver: str | None = None
    page_caps: tuple[tuple[str, int], ...] = ()

    @property
    def label(self) -> str:
        where = f"{self.on}#{self.page}" if self.page else self.on
        parts = [f"{self.reply}@{where}" if self.reply else "", f"resolver:{self.resolver}" if self.resolver
                 else "", ",".join(f"{t}<={n}" for t, n in self.page_caps)]
        return "d1-" + ("+".join(p for p in parts if p) or "world")


WORLD = Sc()


def scenario_doc(ctx: Any, sc: Sc) -> dict[str, Any]:
    """The fake_mcp scenario document of ``sc`` (memoised)."""
    return ctx.memo(("d1", "scenario", sc), lambda: _compose(cast(ctx), active_profile(ctx), sc))


def scenario(ctx: Any, sc: Sc) -> Any:
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
        doc["overrides"].append({"tool": tool.name, "product": tool.product, "page": sc.page, "reply": reply})
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


# -- specs and runs ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Spec:
    """One invocation: scenario (None = no fake server), argv after the global flags, token, global flags."""

    sc: Sc | None
    args: tuple[str, ...]
    token: str | None = "t"
    globals_: bool = True


def spec(cmd: Command, args: Iterable[str] = (), *, sc: Sc | None = WORLD, prof: Profile | None = None,
         yes: bool = True, drop: tuple[str, ...] = (), path: tuple[str, ...] | None = None,
         extra: Iterable[str] = (), token: str | None = "t") -> Spec:
    """A run of ``cmd`` with ``args`` (+ its pinned flags, + the confirmation flag for writes)."""
    argv = cmd.argv(list(args), drop=drop, path=path) + list(extra)
    if cmd.write and yes and prof is not None and prof.cli["yes"] not in argv and prof.cli["dry_run"] not in argv:
        argv.append(prof.cli["yes"])
    return Spec(sc, tuple(argv), token)


#: family -> specs(ctx): every run a family's gates may need (prefetched together on first use).
PROVIDERS: dict[str, Callable[[Any], Iterable[Spec]]] = {}


def provider(family: str) -> Callable[[Callable[[Any], Iterable[Spec]]], Callable[[Any], Iterable[Spec]]]:
    """Register the function listing a family's runs."""

    def register(fn: Callable[[Any], Iterable[Spec]]) -> Callable[[Any], Iterable[Spec]]:
        PROVIDERS[family] = fn
        return fn

    return register


def _store(ctx: Any) -> dict[Spec, Any]:
    return ctx.memo(("d1", "runs"), dict)


def ensure(ctx: Any, specs: Iterable[Spec]) -> None:
    """Run every spec not run yet, in parallel on the runner's pool."""
    from pytest_dws.target import Job

    store = _store(ctx)
    todo = list(dict.fromkeys(s for s in specs if s not in store))
    if not todo:
        return
    runner = ctx.cli()
    jobs = [Job(s.args, _world(ctx, s), {"token": s.token, "globals_": s.globals_}) for s in todo]
    for s, inv in zip(todo, runner.run_jobs(jobs), strict=True):
        store[s] = inv


def _world(ctx: Any, s: Spec) -> Any:
    """The spec's world; a Help or schema view without one runs in the empty world, as the schema gates run
    theirs: the same call is then made once for both (the runner shares identical costly calls)."""
    from fake_mcp.scenario import EMPTY_WORLD
    from pytest_dws.plan import EXPENSIVE, kind_of

    if s.sc is not None:
        return scenario(ctx, s.sc)
    return EMPTY_WORLD if kind_of(s.args) in EXPENSIVE else None


def require_profile(ctx: Any) -> None:
    """NotApplicable when the implementation has none of the contract profile's commands (cf8cf95 has no chat
    `+` shortcuts): the profile's read probe fails without sending anything AND its parent's --help does not
    list it. An implementation that lists the command but fails it is judged (and fails), never skipped."""

    def build() -> None:
        prof = active_profile(ctx)
        cmd = prof.command(prof.probes["read"])
        ensure(ctx, [spec(cmd, prof=prof)])
        inv = _store(ctx)[spec(cmd, prof=prof)]
        if inv.problem is not None or inv.exit_code == 0 or inv.transcript:
            return None
        parent = Spec(None, (*cmd.path[:-1], prof.cli["help"]), token=None, globals_=False)
        ensure(ctx, [parent])
        page = _store(ctx)[parent]
        listed = _listed_commands(page.stdout) if page.exit_code == 0 and page.problem is None else []
        if not listed or cmd.path[-1] in listed:
            return None  # no real help page that lacks the command: judge it (a broken target fails, not skips)
        raise NotApplicable(
            f"the implementation has no `{' '.join(cmd.path)}` (the contract profile's read probe, "
            f"{prof.source}): it exits {inv.exit_code} without a request and `{' '.join(parent.args)}` does "
            "not list it; an implementation with other command names passes its own --dws-profile")

    ctx.memo(("d1", "profile-available"), build)


def _listed_commands(text: str) -> list[str]:
    """The command list of a help page that has a usage line ([] for anything else)."""
    from pytest_dws.binary.helptext import parse_help

    parsed = parse_help(text)
    return parsed.commands if parsed.usage is not None else []


def prefetch(ctx: Any, family: str) -> None:
    """Run all of ``family``'s specs once (the first gate of the family pays for the whole family)."""
    key = ("d1", "prefetched", family)
    require_profile(ctx)
    if key in ctx.cache or family not in PROVIDERS:
        return
    ensure(ctx, PROVIDERS[family](ctx))
    ctx.cache[key] = True


def run(ctx: Any, family: str, s: Spec) -> Any:
    """The invocation of ``s`` (prefetching ``family``); raises TargetFailure if the target hung or crashed."""
    __tracebackhide__ = True
    prefetch(ctx, family)
    ensure(ctx, [s])
    return _store(ctx)[s].check()


def results(ctx: Any, specs: Iterable[Spec]) -> list[Any]:
    """The invocations of ``specs`` (run as one batch where missing), without prefetching a whole family."""
    specs = list(specs)
    ensure(ctx, specs)
    return [_store(ctx)[s].check() for s in specs]


def everything(ctx: Any) -> list[tuple[Spec, Any]]:
    """Every run of every D1 family (running what is missing): the input of the global transcript rules."""
    for family in sorted(PROVIDERS):
        prefetch(ctx, family)
    return list(_store(ctx).items())


# -- the read probe under a fault --------------------------------------------------------------------------
def read_probe(ctx: Any, reply: str | None, *, table: bool = False, token: str | None = "t") -> Spec:
    """The profile's read probe with fault ``reply`` on its business call (every call): the ERR gates' input,
    and the agent contract's error facts (pytest_dws.agent_contract)."""
    prof = profile(ctx)
    cmd = prof.command(prof.probes["read"])
    sc = Sc(reply=reply, on=str(cmd.call)) if reply else WORLD
    s = spec(cmd, sc=sc, prof=prof, token=token)
    if not table:
        return s
    token_args = [t.replace("{token}", token or "t") for t in prof.cli["token"]]
    return Spec(sc, (*token_args, *prof.cli["table_format"], *s.args), globals_=False)


# -- profile helpers ----------------------------------------------------------------------------------------
def profile(ctx: Any) -> Profile:
    return active_profile(ctx)


def require(ctx: Any, key: str) -> Command:
    """The profile command ``key``, or NotApplicable (a profile may leave a command out)."""
    prof = active_profile(ctx)
    if key not in prof.commands:
        raise NotApplicable(f"the contract profile {prof.source} has no command {key!r}")
    return prof.commands[key]


def looks_like_cid_args(args: Iterable[str]) -> bool:
    """True when a run hands over a CID-shaped value (the probe of an ID given where a name is expected)."""
    from pytest_dws.assertions import looks_like_cid

    return any(looks_like_cid(a) for a in args)


def ids_in(record: Any, key: str) -> list[Any]:
    """The value(s) a business call carries under ``key`` (a list value is flattened)."""
    value = (record.arguments or {}).get(key)
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]
