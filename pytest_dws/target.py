"""Launching the implementation under test: argv, environment, process hygiene, output capture.

Every invocation runs in a scrubbed environment (nothing inherited: a minimal PATH, ``LANG``, a clean private
temp HOME with empty config/keychain dirs (:class:`HomePool`), a recording proxy (:mod:`fake_mcp.egress`),
endpoint variables pointing at the fake MCP server or at a dead loopback port, plus ``--dws-env`` values), in
its own process group with that HOME
as working directory, under a wall-clock timeout. A target that hangs is killed with its whole process group;
one that crashes or floods its output is reported as :class:`TargetFailure` (an ``AssertionError``: a failure
of the gate that ran it), never as a crash of the suite, and never leaves a process behind.

Batches (:meth:`Runner.run_jobs`) run at most ``workers`` targets at a time (:class:`Places`); the suite's own
per-run work is done by spare threads while targets run, so it does not add to the session's wall time.

Example::

    runner = ctx.cli()
    inv = runner.run("chat", "+conversation-list", "--page-all", backend=srv)
    assert inv.exit_code == 0, inv.describe()
    rows = inv.stdout_json["conversations"]
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import queue
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pytest_dws.compare import Diffable
from pytest_dws.jsondoc import first_json

#: Output cap per stream pair (stdout + stderr). `dws schema --all` is 27 MB at e81 (WIRE.md §7).
DEFAULT_OUTPUT_CAP = 64 * 1024 * 1024
MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"
#: Go's garbage-collector pacing for the target (GOGC; `--dws-env GOGC=100` restores Go's default). Why: on
#: 81f67c8d a leaf `--help` decodes the whole embedded catalog, and with Go's default pacing the collector's
#: threads take the second core: 5.5 s of CPU a call, 3.75 s at GOGC=400 (RSS 280 → 405 MB; measured on a
#: 2-core machine, WIRE.md §7 has the call costs).
#: It changes when memory is reclaimed, nothing the program prints; other languages ignore it.
TARGET_GOGC = "400"
#: Endpoint base when no fake server is attached: port 1 on loopback refuses every connection.
DEAD_BASE_URL = "http://127.0.0.1:1"
_CHUNK = 1 << 16


class CallList(Diffable, list):  # type: ignore[misc]
    """Backend calls of an invocation (fake_mcp Records, or ``(path, tool, arguments)`` tuples): a list whose
    failed ``==`` pytest renders as a deepdiff (see :mod:`pytest_dws.compare`)."""

    __slots__ = ()

    def plain(self) -> list[Any]:
        return [r.to_dict() if hasattr(r, "to_dict") else r for r in self]


class TargetFailure(AssertionError):
    """The implementation misbehaved as a process (hang, crash, runaway output).

    An ``AssertionError`` on purpose: it is a verdict on the implementation, reported under the gate that ran
    it (and eligible for the baseline like any other gate failure).
    """


@dataclass
class Invocation:
    """One finished run of the implementation: what it was given, what it printed, what it sent."""

    argv: list[str]
    exit_code: int | None
    stdout: str
    stderr: str
    transcript: list[Any] = field(default_factory=list)
    timed_out: bool = False
    crashed: bool = False
    signal: int | None = None
    overflow: bool = False
    duration: float = 0.0
    cpu: float = 0.0
    egress: list[str] = field(default_factory=list)  # host:port it tried to reach off the machine (refused)

    @cached_property
    def stdout_json(self) -> Any:
        """The first JSON document on stdout, or None."""
        return first_json(self.stdout)

    @cached_property
    def stderr_json(self) -> Any:
        """The first JSON document on stderr, or None (a trailing ``RECOVERY_EVENT_ID=...`` line is ignored)."""
        return first_json(self.stderr)

    @property
    def error(self) -> dict[str, Any] | None:
        """The ``error`` object of the first JSON document on stderr, or None."""
        doc = self.stderr_json
        if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
            return doc["error"]
        return None

    def calls(self, tool: str | None = None) -> CallList:
        """The ``tools/call`` records of this invocation (optionally of one tool)."""
        return CallList(r for r in self.transcript if r.rpc_method == "tools/call" and (tool is None or r.tool == tool))

    def call_tuples(self) -> CallList:
        """The ordered ``(path, tool, arguments)`` of the backend calls: the invocation as GATES.md R6.4 compares it
        (``assert inv.call_tuples() == [("/mcp/im", "search_groups", {...})]`` fails with a deepdiff)."""
        return CallList((r.path, r.tool, r.arguments) for r in self.calls())

    @property
    def problem(self) -> str | None:
        """Why this run cannot be judged at all (hang, crash, flood), or None."""
        if self.timed_out:
            return f"timed out after {self.duration:.1f}s and was killed with its process group"
        if self.overflow:
            return "flooded its output past the capture limit and was killed"
        if self.crashed:
            name = _signal_name(self.signal)
            return f"was killed by signal {self.signal} ({name})"
        return None

    def check(self) -> Invocation:
        """Raise :class:`TargetFailure` when the run was abnormal; return self otherwise."""
        __tracebackhide__ = True
        if self.problem is not None:
            raise TargetFailure(f"the implementation {self.problem}\n{self.describe()}")
        return self

    def describe(self, limit: int = 700) -> str:
        """A compact, readable account of the run for failure messages."""
        calls = [f"{r.product}/{r.tool} {json.dumps(r.arguments, ensure_ascii=False, sort_keys=True)}"
                 for r in self.calls()]
        other = sorted({str(r.rpc_method) for r in self.transcript if r.rpc_method != "tools/call"})
        lines = [f"  argv: {_shell(self.argv)}", f"  exit: {self.exit_code}"]
        lines.append(f"  backend calls ({len(calls)}): " + ("; ".join(calls)[:limit] if calls else "none"))
        if other:
            lines.append(f"  other requests: {', '.join(other)}")
        if self.egress:
            lines.append(f"  tried to leave the machine (refused by the suite's proxy): {', '.join(self.egress)}")
        for name, text, doc in (("stdout", self.stdout, self.stdout_json), ("stderr", self.stderr, self.stderr_json)):
            if text.strip():
                shown = json.dumps(doc, ensure_ascii=False) if doc is not None else text.strip()
                lines.append(f"  {name}: {shown[:limit]}" + (" ..." if len(shown) > limit else ""))
        return "\n".join(lines)


def _signal_name(num: int | None) -> str:
    try:
        return signal.Signals(num).name if num is not None else "?"
    except ValueError:
        return "?"


def _shell(argv: Sequence[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)


class Runner:
    """Runs the implementation named by ``--dws-cli`` (see module docstring)."""

    def __init__(self, argv: Sequence[str], ctx: Any = None, *, timeout: float | None = None,
                 output_cap: int = DEFAULT_OUTPUT_CAP, workers: int | None = None) -> None:
        self.prefix = resolve_prefix(argv)
        self.ctx = ctx
        settings = getattr(ctx, "settings", None)
        self.timeout = float(timeout or getattr(settings, "timeout", None) or 30.0)
        self.extra_env: dict[str, str] = dict(getattr(settings, "env", None) or {})
        self.output_cap = output_cap
        self.workers = workers or max(1, min(4, os.cpu_count() or 1))
        root = getattr(ctx, "tmp_root", None)
        self._tmp = Path(root) if root is not None else Path(tempfile.gettempdir())
        self._lock = threading.Lock()
        self.count = 0
        self.total_wall = 0.0
        self.total_cpu = 0.0
        self._slots: queue.LifoQueue[_Slot] = queue.LifoQueue()
        self._all_slots: list[_Slot] = []
        self._closed = False
        self._homes = HomePool(self._tmp)
        memo = getattr(ctx, "memo", None)  # validated scenarios are shared by the runners of a session
        self._scenarios: dict[Any, Any] = memo(("runner", "scenarios"), dict) if callable(memo) else {}
        self._answers: dict[Any, Any] = memo(("runner", "answers"), dict) if callable(memo) else {}
        self._world_keys: dict[int, tuple[Any, str]] = memo(("runner", "world-keys"), dict) if callable(memo) else {}
        self._limits: dict[int, Places] = {}
        self._local = threading.local()  # .limit: the Places of the batch this thread serves
        self._dead_env: dict[str, str] | None = None
        from fake_mcp.egress import EgressRecorder

        self._egress = EgressRecorder()  # the proxy of every invocation: refuses, and records where it went
        self.live = LiveGroups()  # the targets running now (interrupt() on Ctrl-C / SIGTERM)
        on_close = getattr(ctx, "on_close", None)  # the Context stops what the session started
        if callable(on_close):
            on_close(self.close)

    # -- argv and environment ---------------------------------------------------------------------
    def global_args(self, token: str | None) -> list[str]:
        """The global flags placed before the command (from the contract profile; e81: --token t --format json)."""
        from pytest_dws.profile import active_profile

        return active_profile(self.ctx).global_args(token)

    def command(self, args: Sequence[str], *, token: str | None = "t", globals_: bool = True,
                prefix: Sequence[str] | None = None) -> list[str]:
        """The full argv of one invocation (``prefix``: another build of the implementation, e.g. a tree copy,
        instead of ``--dws-cli``; see :func:`resolve_prefix`)."""
        pre = self.global_args(token) if globals_ else []
        return [*(self.prefix if prefix is None else prefix), *pre, *map(str, args)]

    def environment(self, home: Path, backend: Any = None, env: dict[str, str] | None = None) -> dict[str, str]:
        """Built from scratch: nothing of the suite's own environment leaks into the target."""
        from fake_mcp import isolation_env

        out = {"PATH": MINIMAL_PATH, "LANG": "C.UTF-8", "GOGC": TARGET_GOGC}
        out.update(isolation_env(home))
        proxy = self._egress.proxy_url(_tag(home))
        out.update({name: proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")})
        # No backend: every product points at a loopback port nobody listens on.
        out.update(backend.env() if backend is not None else self._dead_endpoints())
        out.update(self.extra_env)
        out.update(env or {})
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
            check: bool = True, prefix: Sequence[str] | None = None,
            files: Mapping[str, str] | None = None) -> Invocation:
        """Run once and return the :class:`Invocation` (``check``: raise TargetFailure on hang/crash/flood;
        ``prefix``: run another build of the implementation, e.g. a tampered tree copy, on this runner's pool;
        ``files``: {relative name: text} written into the invocation's working directory first)."""
        __tracebackhide__ = True
        from pytest_dws.plan import kind_of

        argv = self.command(args, token=token, globals_=globals_, prefix=prefix)
        kind = kind_of(args)

        def make() -> Invocation:
            return self.spawn(argv, backend=backend, timeout=timeout, stdin=stdin, env=env, files=files,
                              kind=kind)

        world = "dead endpoints" if backend is None else None  # a passed-in server's state is the caller's
        inv = self._once(self._answer_key(argv, kind, world, timeout, stdin, env, files), kind, make)
        return inv.check() if check else inv

    def _answer_key(self, argv: Sequence[str], kind: str, world: Any, timeout: float | None, stdin: bytes,
                    env: Mapping[str, str] | None, files: Mapping[str, str] | None) -> Any:
        """The identity of a call whose answer an identical earlier call of the session gives, or None.

        Why: several gates read the same leaf `--help` or `schema <tool>`, and on the real binary each costs
        seconds (WIRE.md §7). Only those kinds (read-only views of the build) are shared, and only when
        everything the target sees is the same: its argv, the environment override, a world built fresh from
        the same scenario (or every endpoint dead), no stdin and no input files. Runs that execute or dry-run
        a command are never shared: a gate that makes a call twice means to observe it twice."""
        from pytest_dws.plan import EXPENSIVE

        if kind not in EXPENSIVE or world is None or stdin or files:
            return None
        return (tuple(argv), world, tuple(sorted((env or {}).items())), timeout)

    def _once(self, key: Any, kind: str, make: Callable[[], Invocation]) -> Invocation:
        """``make()`` once per key per session (None: always); concurrent askers wait for the first answer."""
        if key is None:
            return make()
        inv, made = _single_flight(self._lock, self._answers, key, make)
        ledger = getattr(self.ctx, "ledger", None)
        if not made and ledger is not None:
            ledger.reuse(kind)
        return inv

    def spawn(self, argv: list[str], *, backend: Any = None, timeout: float | None = None, stdin: bytes = b"",
              env: dict[str, str] | None = None, files: Mapping[str, str] | None = None,
              kind: str = "other") -> Invocation:
        """Run ``argv`` exactly as given (no global flags) with the scrubbed environment. The working directory
        is the invocation's private HOME: ``files`` land there, because real commands accept input files only
        as relative paths inside the working directory (WIRE.md §8: `--groups-file`, `--contents-file`).
        ``kind``: its cost kind in the session's ledger (:func:`pytest_dws.plan.kind_of`)."""
        home = self._homes.take()
        for name, text in (files or {}).items():
            (home / name).write_text(text, encoding="utf-8")
        try:
            before = len(backend.transcript) if backend is not None else 0
            inv = run_process(argv, env=self.environment(home, backend, env), cwd=home,
                              timeout=timeout or self.timeout, stdin=stdin, cap=self.output_cap,
                              limit=getattr(self._local, "limit", None), live=self.live)
            if backend is not None:
                inv.transcript = backend.transcript.records[before:]
            inv.egress = sorted({a.target for a in self._egress.take(_tag(home))})
        finally:
            self._homes.give(home)
        with self._lock:
            self.count += 1
            self.total_wall += inv.duration
            self.total_cpu += inv.cpu
        ledger = getattr(self.ctx, "ledger", None)
        if ledger is not None:
            ledger.record(kind, argv, inv.duration, inv.cpu)
        return inv

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
                 progress: Callable[[int, int, Job], None] | None = None) -> list[Invocation]:
        """Run jobs (argv + scenario + options) on a bounded pool; never raises for target misbehaviour.

        At most ``workers`` target processes run at a time, counting those of batches that run at the same time
        from other threads (:meth:`limit`). More threads than that serve the batch, so the suite's own per-run
        work (fresh world, HOME, environment; filing the result) is done while targets run, and a finishing
        target hands its place straight to a prepared run (:class:`Places`). ``progress(done, total, job)``
        is called after each finished job."""
        jobs = list(jobs)
        if not jobs:
            return []
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
            prep = threading.Thread(target=self._prepare, args=(jobs,), name="dws-prepare", daemon=True)
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
        from pytest_dws.plan import kind_of

        kind = kind_of(job.args)
        opts = job.options
        argv = self.command(job.args, token=opts.get("token", "t"), globals_=opts.get("globals_", True),
                            prefix=opts.get("prefix"))
        key = self._answer_key(argv, kind, self._world_key(job.scenario), opts.get("timeout"),
                               opts.get("stdin", b""), opts.get("env"), opts.get("files"))
        return self._once(key, kind, lambda: self._run_in_world(job))

    def _world_key(self, scenario: Any) -> Any:
        """What the fresh world of a scenario holds (its world and overrides; the name is only a label), for
        sharing answers: a file by its path and stat, a dict or Scenario by its canonical JSON (computed once
        per Scenario object: the key keeps the object alive, so its id is not reused). None: not comparable."""
        if isinstance(scenario, (str, Path)):
            try:
                st = os.stat(scenario)
            except OSError:
                return None
            return (scenario_key(scenario), st.st_size, st.st_mtime_ns)
        if isinstance(scenario, dict):
            return _content_key(scenario.get("world", {}), scenario.get("overrides", []))
        if not hasattr(scenario, "world") or not hasattr(scenario, "overrides"):
            return None
        with self._lock:
            found = self._world_keys.get(id(scenario))
            if found is None or found[0] is not scenario:
                found = self._world_keys[id(scenario)] = (scenario, _content_key(scenario.world,
                                                                                 list(scenario.overrides)))
        return found[1]

    def _run_in_world(self, job: Job) -> Invocation:
        slot = self._acquire()
        try:
            key = scenario_key(job.scenario)
            if slot.key == key:
                slot.server.reset()
            else:
                slot.server.load(self._scenario(job.scenario, key))
                slot.key = key
            return self.run(*job.args, backend=slot.server, check=False, **job.options)
        finally:
            self._slots.put(slot)

    def _scenario(self, scenario: Any, key: str) -> Any:
        """The validated Scenario of ``scenario``, built once per session: validating a world (jsonschema) costs
        tens of ms, and a batch switches its pooled servers between the same few scenarios again and again.
        Exact: ``load`` of a Scenario object builds the same fresh world as ``load`` of its dict or file (the
        key is the dict's canonical JSON; a file is re-read when its size or mtime changes). Threads that need
        a scenario another thread is validating wait for that result instead of validating it again."""
        from fake_mcp import Scenario

        if isinstance(scenario, Scenario):
            return scenario
        ident: Any = key
        if isinstance(scenario, (str, Path)):
            try:
                st = os.stat(scenario)
                ident = (key, st.st_size, st.st_mtime_ns)
            except OSError:
                return scenario  # let load() report the unreadable file
        try:
            return _single_flight(self._lock, self._scenarios, ident, lambda: Scenario.coerce(scenario))[0]
        except Exception:  # it does not validate: fail here with an exception of this thread's own, as load() would
            return Scenario.coerce(scenario)

    @contextlib.contextmanager
    def backends(self, scenario: Any, count: int) -> Iterator[list[Any]]:
        """``count`` pooled fake servers, each with a fresh world of ``scenario``, lent to the caller: for runs
        that must know their server before they start (files that embed its URL), then run side by side with
        ``run_jobs([Job(args, None, {"backend": server, ...}), ...])``. Every run gets its own server, so its
        transcript holds its own requests only."""
        slots = [self._acquire() for _ in range(count)]
        try:
            for slot in slots:
                key = scenario_key(scenario)
                slot.server.load(self._scenario(scenario, key))
                slot.key = key
            yield [slot.server for slot in slots]
        finally:
            for slot in slots:
                slot.server.transcript.clear()
                self._slots.put(slot)

    def _prepare(self, jobs: Sequence[Job]) -> None:
        """Validate the batch's scenarios (first use first) while its first targets already run."""
        seen: set[str] = set()
        for job in jobs:
            if job.scenario is None:
                continue
            key = scenario_key(job.scenario)
            if key in seen:
                continue
            seen.add(key)
            with contextlib.suppress(Exception):  # a bad scenario fails the job that uses it, not this helper
                self._scenario(job.scenario, key)

    def _acquire(self) -> _Slot:
        try:
            return self._slots.get_nowait()
        except queue.Empty:
            pass
        from fake_mcp import FakeMCPServer

        with self._lock:
            if self._closed:
                raise RuntimeError("runner closed")
            slot = _Slot(FakeMCPServer())
            self._all_slots.append(slot)
        slot.server.start()
        return slot

    def close(self) -> None:
        """Stop the pooled fake servers (called by the context at the end of the session)."""
        with self._lock:
            self._closed = True
            slots = list(self._all_slots)
            self._all_slots.clear()
        stoppers = [threading.Thread(target=_stop_quietly, args=(slot.server,), name="dws-stop")
                    for slot in slots]
        for t in stoppers:  # each stop waits for its serve loop's poll: stop them together
            t.start()
        for t in stoppers:
            t.join()
        self._homes.close()
        self._egress.close()
        self.live.watchdog.close()


def _tag(home: Path) -> str:
    """The egress tag of an invocation: its private HOME's name (unique per invocation), as a URL user name."""
    return "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in home.name)


def resolve_prefix(argv: Sequence[str]) -> list[str]:
    """The argv prefix that launches an implementation; a bare program name is looked up on the suite's PATH
    now, because the scrubbed PATH of the invocation would not find it."""
    prefix = [str(a) for a in argv]
    if prefix and os.sep not in prefix[0]:
        prefix[0] = shutil.which(prefix[0]) or prefix[0]
    return prefix


def _stop_quietly(server: Any) -> None:
    with contextlib.suppress(Exception):
        server.stop()


class HomePool:
    """Private HOME directories: every invocation gets a clean one, and no two running invocations share one.

    Creating and deleting a directory tree per invocation costs milliseconds on a journalling file system
    (more than the rest of the suite's per-invocation work). So a home the target left EXACTLY as it was made
    (same entries ``config/`` and ``keychain/``, both empty, same modes, nothing else) is renamed to a fresh
    name and handed to a later invocation: a fresh-made home and a recycled one cannot be told apart by the
    target (the path is new every time, the old path is gone when the invocation returns). A home the target
    wrote to is deleted, as before. Everything lives in one private directory removed by :meth:`close`.
    """

    def __init__(self, tmp: Path) -> None:
        self._tmp = tmp
        self._root: Path | None = None
        self._free: list[Path] = []
        self._lock = threading.Lock()
        self._names = itertools.count()
        self._modes: tuple[int, int] | None = None  # (home mode, subdir mode) of a fresh home
        self._finalizer: Any = None

    def _dir(self) -> Path:
        with self._lock:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix="homes-", dir=self._tmp))
                self._finalizer = weakref.finalize(self, shutil.rmtree, self._root, True)
            return self._root

    def _fresh_name(self) -> Path:
        return self._dir() / f"inv-{next(self._names)}"

    def take(self) -> Path:
        """A clean, empty home for one invocation (config/ and keychain/ made, as fake_mcp.isolation_env does)."""
        while True:
            with self._lock:
                home = self._free.pop() if self._free else None
            if home is None:
                break
            if self._pristine(home):
                return home
            shutil.rmtree(home, ignore_errors=True)
        home = self._fresh_name()
        home.mkdir(mode=0o700)
        for sub in _HOME_SUBDIRS:
            (home / sub).mkdir()
        if self._modes is None:
            self._modes = (home.stat().st_mode, (home / _HOME_SUBDIRS[0]).stat().st_mode)
        return home

    def give(self, home: Path) -> None:
        """Return a home after its invocation: recycled under a new name when untouched, deleted otherwise.
        Either way ``home`` no longer exists when this returns."""
        if self._pristine(home):
            fresh = self._fresh_name()
            try:
                os.rename(home, fresh)
            except OSError:
                shutil.rmtree(home, ignore_errors=True)
                return
            with self._lock:
                self._free.append(fresh)
            return
        shutil.rmtree(home, ignore_errors=True)

    def _pristine(self, home: Path) -> bool:
        """The home holds exactly the empty ``config``/``keychain`` dirs it was made with, modes unchanged."""
        if self._modes is None:
            return False
        home_mode, sub_mode = self._modes
        try:
            if os.lstat(home).st_mode != home_mode:
                return False
            with os.scandir(home) as it:
                entries = {e.name: e for e in it}
            if sorted(entries) != list(_HOME_SUBDIRS):
                return False
            for name, entry in entries.items():
                st = entry.stat(follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode) or st.st_mode != sub_mode:
                    return False
                with os.scandir(home / name) as it:
                    if next(it, None) is not None:
                        return False
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Delete every home (and the pool directory)."""
        with self._lock:
            self._free.clear()
            finalizer, self._root = self._finalizer, None
        if finalizer is not None:
            finalizer()


_HOME_SUBDIRS = ("config", "keychain")


@dataclass(frozen=True)
class Job:
    """One queued invocation: arguments after the global flags, a scenario (or None) and run() options."""

    args: tuple[str, ...]
    scenario: Any = None
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass
class _Slot:
    server: Any
    key: Any = None


def _single_flight(lock: threading.Lock, table: dict[Any, Any], key: Any, make: Callable[[], Any]) -> tuple[Any, bool]:
    """(``make()``'s value for ``key``, whether this call made it): made once per key of ``table``, concurrent
    callers wait for it; a failure is not kept (the next caller tries again) and reaches the waiters."""
    with lock:
        pending = table.get(key)
        mine = pending is None
        if mine:
            pending = table[key] = Future()
    if not mine:
        return pending.result(), False
    try:
        value = make()
    except BaseException as exc:
        with lock:
            table.pop(key, None)
        pending.set_exception(exc)
        raise
    pending.set_result(value)
    return value, True


def _content_key(world: Any, overrides: Any) -> str:
    return json.dumps([world, overrides], sort_keys=True, ensure_ascii=False, default=str)


def scenario_key(scenario: Any) -> str:
    """A stable identity for a scenario (a path, or canonical JSON of a dict)."""
    if isinstance(scenario, (str, Path)):
        return f"path:{scenario}"
    if isinstance(scenario, dict):
        return json.dumps(scenario, sort_keys=True, ensure_ascii=False, default=str)
    return f"object:{id(scenario)}"  # a Scenario object: the caller keeps it alive (memoised) while it runs


# -- process handling -----------------------------------------------------------------------------------
class LiveGroups:
    """The process groups of the targets running now. :meth:`interrupt` (Ctrl-C, SIGTERM) kills them all at
    once and refuses every later spawn, so an interrupted session ends promptly and leaves no process behind:
    each target runs in its own session, so a terminal's SIGINT never reaches it by itself. A
    :class:`~pytest_dws.watchdog.Watchdog` holds the same list, for a suite that is killed outright."""

    def __init__(self) -> None:
        from pytest_dws.watchdog import Watchdog

        self._lock = threading.Lock()
        self._pgids: set[int] = set()
        self.cancelled = threading.Event()
        self.watchdog = Watchdog()

    def add(self, pgid: int) -> None:
        self.watchdog.started(pgid)
        with self._lock:
            self._pgids.add(pgid)
            late = self.cancelled.is_set()
        if late:  # spawned while the interrupt was being delivered
            _killpg(pgid)

    def discard(self, pgid: int) -> None:
        with self._lock:
            self._pgids.discard(pgid)
        self.watchdog.ended(pgid)

    def interrupt(self) -> None:
        self.cancelled.set()
        with self._lock:
            groups = list(self._pgids)
        for pgid in groups:
            _killpg(pgid)


def run_process(argv: Sequence[str], *, env: dict[str, str], cwd: Path, timeout: float, stdin: bytes = b"",
                cap: int = DEFAULT_OUTPUT_CAP, limit: Places | None = None, live: LiveGroups | None = None
                ) -> Invocation:
    """Spawn ``argv`` in its own process group, capture output (capped), kill the group at the deadline.

    ``limit`` (:class:`Places`) bounds how many target processes run at once: a place is held from just before
    the spawn until the group is gone, so the suite's own work around a run (preparing the next one, filing the
    last one) overlaps a running target without ever running more targets at a time than the pool allows."""

    def start() -> Invocation:
        return _run_process(argv, env=env, cwd=cwd, timeout=timeout, stdin=stdin, cap=cap, live=live)

    return start() if limit is None else limit.run(start)


class Places:
    """At most ``n`` target processes at a time. A run that finds no free place waits in a queue, READY to
    start; the thread whose run ends takes the next queued run and starts it at once (the place passes hand
    to hand, with no thread wake-up between two targets), and frees the place only when none is waiting. The
    queued run's own thread gets the result when it is done."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._free = n
        self._lock = threading.Lock()
        self._ready: collections.deque[tuple[Callable[[], Invocation], Future[Invocation]]] = collections.deque()

    def run(self, start: Callable[[], Invocation]) -> Invocation:
        """``start()`` (spawn, pump, reap one target) in a place of the pool; its result or its exception."""
        with self._lock:
            mine = self._free > 0
            if mine:
                self._free -= 1
            else:
                waiting: Future[Invocation] = Future()
                self._ready.append((start, waiting))
        if not mine:
            return waiting.result()
        try:
            return start()
        finally:
            self._pass_on()

    def _pass_on(self) -> None:
        """Run the queued starts in the place this thread holds, then free it."""
        while True:
            with self._lock:
                if not self._ready:
                    self._free += 1
                    return
                start, waiting = self._ready.popleft()
            try:
                waiting.set_result(start())
            except Exception as exc:  # the queued run's own thread raises it
                waiting.set_exception(exc)
            except BaseException as exc:  # interrupted: start nothing more, fail what waits, free the place
                waiting.set_exception(exc)
                with self._lock:
                    left, self._ready = list(self._ready), collections.deque()
                    self._free += 1
                for _, other in left:
                    other.set_exception(exc)
                raise


def _run_process(argv: Sequence[str], *, env: dict[str, str], cwd: Path, timeout: float, stdin: bytes,
                 cap: int, live: LiveGroups | None = None) -> Invocation:
    if live is not None and live.cancelled.is_set():
        raise TargetFailure("the session was interrupted: no implementation is started any more")
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True, close_fds=True,
        )
    except OSError as exc:
        raise TargetFailure(f"cannot start the implementation {_shell(argv)}: {exc}") from None
    if live is not None:
        live.add(proc.pid)
    try:
        return _supervise(proc, argv, start, timeout, stdin, cap)
    finally:
        if live is not None:
            live.discard(proc.pid)


def _supervise(proc: subprocess.Popen[bytes], argv: Sequence[str], start: float, timeout: float, stdin: bytes,
               cap: int) -> Invocation:
    """Feed stdin, pump the output until exit, deadline or flood; kill and reap the whole group."""
    if stdin:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(stdin)
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    out, err = bytearray(), bytearray()
    timed_out, overflow, status, rusage = _pump(proc, out, err, start + timeout, cap)
    if status is None:  # killed (deadline or flood): reap the leader
        _killpg(proc.pid)
        _, status, rusage = os.wait4(proc.pid, 0)
    _killpg(proc.pid, settle=_SETTLE)  # leftovers of the group never outlive the invocation
    for stream in (proc.stdout, proc.stderr):
        with contextlib.suppress(Exception):
            stream.close()  # type: ignore[union-attr]
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    crashed = code < 0 and not timed_out and not overflow
    return Invocation(
        argv=list(argv), exit_code=code, stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"), timed_out=timed_out, crashed=crashed,
        signal=-code if code < 0 else None, overflow=overflow, duration=time.perf_counter() - start,
        cpu=(rusage.ru_utime + rusage.ru_stime) if rusage is not None else 0.0,
    )


def _pump(proc: subprocess.Popen[bytes], out: bytearray, err: bytearray, deadline: float, cap: int
          ) -> tuple[bool, bool, int | None, Any]:
    """Read both pipes until EOF and exit, or the deadline, or the cap. Returns (timed_out, overflow,
    wait status or None when the leader still runs, rusage)."""
    sel = selectors.DefaultSelector()
    bufs = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}  # type: ignore[union-attr]
    for fd in bufs:
        sel.register(fd, selectors.EVENT_READ)
    pidfd = _pidfd(proc.pid)
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ)
    status = rusage = None
    timed_out = overflow = False
    total = 0
    try:
        while True:
            open_pipes = sum(1 for fd in bufs if fd in sel.get_map())
            if status is None and (pidfd is None or open_pipes == 0):
                status, rusage = _try_reap(proc.pid)
            if status is not None and open_pipes == 0:
                break
            remaining = deadline - time.perf_counter()
            if remaining > 0:
                events = sel.select(remaining if pidfd is not None or open_pipes else min(remaining, 0.002))
            else:
                # Past the deadline, first drain what is ready without waiting: a suite that was itself
                # suspended (SIGSTOP, a starved CI runner) must not call a target that finished meanwhile hung.
                events = sel.select(0)
                if not events:
                    if status is None:
                        status, rusage = _try_reap(proc.pid)
                    timed_out = status is None or any(fd in sel.get_map() for fd in bufs)
                    break
            for key, _ in events:
                fd = key.fd
                if fd == pidfd:
                    sel.unregister(fd)
                    status, rusage = _try_reap(proc.pid)
                    if status is not None:
                        _killpg(proc.pid)  # background children holding the pipes must not stall us
                    continue
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    sel.unregister(fd)
                    continue
                total += len(chunk)
                if total > cap:
                    overflow = True
                    break
                bufs[fd].extend(chunk)
            if overflow:
                break
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
    return timed_out, overflow, status, rusage


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def _try_reap(pid: int) -> tuple[int | None, Any]:
    try:
        got, status, rusage = os.wait4(pid, os.WNOHANG)
    except ChildProcessError:
        return 0, None
    return (status, rusage) if got else (None, None)


_SETTLE = 2.0  # seconds to wait for SIGKILLed group members to actually die


def _killpg(pgid: int, *, settle: float = 0.0) -> None:
    """SIGKILL the whole group. With ``settle``, also wait (bounded) until no member is still running:
    SIGKILL is delivered asynchronously, and "no process left behind" must hold when the invocation returns,
    not a moment later."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + settle
    pause = 0.0005
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        if not _running_members(pgid):
            return  # only zombies left, waiting for their (re)parent to reap them
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _running_members(pgid: int) -> bool:
    """Whether a non-zombie process of group ``pgid`` exists (``/proc`` scan; without ``/proc``, assume so)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False
