"""Launching the implementation under test: argv, environment, process hygiene, output capture.

Every invocation runs in a scrubbed environment (nothing inherited: a minimal PATH, ``LANG``, a fresh temp
HOME with config/keychain dirs, a dead proxy, endpoint variables pointing at the fake MCP server or at a dead
loopback port, plus ``--dws-env`` values), in its own process group and temp working directory, under a
wall-clock timeout. A target that hangs is killed with its whole process group; one that crashes or floods
its output is reported as :class:`TargetFailure` (an ``AssertionError``: a failure of the gate that ran it),
never as a crash of the suite, and never leaves a process behind.

Example::

    runner = ctx.cli()
    inv = runner.run("chat", "+conversation-list", "--page-all", backend=srv)
    assert inv.exit_code == 0, inv.describe()
    rows = inv.stdout_json["conversations"]
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pytest_dws.compare import Diffable
from pytest_dws.jsondoc import first_json

#: Output cap per stream pair (stdout + stderr). `dws schema --all` is 27 MB at e81 (WIRE.md §7).
DEFAULT_OUTPUT_CAP = 64 * 1024 * 1024
MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"
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
        prefix = [str(a) for a in argv]
        if prefix and os.sep not in prefix[0]:
            prefix[0] = shutil.which(prefix[0]) or prefix[0]  # the scrubbed PATH would not find it
        self.prefix = prefix
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
        on_close = getattr(ctx, "on_close", None)  # the Context stops what the session started
        if callable(on_close):
            on_close(self.close)

    # -- argv and environment ---------------------------------------------------------------------
    def global_args(self, token: str | None) -> list[str]:
        """The global flags placed before the command (from the contract profile; e81: --token t --format json)."""
        from pytest_dws.profile import active_profile

        return active_profile(self.ctx).global_args(token)

    def command(self, args: Sequence[str], *, token: str | None = "t", globals_: bool = True) -> list[str]:
        """The full argv of one invocation."""
        pre = self.global_args(token) if globals_ else []
        return [*self.prefix, *pre, *map(str, args)]

    def environment(self, home: Path, backend: Any = None, env: dict[str, str] | None = None) -> dict[str, str]:
        """Built from scratch: nothing of the suite's own environment leaks into the target."""
        from fake_mcp import endpoint_env, isolation_env

        out = {"PATH": MINIMAL_PATH, "LANG": "C.UTF-8"}
        out.update(isolation_env(home))
        # No backend: every product points at a loopback port nobody listens on.
        out.update(backend.env() if backend is not None else endpoint_env(DEAD_BASE_URL))
        out.update(self.extra_env)
        out.update(env or {})
        return out

    # -- running -------------------------------------------------------------------------------------
    def run(self, *args: str, backend: Any = None, token: str | None = "t", globals_: bool = True,
            timeout: float | None = None, stdin: bytes = b"", env: dict[str, str] | None = None,
            check: bool = True) -> Invocation:
        """Run once and return the :class:`Invocation` (``check``: raise TargetFailure on hang/crash/flood)."""
        __tracebackhide__ = True
        argv = self.command(args, token=token, globals_=globals_)
        inv = self.spawn(argv, backend=backend, timeout=timeout, stdin=stdin, env=env)
        return inv.check() if check else inv

    def spawn(self, argv: list[str], *, backend: Any = None, timeout: float | None = None, stdin: bytes = b"",
              env: dict[str, str] | None = None) -> Invocation:
        """Run ``argv`` exactly as given (no global flags) with the scrubbed environment."""
        home = Path(tempfile.mkdtemp(prefix="inv-", dir=self._tmp))
        try:
            before = len(backend.transcript) if backend is not None else 0
            inv = run_process(argv, env=self.environment(home, backend, env), cwd=home,
                              timeout=timeout or self.timeout, stdin=stdin, cap=self.output_cap)
            if backend is not None:
                inv.transcript = backend.transcript.records[before:]
        finally:
            shutil.rmtree(home, ignore_errors=True)
        with self._lock:
            self.count += 1
            self.total_wall += inv.duration
            self.total_cpu += inv.cpu
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

    def run_jobs(self, jobs: Sequence[Job], *, workers: int | None = None) -> list[Invocation]:
        """Run jobs (argv + scenario + options) on a bounded pool; never raises for target misbehaviour."""
        n = max(1, min(workers or self.workers, len(jobs)))
        if n == 1:
            return [self._run_job(j) for j in jobs]
        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="dws-run") as pool:
            return list(pool.map(self._run_job, jobs))

    def _run_job(self, job: Job) -> Invocation:
        if job.scenario is None:
            return self.run(*job.args, check=False, **job.options)
        slot = self._acquire()
        try:
            key = scenario_key(job.scenario)
            if slot.key == key:
                slot.server.reset()
            else:
                slot.server.load(job.scenario)
                slot.key = key
            return self.run(*job.args, backend=slot.server, check=False, **job.options)
        finally:
            self._slots.put(slot)

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
        for slot in slots:
            with contextlib.suppress(Exception):
                slot.server.stop()


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


def scenario_key(scenario: Any) -> str:
    """A stable identity for a scenario (a path, or canonical JSON of a dict)."""
    if isinstance(scenario, (str, Path)):
        return f"path:{scenario}"
    if isinstance(scenario, dict):
        return json.dumps(scenario, sort_keys=True, ensure_ascii=False, default=str)
    return f"object:{id(scenario)}"  # a Scenario object: the caller keeps it alive (memoised) while it runs


# -- process handling -----------------------------------------------------------------------------------
def run_process(argv: Sequence[str], *, env: dict[str, str], cwd: Path, timeout: float, stdin: bytes = b"",
                cap: int = DEFAULT_OUTPUT_CAP) -> Invocation:
    """Spawn ``argv`` in its own process group, capture output (capped), kill the group at the deadline."""
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True, close_fds=True,
        )
    except OSError as exc:
        raise TargetFailure(f"cannot start the implementation {_shell(argv)}: {exc}") from None
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
            if remaining <= 0:
                timed_out = status is None or open_pipes > 0
                break
            wait = remaining if pidfd is not None or open_pipes else min(remaining, 0.002)
            events = sel.select(wait)
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
