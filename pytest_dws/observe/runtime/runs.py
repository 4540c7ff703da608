"""The runs of the D1 runtime families (ERR, TGT, ALI, SMK, ACC), through the one planner.

A gate states WHAT it runs (:func:`spec`: a profile command, its arguments, a scenario) and judges the
:class:`~pytest_dws.launch.Invocation` it gets back. Runs are memoised per session, so gates that need the same
run (TGT-GROUP-CID and ACC-TARGET-24, an alias and TGT-CONVID-CID ...) share one process, and the first gate of a
family runs the whole family's planned runs at once on the runner's bounded pool (each run on a fresh world).
Global transcript rules (a name never under a stable-ID key, a CID never searched) are judged over every run
of every family via :func:`everything`. The names of commands, flags and tools come from the contract profile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.profile import Command, Profile, active_profile
from pytest_dws.launch.plan import EXPENSIVE, kind_of
from pytest_dws.observe.binary.worlds import EMPTY
from pytest_dws.observe.calls import PLANNERS, Call, plans, run_calls
from pytest_dws.observe.runtime.cast import WORLD, Sc
from pytest_dws.verdict.cases import collect  # noqa: F401 - the gates' case collector (re-exported)

# -- runs ------------------------------------------------------------------------------------------------
#: A run of the runtime families is a planner call (:class:`pytest_dws.observe.calls.Call`);
#: its world is an :class:`Sc`.
Spec = Call


def call_of(sc: Sc | None, args: Iterable[str], *, token: str | None = "t", globals_: bool = True) -> Call:
    """A run in the world ``sc``. Without one, a Help or schema view runs in the empty world, as the schema gates
    run theirs (the same call is then made once for both); any other run has no backend (every endpoint dead)."""
    args = tuple(args)
    world: Any = sc
    if sc is None and kind_of(args) in EXPENSIVE:
        world = EMPTY
    return Call(args, globals_=globals_, token=token, scenario=world)


def spec(cmd: Command, args: Iterable[str] = (), *, sc: Sc | None = WORLD, prof: Profile | None = None,
         yes: bool = True, drop: tuple[str, ...] = (), path: tuple[str, ...] | None = None,
         extra: Iterable[str] = (), token: str | None = "t") -> Call:
    """A run of ``cmd`` with ``args`` (+ its pinned flags, + the confirmation flag for writes)."""
    argv = cmd.argv(list(args), drop=drop, path=path) + list(extra)
    if cmd.write and yes and prof is not None and prof.cli["yes"] not in argv and prof.cli["dry_run"] not in argv:
        argv.append(prof.cli["yes"])
    return call_of(sc, argv, token=token)


#: The runtime families that registered their runs (:func:`everything` runs them all).
FAMILIES: set[str] = set()


def provider(family: str) -> Callable[[Callable[[Any], Iterable[Call]]], Callable[[Any], Iterable[Call]]]:
    """Register the function listing a family's runs (a planner of :mod:`pytest_dws.observe.calls`, keyed by family)."""
    FAMILIES.add(family)
    return plans(family)


def planned(ctx: GateContext, family: str) -> list[Call]:
    """The runs ``family`` registered (:func:`provider`)."""
    return list(PLANNERS[family](ctx))


def _store(ctx: GateContext) -> dict[Call, Any]:
    """Every run made for the runtime families (the input of the global transcript rules, :func:`everything`)."""
    return ctx.memo(("runtime", "runs"), dict)


def ensure(ctx: GateContext, specs: Iterable[Call]) -> None:
    """Run every spec not run yet, in parallel on the runner's pool (through the one planner)."""
    store = _store(ctx)
    todo = list(dict.fromkeys(s for s in specs if s not in store))
    if todo:
        store.update(run_calls(ctx, todo))


def require_profile(ctx: GateContext) -> None:
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
        parent = call_of(None, (*cmd.path[:-1], prof.cli["help"]), token=None, globals_=False)
        ensure(ctx, [parent])
        page = _store(ctx)[parent]
        listed = _listed_commands(page.stdout) if page.exit_code == 0 and page.problem is None else []
        if not listed or cmd.path[-1] in listed:
            return None  # no real help page that lacks the command: judge it (a broken target fails, not skips)
        raise NotApplicable(
            f"the implementation has no `{' '.join(cmd.path)}` (the contract profile's read probe, "
            f"{prof.source}): it exits {inv.exit_code} without a request and `{' '.join(parent.args)}` does "
            "not list it; an implementation with other command names passes its own --dws-profile",
            wants="the contract profile's read probe command")

    ctx.memo(("d1", "profile-available"), build)


def _listed_commands(text: str) -> list[str]:
    """The command list of a help page that has a usage line ([] for anything else)."""
    from pytest_dws.observe.binary.helptext import parse_help

    parsed = parse_help(text)
    return parsed.commands if parsed.usage is not None else []


def prefetch(ctx: GateContext, family: str) -> None:
    """Run all of ``family``'s specs once (the first gate of the family pays for the whole family)."""
    require_profile(ctx)
    if family in PLANNERS:
        ctx.memo(("runtime", "prefetched", family), lambda: ensure(ctx, PLANNERS[family](ctx)))


def run(ctx: GateContext, family: str, s: Spec) -> Any:
    """The invocation of ``s`` (prefetching ``family``); raises TargetFailure if the target hung or crashed."""
    __tracebackhide__ = True
    prefetch(ctx, family)
    ensure(ctx, [s])
    return _store(ctx)[s].check()


def results(ctx: GateContext, specs: Iterable[Spec]) -> list[Any]:
    """The invocations of ``specs`` (run as one batch where missing), without prefetching a whole family."""
    specs = list(specs)
    ensure(ctx, specs)
    return [_store(ctx)[s].check() for s in specs]


def everything(ctx: GateContext) -> list[tuple[Spec, Any]]:
    """Every run of every D1 family (running what is missing): the input of the global transcript rules. A run
    a replayed recording does not hold is left out (its own gate says "not recorded"; a global rule judges what
    was recorded)."""
    for family in sorted(FAMILIES & set(PLANNERS)):
        prefetch(ctx, family)
    return [(s, inv) for s, inv in _store(ctx).items() if _readable(inv)]


def _readable(inv: Any) -> bool:
    """False for an invocation a replayed recording does not hold (reading it raises NotApplicable)."""
    try:
        inv.exit_code  # noqa: B018 - the read is the test
    except NotApplicable:
        return False
    return True


# -- the read probe under a fault --------------------------------------------------------------------------
def read_probe(ctx: GateContext, reply: str | None, *, table: bool = False, token: str | None = "t") -> Spec:
    """The profile's read probe with fault ``reply`` on its business call (every call): the ERR gates' input,
    and the agent contract's error facts (pytest_dws.observe.agent_contract)."""
    prof = profile(ctx)
    cmd = prof.command(prof.probes["read"])
    sc = Sc(reply=reply, on=str(cmd.call)) if reply else WORLD
    s = spec(cmd, sc=sc, prof=prof, token=token)
    if not table:
        return s
    token_args = [t.replace("{token}", token or "t") for t in prof.cli["token"]]
    return call_of(sc, (*token_args, *prof.cli["table_format"], *s.args), globals_=False)


# -- profile helpers ----------------------------------------------------------------------------------------
def profile(ctx: GateContext) -> Profile:
    return active_profile(ctx)


def require(ctx: GateContext, key: str) -> Command:
    """The profile command ``key``, or NotApplicable (a profile may leave a command out)."""
    prof = active_profile(ctx)
    if key not in prof.commands:
        raise NotApplicable(f"the contract profile {prof.source} has no command {key!r}",
                            wants="a command of the contract profile")
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
