"""The runner of the implementation under test: argv and scrubbed environment, answers shared between identical
costly calls, and batches on a bounded pool (see :mod:`pytest_dws.launch`)."""

from __future__ import annotations

import itertools
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fake_mcp.env import MINIMAL_PATH
from pytest_dws.core.errors import DwsInputError
from pytest_dws.core.identity import resolve_prefix
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.profile import active_profile
from pytest_dws.launch.contain.containment import Containment
from pytest_dws.launch.homes import HomePool, InputFiles, egress_tag, write_files
from pytest_dws.launch.invocation import Invocation, printable
from pytest_dws.launch.places import Places, single_flight
from pytest_dws.launch.process import DEFAULT_OUTPUT_CAP, LiveGroups, run_process
from pytest_dws.launch.servers import ServerPool, scenario_key

#: Go's garbage-collector pacing for the target (GOGC; `--dws-env GOGC=100` restores Go's default). Why: on
#: 81f67c8d a leaf `--help` decodes the whole embedded catalog, and with Go's default pacing the collector's
#: threads take the second core: 5.5 s of CPU a call, 3.75 s at GOGC=400 (RSS 280 → 405 MB; measured on a
#: 2-core machine, docs/wire.md §7 has the call costs).
#: It changes when memory is reclaimed, nothing the program prints; other languages ignore it.
TARGET_GOGC = "400"

#: Consecutive timed-out invocations after which a run stops (exit 4): a hung target never makes a run take hours.
TIMEOUT_BREAKER = 5

#: Endpoint base when no fake server is attached: port 1 on loopback refuses every connection.
DEAD_BASE_URL = "http://127.0.0.1:1"


class Runner:
    """Runs the implementation named by ``--dws-cli`` (see :mod:`pytest_dws.launch`)."""

    def __init__(self, argv: Sequence[str], ctx: GateContext | None = None, *, timeout: float | None = None,
                 output_cap: int = DEFAULT_OUTPUT_CAP, workers: int | None = None, **jail: Any) -> None:
        self.prefix = resolve_prefix(argv)
        self.ctx = ctx
        self.envelope = active_profile(ctx).errors  # where the release puts its typed error (handed to each run)
        settings = getattr(ctx, "settings", None)
        self.timeout = float(timeout or getattr(settings, "timeout", None) or 30.0)
        self.extra_env: dict[str, str] = dict(getattr(settings, "env", None) or {})
        self.output_cap = output_cap
        self.workers = workers or max(1, min(4, os.cpu_count() or 1))
        root = getattr(ctx, "tmp_root", None)
        self._tmp = Path(root) if root is not None else Path(tempfile.gettempdir())
        self._lock = threading.Lock()
        self._timeouts = 0  # consecutive timed-out invocations (see TIMEOUT_BREAKER)
        self.count, self.total_wall, self.total_cpu = 0, 0.0, 0.0  # invocations run, their wall and target CPU
        self._homes, self.jails = HomePool(self._tmp), Containment.of(self.prefix, settings, **jail)  # (issue 45)
        memo = getattr(ctx, "memo", None)  # answers of identical costly calls are shared by a session's runners
        self.servers = ServerPool(ctx)  # pooled fake servers and the session's validated scenarios
        self._answers: dict[Any, Any] = memo(("runner", "answers"), dict) if callable(memo) else {}
        self._limits: dict[int, Places] = {}
        self._local = threading.local()  # .limit: the Places of the batch this thread serves
        self._dead_env: dict[str, str] | None = None
        from fake_mcp.egress import EgressRecorder

        self._egress = EgressRecorder()  # the proxy of every invocation: refuses, and records where it went
        #: what every invocation of this runner asked of the service beyond tools/call (D2 §7: discovery on ANY
        #: invocation of the run, not only help and schema): [(argv after the launcher, what it asked)], and how
        #: many invocations were looked at (SCH-NO-LISTTOOLS[bin] judges them all)
        self.discovery: list[tuple[list[str], list[str]]] = []
        self.observed_invocations = 0
        self.live = LiveGroups()  # the targets running now (interrupt() on Ctrl-C / SIGTERM)
        self.live.spawner.warm_start(self.prefix, getattr(settings, "warm_start", ()))  # --dws-warm-start
        self.live.guard(Path(root) if root is not None else None)  # a SIGKILLed suite leaves no temp tree
        announce = getattr(ctx, "announce", None)
        if callable(announce):  # a long call is never silence: a line every 10 s while targets run
            self.live.heartbeat(announce)
        from pytest_dws.launch.tape import tape_for

        self.tape = tape_for(ctx, self.prefix, self._tmp)  # --dws-record / --dws-replay (None: neither)
        on_close = getattr(ctx, "on_close", None)  # the Context stops what the session started
        if callable(on_close):
            on_close(self.close)

    def probe_identity(self) -> None:
        """Before anything is planned: does the target answer ``--help`` at all? One that hangs is bad input
        (exit 4, one line) within one timeout, not hours of timed-out gates. The answer is the same call the
        gates make later (shared, so it costs nothing extra)."""
        inv = self.run("--help", token=None, globals_=False, check=False)
        if inv.timed_out:
            raise DwsInputError("--dws-cli", "", f"`{' '.join(self.prefix)} --help` did not answer within "
                                f"{self.timeout:g} s (killed with its process group): the implementation hangs "
                                "or is not a dws")
        if inv.crashed or inv.overflow:
            return  # a dws that crashes or floods is judged: its gates fail (a defect of the release, exit 1)
        if inv.exit_code != 0 or not (inv.stdout.strip() or inv.stderr.strip()):
            said = printable((inv.stderr.strip() or inv.stdout.strip()).splitlines()[0][:160]) \
                if (inv.stderr.strip() or inv.stdout.strip()) else "printed nothing"
            raise DwsInputError("--dws-cli", "", f"`{' '.join(self.prefix)} --help` exited {inv.exit_code} ({said}): "
                                "not a dws (a dws answers --help with its usage and exit 0)")

    def file_egress(self, inv: Invocation, attempts: Sequence[Any]) -> None:
        """Where the run tried to go off the machine, each host with its kind (issue 25: egress has a kind; only
        the service's own is discovery's business), and the run's ``egress`` report section per host."""
        profile = active_profile(self.ctx)
        kinds: dict[str, str] = {}
        for a in attempts:
            kind = profile.egress_kind(a.host, a.seen_kind)
            if kinds.get(a.target) != "mcp-discovery":  # the strongest kind seen for a host wins
                kinds[a.target] = kind
        inv.egress = sorted(kinds)
        inv.egress_kinds = dict(sorted(kinds.items()))
        section = getattr(self.ctx, "section", None)
        if callable(section):
            section("egress", {t: {"kind": k, "example": " ".join(inv.argv[len(self.prefix):])[:200]}
                               for t, k in kinds.items()})

    # -- argv and environment ---------------------------------------------------------------------
    def global_args(self, token: str | None, without: Sequence[str] = ()) -> list[str]:
        """The profile's global flags (e81: --token t --format json) less the command's own (Profile.global_args)."""
        return active_profile(self.ctx).global_args(token, without)

    def command(self, args: Sequence[str], *, token: str | None = "t", globals_: bool = True,
                prefix: Sequence[str] | None = None, own: Sequence[str] = ()) -> list[str]:
        """The full argv of one invocation (``prefix``: another build of the implementation, e.g. a tree copy,
        instead of ``--dws-cli``; see :func:`resolve_prefix`; ``own``: the command's own flag names)."""
        pre = self.global_args(token, own) if globals_ else []
        return [*(self.prefix if prefix is None else prefix), *pre, *map(str, args)]

    def environment(self, home: Path, backend: Any = None, env: dict[str, str] | None = None) -> dict[str, str]:
        """Built from scratch: nothing of the suite's own environment leaks into the target."""
        from fake_mcp import isolation_env

        out = {"PATH": MINIMAL_PATH, "LANG": "C.UTF-8", "GOGC": TARGET_GOGC}
        out.update(isolation_env(home))
        proxy = self._egress.proxy_url(egress_tag(home))
        out.update({name: proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")})
        # No backend: every product points at a loopback port nobody listens on.
        out.update(backend.env() if backend is not None else self._dead_endpoints())
        out.update(self.extra_env)
        out.update(env or {})
        out.update(self.tape.coverage(home) if self.tape is not None else {})  # while recording (launch.targeting)
        return out

    def _dead_endpoints(self) -> dict[str, str]:
        """The endpoint variables of "no backend" (a constant: built once per runner)."""
        if self._dead_env is None:
            from fake_mcp import endpoint_env

            self._dead_env = endpoint_env(DEAD_BASE_URL)
        return self._dead_env

    # -- running -------------------------------------------------------------------------------------
    def run(self, *args: str, backend: Any = None, token: str | None = "t", globals_: bool = True,
            timeout: float | None = None, stdin: bytes = b"", env: dict[str, str] | None = None,
            check: bool = True, prefix: Sequence[str] | None = None, files: InputFiles | None = None,
            collect: Sequence[Path] = (), own: Sequence[str] = ()) -> Invocation:
        """Run once and return the :class:`Invocation` (``check``: raise TargetFailure on hang/crash/flood;
        ``prefix``: run another build of the implementation, e.g. a tampered tree copy, on this runner's pool;
        ``files``: {relative name: text or bytes} written into its working directory first; ``collect``: files
        the target (or what it starts) writes elsewhere and a gate reads afterwards: a recording keeps them)."""
        __tracebackhide__ = True
        from pytest_dws.launch.plan import kind_of

        argv = self.command(args, token=token, globals_=globals_, prefix=prefix, own=own)
        kind = kind_of(args)

        def make() -> Invocation:
            return self.spawn(argv, backend=backend, timeout=timeout, stdin=stdin, env=env, files=files,
                              kind=kind, collect=collect)

        world = "dead endpoints" if backend is None else None  # a passed-in server's state is the caller's
        key = None if collect else self._answer_key(argv, kind, world, timeout, stdin, env, files)
        inv = self._once(key, kind, make)
        return inv.check() if check else inv

    def _answer_key(self, argv: Sequence[str], kind: str, world: Any, timeout: float | None, stdin: bytes,
                    env: Mapping[str, str] | None, files: InputFiles | None) -> Any:
        """The identity of a call whose answer an identical earlier call of the session gives, or None.

        Why: several gates read the same leaf `--help` or `schema <tool>`, and on the real binary each costs
        seconds (docs/wire.md §7). Only those kinds (read-only views of the build) are shared, and only when
        everything the target sees is the same: its argv, the environment override, a world built fresh from
        the same scenario (or every endpoint dead), no stdin and no input files. Runs that execute or dry-run
        a command are never shared: a gate that makes a call twice means to observe it twice."""
        from pytest_dws.launch.plan import EXPENSIVE

        if kind not in EXPENSIVE or world is None or stdin or files:
            return None
        return (tuple(argv), world, tuple(sorted((env or {}).items())), timeout)

    def _once(self, key: Any, kind: str, make: Callable[[], Invocation]) -> Invocation:
        """``make()`` once per key per session (None: always); concurrent askers wait for the first answer."""
        if key is None:
            return make()
        inv, made = single_flight(self._lock, self._answers, key, make)
        ledger = getattr(self.ctx, "ledger", None)
        if not made and ledger is not None:
            ledger.reuse(kind)
        return inv

    def spawn(self, argv: list[str], *, backend: Any = None, timeout: float | None = None, stdin: bytes = b"",
              env: dict[str, str] | None = None, files: InputFiles | None = None,
              kind: str = "other", collect: Sequence[Path] = ()) -> Invocation:
        """Run ``argv`` exactly as given (no global flags) with the scrubbed environment. The working directory
        is the invocation's private HOME: ``files`` land there, because real commands accept input files only
        as relative paths inside the working directory (docs/wire.md §8: `--groups-file`, `--contents-file`).
        ``kind``: its cost kind in the session's ledger (:func:`pytest_dws.launch.plan.kind_of`)."""
        tape = self.tape
        added = {**self.extra_env, **(env or {})}  # the environment the suite adds: part of a recording's key
        if tape is not None and tape.replayer is not None:  # a replay; appending or targeted: answered, else live
            answered = tape.answer(argv, backend=backend, env=added, stdin=stdin, files=files, kind=kind, ctx=self.ctx,
                                   collect=collect, fresh=backend is None or self.servers.fresh(backend))
            if answered is not None:
                answered.envelope = self.envelope  # a recorded outcome is read the way this run reads its own
                self._note_discovery(argv, answered)
                return answered
        home = self._homes.take()
        write_files(home, files or {})
        try:
            before = len(backend.transcript) if backend is not None else 0
            jail = self.jails.make(home, argv, [*collect, *(tape.side_files(home) if tape is not None else ())])
            inv = run_process(argv, env=self.environment(home, backend, env), cwd=home, stdin=stdin,
                              timeout=timeout or self.timeout, cap=self.output_cap, live=self.live,
                              limit=getattr(self._local, "limit", None), jail=jail)
            if backend is not None:
                inv.transcript = backend.transcript.records[before:]
            attempts = self._egress.take(egress_tag(home))
            if attempts:
                self.file_egress(inv, attempts)
            inv.collected = [p.read_text(encoding="utf-8", errors="replace") if p.is_file() else None
                             for p in collect]
            inv.consulted = tape.consulted(home) if tape is not None else None  # the switch points it reported
            inv.envelope = self.envelope
        finally:
            self._homes.give(home)
        with self._lock:
            self.count += 1
            self.total_wall += inv.duration
            self.total_cpu += inv.cpu
            self._timeouts = self._timeouts + 1 if inv.timed_out else 0
            tripped = self._timeouts >= TIMEOUT_BREAKER
        if tripped:  # a target that hangs would make the run take hours: stop it, as bad input (exit 4)
            self.live.interrupt()
            raise DwsInputError("--dws-cli", "", f"{TIMEOUT_BREAKER} invocations in a row timed out (the last: "
                                f"{' '.join(argv)}): the implementation hangs; the run stops")
        ledger = getattr(self.ctx, "ledger", None)
        if ledger is not None:
            ledger.record(kind, argv, inv.duration, inv.cpu, warm=inv.warm)
        self._note_discovery(argv, inv)
        if tape is not None:
            tape.record(argv, inv, backend=backend, env=added, stdin=stdin, files=files, kind=kind)
        return inv

    def _note_discovery(self, argv: Sequence[str], inv: Invocation) -> None:
        """File what ``inv`` asked of the service beyond tools/call (Invocation.discovery_asked). A replayed
        invocation the recording does not hold has nothing to file, and another build than the target (a
        tampered tree copy: SCHCLI-CORRUPT judges what it asks) is not the release's run time."""
        from pytest_dws.core.errors import NotApplicable

        if list(argv[:len(self.prefix)]) != list(self.prefix):
            return
        try:
            asked = inv.discovery_asked
        except NotApplicable:
            return
        with self._lock:
            self.observed_invocations += 1
            if asked:
                self.discovery.append(([str(a) for a in argv[len(self.prefix):]], asked))

    def run_many(self, argvs: Iterable[Sequence[str]], *, workers: int | None = None, scenario: Any = None,
                 backend: Any = None, check: bool = True, **kw: Any) -> list[Invocation]:
        """Run several invocations, results in the order given.

        ``scenario``: each invocation gets a fresh world of that scenario on a pooled fake server, so they run
        in parallel (bounded by ``workers``). ``backend`` without ``scenario``: sequential on that server.
        Neither: parallel, every endpoint dead.
        """
        __tracebackhide__ = True
        jobs = [Job(tuple(a), scenario, kw) for a in argvs]
        if backend is not None and scenario is None:
            out = [self.run(*j.args, backend=backend, check=False, **kw) for j in jobs]
        else:
            out = self.run_jobs(jobs, workers=workers)
        if check:
            for inv in out:
                inv.check()
        return out

    def run_jobs(self, jobs: Sequence[Job], *, workers: int | None = None,
                 progress: Callable[[int, int, Job], None] | None = None, read: bool = True) -> list[Invocation]:
        """Run jobs (argv + scenario + options) on a bounded pool; never raises for target misbehaviour.

        At most ``workers`` target processes run at a time, counting those of batches that run at the same time
        from other threads (:meth:`limit`). More threads than that serve the batch, so the suite's own per-run
        work (fresh world, HOME, environment; filing the result) is done while targets run, and a finishing
        target hands its place straight to a prepared run (:class:`Places`). ``progress(done, total, job)``
        is called after each finished job. ``read``: the gate running now reads the results (the planner,
        :func:`pytest_dws.observe.calls.run_calls`, counts the reads itself, per reading gate)."""
        jobs = list(jobs)
        if not jobs:
            return []
        if read:
            out = self.run_jobs(jobs, workers=workers, progress=progress, read=False)
            ledger = getattr(self.ctx, "ledger", None)
            if ledger is not None:
                for inv in out:
                    ledger.read(inv)
            return out
        bound = max(1, workers or self.workers)
        limit = self.limit(bound)
        done = itertools.count(1)

        def work(job: Job) -> Invocation:
            self._local.limit = limit
            try:
                inv = self._run_job(job)
            finally:
                self._local.limit = None
            if progress is not None:
                with self._lock:
                    count = next(done)
                    progress(count, len(jobs), job)  # under the lock: one progress line at a time
            return inv

        # Per place: the thread whose run holds it, one whose prepared run waits for it; plus one preparing.
        threads = min(2 * bound + 1, len(jobs))
        if threads == 1:
            return [work(j) for j in jobs]
        prep = None
        if any(j.scenario is not None for j in jobs):
            prep = threading.Thread(target=self.servers.prepare, args=(jobs,), name="dws-prepare", daemon=True)
            prep.start()
        try:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="dws-run") as pool:
                return list(pool.map(work, jobs))
        finally:
            if prep is not None:
                prep.join()

    def limit(self, workers: int) -> Places:
        """The places bounding this runner's target processes at ``workers`` at a time: one per worker count
        and runner, shared by every batch that runs with that count (side by side batches share the bound)."""
        with self._lock:
            found = self._limits.get(workers)
            if found is None:
                found = self._limits[workers] = Places(workers)
            return found

    def _run_job(self, job: Job) -> Invocation:
        if job.scenario is None:
            return self.run(*job.args, check=False, **job.options)
        from pytest_dws.launch.plan import kind_of

        kind = kind_of(job.args)
        opts = job.options
        argv = self.command(job.args, token=opts.get("token", "t"), globals_=opts.get("globals_", True),
                            prefix=opts.get("prefix"), own=opts.get("own", ()))
        key = self._answer_key(argv, kind, self.servers.world_key(job.scenario), opts.get("timeout"),
                               opts.get("stdin", b""), opts.get("env"), opts.get("files"))
        return self._once(key, kind, lambda: self._run_in_world(job))

    def _run_in_world(self, job: Job) -> Invocation:
        slot = self.servers.acquire()
        try:
            key = scenario_key(job.scenario)
            if slot.key == key:
                slot.server.reset()
            else:
                slot.server.load(self.servers.validated(job.scenario, key))
                slot.key = key
            return self.run(*job.args, backend=slot.server, check=False, **job.options)
        finally:
            self.servers.release(slot)

    def backends(self, scenario: Any, count: int) -> Any:
        """``count`` pooled fake servers with a fresh world of ``scenario`` each (:meth:`ServerPool.backends`)."""
        return self.servers.backends(scenario, count)

    def close(self) -> None:
        """Stop the pooled fake servers (called by the context at the end of the session)."""
        self.servers.close()
        self._homes.close()
        self._egress.close()
        self.live.close()
        self.live.watchdog.close()


@dataclass(frozen=True)
class Job:
    """One queued invocation: arguments after the global flags, a scenario (or None) and run() options."""

    args: tuple[str, ...]
    scenario: Any = None
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
