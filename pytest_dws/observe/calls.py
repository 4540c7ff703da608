"""The one run planner: calls the gates will need, made once per session as batches on the runner's pool.

A gate states WHAT it runs as :class:`Call` values (arguments after the global flags, the token, a world for
the fake backend) and reads the memoised :class:`~pytest_dws.launch.Invocation` back, so gates that need the
same run share one process. A gate (or a family) registers a planner (:func:`plans`) listing its calls; the
first gate that runs makes every planned call of its batch at once (:func:`prefetch`), which keeps all places
of the pool busy. Big batches print a plan line and progress with an ETA; under pytest-xdist the workers share
the calls (:mod:`pytest_dws.launch.xshare`).

A world is any hashable object with ``scenario(ctx)`` returning the fake_mcp Scenario to load (the runtime
families' :class:`pytest_dws.observe.runtime.cast.Sc`,
the schema gates' :class:`pytest_dws.observe.binary.worlds.World`);
``None`` means no backend at all (every endpoint dead). Nothing here imports a gate, a family's machinery or
pytest.
"""

from __future__ import annotations

import base64
import contextlib
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pytest_dws.core.protocols import GateContext
from pytest_dws.launch.plan import EXPENSIVE, clock, kind_of, plan_line

#: Batches bigger than this report progress (a line every this many finished invocations).
PROGRESS_BATCH = 64

#: A batch whose costly calls are estimated at this many seconds or more gets a plan line.
PLAN_WORTH = 10.0

#: Target CPU seconds assumed for a cheap call (probe, dry run) before one is measured (docs/wire.md §7: 0.04 s).
CHEAP_GUESS = 0.05

#: Local input files a dry run reads before it previews (docs/wire.md §8: `--file` must name an existing file):
#: file name -> content. Args carry :func:`input_file` marks; :func:`run_calls` writes the files on first use.
SYN_FILES = {"synthetic.txt": "合成测试文件\n", "synthetic-records.json": '[{"synthetic": "value"}]\n',
             "synthetic.md": "# 合成测试文件\n", "synthetic-groups.txt": "cidSYNTHETICgate0001==\n",
             "synthetic.xlsx": "synthetic\n"}


FILE_MARK = "{dws-input:"

_MARK = re.compile(r"\{dws-input:(?P<name>[\w.-]+)(?:\|(?P<text>[A-Za-z0-9+/=]*))?\}")


# -- invocations ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """One memoisable invocation: args after the global flags, whether to add them, the token, and the world of
    the fake backend (an object with ``scenario(ctx)``; None = no backend, every endpoint dead)."""

    args: tuple[str, ...]
    globals_: bool = False
    token: str | None = None
    scenario: Any = None
    env: tuple[tuple[str, str], ...] = ()  # variables the suite adds for this run only (sorted pairs)
    own: tuple[str, ...] = ()  # the command's own flag names: a global flag of one of these names is left out
    files: tuple[tuple[str, str], ...] = ()  # files written into its HOME (its working folder) first: (name, text)


def under_xdist(ctx: GateContext) -> bool:
    """True when this contract session is itself a pytest-xdist worker (its config has ``workerinput``; the
    environment variables are not enough: a contract run started in-process by a test that runs under xdist
    inherits them)."""
    return getattr(ctx, "xdist", None) is not None


def run_calls(ctx: GateContext, calls: Iterable[Call], *, read: bool = True) -> dict[Call, Any]:
    """Run the calls not yet memoised as ONE batch on the runner's bounded pool (one by one under xdist, which
    already spreads items over processes); big batches report progress on stderr. Returns every result, which
    the gate running now reads (``read``: False for a prefetch of other gates' calls)."""
    store: dict[Call, Any] = ctx.memo(("calls", "store"), dict)
    todo = list(dict.fromkeys(c for c in calls if c not in store))
    if todo:
        runner = ctx.cli()  # no binary: NotApplicable before the runner module is even imported
        from pytest_dws.launch import Job

        scenarios = {w: w.scenario(ctx) for w in {c.scenario for c in todo} if w is not None}
        jobs = []
        for c in todo:
            args, files = materialise(c.args)
            home = getattr(c.scenario, "home", None)  # a world may seed the HOME (observe.binary.worlds.World)
            if home is not None:
                files = {**home(ctx, c.args), **files}
            files = {**dict(c.files), **files}
            options: dict[str, Any] = {"token": c.token, "globals_": c.globals_, "files": files}
            if c.env:
                options["env"] = dict(c.env)
            if c.own:
                options["own"] = c.own
            jobs.append(Job(args, scenarios[c.scenario] if c.scenario is not None else None, options))
        share = _share(ctx)
        if share is not None and len(todo) > 1:  # pytest-xdist: each call made by one worker, read by all
            by_call = dict(zip(todo, jobs, strict=True))
            # The run's progress (every worker's calls), told by the first worker only: one line, not one a worker.
            places = int((ctx.xdist or {}).get("workercount") or 1)
            told = _Progress(ctx, [kind_of(c.args) for c in todo], places) if share.index == 0 else None
            made = share.run(todo, lambda c: runner.run_jobs([by_call[c]], workers=1, read=False)[0],
                             timeout=runner.timeout + 30, progress=told.pending if told is not None else None)
            store.update(made)
            return _read(ctx, {c: store[c] for c in calls}, read)
        workers = 1 if under_xdist(ctx) else None
        # One batch (no chunks: a chunk boundary would drain the pool); the plan line first, then a progress
        # line with an ETA every PROGRESS_BATCH finished calls.
        progress = _Progress(ctx, [kind_of(c.args) for c in todo], workers or runner.workers)
        for c, inv in zip(todo, runner.run_jobs(jobs, workers=workers, progress=progress, read=False),
                          strict=True):
            store[c] = inv
    return _read(ctx, {c: store[c] for c in calls}, read)


def _read(ctx: GateContext, results: dict[Call, Any], read: bool) -> dict[Call, Any]:
    """The gate running now reads these (the ledger counts, per gate, what a recording gave and lacked)."""
    for inv in results.values() if read else ():
        ctx.ledger.read(inv)
    return results


def _share(ctx: GateContext) -> Any:
    """This xdist worker's share of the run's calls (pytest_dws.launch.xshare), None outside xdist."""
    if not under_xdist(ctx):
        return None
    from pytest_dws.launch import xshare

    def build() -> Any:
        share = xshare.active(ctx.xdist, repr(ctx.settings))
        if share is not None:
            ctx.on_close(share.finish)  # the last worker to finish removes the shared directory
        return share

    return ctx.memo(("calls", "xshare"), build)


class _Progress:
    """The plan line of a batch with costly calls, and its progress with an ETA, on the real stderr (pytest
    captures sys.stderr). The estimate is, per call kind, the target CPU measured so far for a call of that
    kind (a costly kind not met yet: `schema --all`'s, read before any batch) times the calls, over the places
    that run side by side; the ETA re-estimates what is left the same way."""

    def __init__(self, ctx: GateContext, kinds: list[str], places: int) -> None:
        costly = sum(k in EXPENSIVE for k in kinds)
        self.start = time.monotonic()
        self.console = getattr(ctx, "console", None)
        self.announce = getattr(ctx, "announce", None) if getattr(ctx, "terminal", None) is not None else None
        self.tty = bool(self.announce is None and self.console is not None and self.console.isatty())
        self.ledger, self.places = ctx.ledger, max(1, places)
        self.left = Counter(kinds)
        self.total, self.told = len(kinds), -1
        mean = ctx.ledger.mean_cpu(EXPENSIVE | {"schema --all"})
        estimate = self.seconds(self.left)
        # Worth a line: a batch a user waits for (seconds of costly calls, or many calls).
        self.shown = (bool(costly) and (estimate >= PLAN_WORTH or mean is None)) or len(kinds) > PROGRESS_BATCH
        if not self.shown:
            return
        counts = dict(Counter(kinds))
        line = plan_line(counts, mean_cpu=mean, places=places, estimate=estimate)
        ctx.section("plan", {"batches": [*ctx.sections.get("plan", {}).get("batches", []),
                                         {"calls": dict(sorted(counts.items())), "estimate_s": round(estimate, 1),
                                          "line": line}]})
        self.write("\n" + line + "\n")

    def seconds(self, calls: Counter[str]) -> float:
        """Wall seconds ``calls`` should take on this batch's places, from the CPU measured per kind."""
        costly = self.ledger.mean_cpu(EXPENSIVE | {"schema --all"}) or 0.0
        total = 0.0
        for kind, n in calls.items():
            mean = self.ledger.mean_cpu({kind})
            total += n * (mean if mean is not None else costly if kind in EXPENSIVE else CHEAP_GUESS)
        return total / self.places

    def __call__(self, done: int, total: int, job: Any) -> None:
        self.left[kind_of(job.args)] -= 1
        if total > PROGRESS_BATCH and (done % PROGRESS_BATCH == 0 or done == total):
            self.tell(done, total)

    def pending(self, calls: list[Any]) -> None:
        """Under pytest-xdist: the batch's calls no worker has finished yet (:meth:`xshare.Share.run`)."""
        total = self.total
        self.left = Counter(kind_of(c.args) for c in calls)
        done = total - len(calls)
        if total > PROGRESS_BATCH and done != self.told:
            self.tell(done, total)

    def tell(self, done: int, total: int) -> None:
        """``dws-contract: calls 640/2174, ETA 3m10s`` (the ETA from what is left, :meth:`seconds`)."""
        if not self.shown:
            return
        self.told = done
        rest = "" if done == total else f", ETA {clock(self.seconds(+self.left))}"
        text = f"dws-contract: calls {done}/{total}{rest}"
        # On a terminal one line updated in place; in a CI log one line each.
        self.write(("\r" + text + ("\n" if done == total else "")) if self.tty else text + "\n")

    def write(self, text: str) -> None:
        """Through pytest's terminal reporter (the context's announce) where this process has one, else to the
        session's console (the real stderr, past pytest's capture of fd 2), else sys.__stderr__."""
        if self.announce is not None:
            for line in text.strip("\r\n").splitlines():
                self.announce(line)
            return
        stream = self.console or sys.__stderr__
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.write(text)
                stream.flush()


def input_file(name: str, text: str | None = None) -> str:
    """The mark of a synthetic local input file in an argument (replaced by a relative path when the call runs):
    ``name`` is one of :data:`SYN_FILES`, or any name when ``text`` gives the content."""
    if text is None:
        return f"{FILE_MARK}{name}}}"
    return f"{FILE_MARK}{name}|{base64.b64encode(text.encode()).decode()}}}"


def materialise(args: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
    """(``args`` with the input-file marks replaced by relative paths, {path: content} to write into the
    invocation's working directory). Relative, because real commands refuse input files outside the working
    directory (docs/wire.md §8: `--groups-file`, `--contents-file`). Memo keys keep the marks."""
    files: dict[str, str] = {}

    def path(m: re.Match[str]) -> str:
        name, text = m.group("name"), m.group("text")
        files[name] = base64.b64decode(text).decode() if text is not None else SYN_FILES[name]
        return name

    out = tuple(_MARK.sub(path, a) if FILE_MARK in a else a for a in args)
    return out, files


#: gate id or family -> planner(ctx) -> the invocations it will need (see :func:`prefetch`).
PLANNERS: dict[str, Any] = {}


def plans(key: str) -> Any:
    """Register the call planner of a gate id (or of a whole family: ``"TGT"``): a cheap function listing the
    invocations its gates will make."""

    def register(func: Any) -> Any:
        PLANNERS[key] = func
        return func

    return register


def prefetch(ctx: GateContext, keys: Iterable[str], *, strict: bool = False) -> None:
    """Make the planned calls of ``keys`` as ONE batch, once per session (one big batch keeps every place of the
    pool busy; the gates then read memoised results). A planner that raises is left out (its gate meets the same
    error when it runs), unless ``strict``: then the error is the batch's, and every gate that asks for it
    meets it again (:meth:`Context.memo`)."""
    chosen = tuple(sorted(k for k in set(keys) if k in PLANNERS))

    def build() -> bool:
        calls: list[Call] = []
        for key in chosen:
            if strict:
                calls += PLANNERS[key](ctx)
                continue
            try:
                calls += PLANNERS[key](ctx)
            except Exception:
                continue
        run_calls(ctx, calls, read=False)  # made now, read by the gates that planned them
        return True

    if chosen:
        ctx.memo(("calls", "prefetch", chosen), build)


def selected_gates(ctx: GateContext) -> set[str] | None:
    """Gate ids of the items this session will run (after -k/-m deselection), or None when unknown."""
    return getattr(ctx, "selected_gates", None)


def target_time(ctx: GateContext, inv: Any) -> None:
    """Account a target process run outside the session runner (tree copies, the generator): the benchmark
    compares the suite's wall time with the sum of ALL the target's own process times."""
    ctx.ledger.record("other", inv.argv, inv.duration, inv.cpu)


def run_one(ctx: GateContext, call: Call) -> Any:
    """The memoised invocation of one call (TargetFailure on a hang/crash/flood)."""
    return run_calls(ctx, [call])[call].check()
