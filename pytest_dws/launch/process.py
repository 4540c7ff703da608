"""One target process under supervision: its own process group, a wall-clock deadline, capped output.

A target that hangs is killed with its whole process group; one that floods its output is cut at the cap. Every
running group is known (:class:`LiveGroups`), so Ctrl-C, SIGTERM or the suite's own death kill them all."""

from __future__ import annotations

import contextlib
import itertools
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_dws.launch.contain.jail import Jail
from pytest_dws.launch.contain.spawner import Served, Spawner, SpawnRefused
from pytest_dws.launch.invocation import Invocation, TargetFailure, _shell, printable
from pytest_dws.launch.places import Places

#: Output cap per stream pair (stdout + stderr). `dws schema --all` is 27 MB at e81 (docs/wire.md §7).
DEFAULT_OUTPUT_CAP = 64 * 1024 * 1024

_CHUNK = 1 << 16

#: What is kept of a flooded capture: its head, for the failure message. A capture cut at the cap is not what any
#: gate reads (a cut JSON document does not parse), and keeping 64 MB of it per invocation for the whole run is what
#: took a run against a flooding target to 7 GB (issue 29).
KEPT_OF_A_FLOOD = 64 * 1024

# -- process handling -----------------------------------------------------------------------------------
class LiveGroups:
    """The process groups of the targets running now. :meth:`interrupt` (Ctrl-C, SIGTERM) kills them all at
    once and refuses every later spawn, so an interrupted session ends promptly and leaves no process behind:
    each target runs in its own session, so a terminal's SIGINT never reaches it by itself. A
    :class:`~pytest_dws.launch.contain.watchdog.Watchdog` holds the same list, for a suite that is killed outright."""

    def __init__(self) -> None:
        from pytest_dws.launch.contain.watchdog import Watchdog

        self._lock = threading.Lock()
        self._pgids: set[int] = set()
        self.cancelled = threading.Event()
        self.watchdog = Watchdog()
        #: Every invocation's environment carries ``TAG_VAR=<tag>:<n>``: whatever it starts (also in a session
        #: of its own, by setsid or a double fork) inherits it, and is found and killed by it (:func:`kill_tagged`).
        self.tag = f"{os.getpid()}-{os.urandom(4).hex()}"
        self._count = itertools.count(1)
        self._guarded = False
        self._started: dict[int, tuple[float, str]] = {}  # pgid -> (monotonic start, argv shown)
        self.finished = 0
        self._beating: threading.Event | None = None
        #: Starts the jailed targets (launch.contain.spawner): this process, an xdist worker of hundreds of MB,
        #: never forks for them.
        self.spawner = Spawner()

    def guard(self, tree: Path | None) -> None:
        """Tell the watchdog (once) what to clean if the suite is killed outright: this session's tagged
        processes and its temporary tree."""
        if not self._guarded:
            self._guarded = True
            self.watchdog.guard(self.tag + ":", tree)

    def next_tag(self) -> str:
        return f"{self.tag}:{next(self._count)}"

    def add(self, pgid: int, argv: Sequence[str] = ()) -> None:
        self.guard(None)
        self.watchdog.started(pgid)
        with self._lock:
            self._pgids.add(pgid)
            self._started[pgid] = (time.monotonic(), _shell(argv[-4:]) if argv else "")
            late = self.cancelled.is_set()
        if late:  # spawned while the interrupt was being delivered
            _killpg(pgid)

    def discard(self, pgid: int) -> None:
        with self._lock:
            self._pgids.discard(pgid)
            if self._started.pop(pgid, None) is not None:
                self.finished += 1
        self.watchdog.ended(pgid)

    # -- the heartbeat: while targets run, a line at least every `every` seconds (issue 28: never silence) -----
    def heartbeat(self, say: Any, every: float = 10.0) -> None:
        """Start (once) a daemon thread that calls ``say(line)`` every ``every`` seconds while targets run: how
        many run and finished, and the oldest running one with its age. Stopped by :meth:`close`."""
        if self._beating is not None:
            return
        self._beating = stop = threading.Event()

        def beat() -> None:
            while not stop.wait(every):
                line = self.status_line()
                if line:
                    say(line)

        threading.Thread(target=beat, name="dws-heartbeat", daemon=True).start()

    def status_line(self) -> str:
        """``dws-contract: 2 running, 340 finished; the oldest for 12 s: ... chat --help`` (empty when idle)."""
        with self._lock:
            running = sorted(self._started.values())
            finished = self.finished
        if not running:
            return ""
        since, shown = running[0]
        return (f"dws-contract: {len(running)} running, {finished} finished; the oldest for "
                f"{time.monotonic() - since:.0f} s: ...{printable(shown)}")

    def interrupt(self) -> None:
        self.cancelled.set()
        with self._lock:
            groups = list(self._pgids)
        for pgid in groups:
            _killpg(pgid)
        kill_tagged(self.tag + ":", prefix=True)

    def close(self) -> None:
        """The session ends: nothing any of its invocations started survives it."""
        if self._beating is not None:
            self._beating.set()
        kill_tagged(self.tag + ":", prefix=True)
        self.spawner.close()


def run_process(argv: Sequence[str], *, env: dict[str, str], cwd: Path, timeout: float, stdin: bytes = b"",
                cap: int = DEFAULT_OUTPUT_CAP, limit: Places | None = None, live: LiveGroups | None = None,
                jail: Jail | None = None) -> Invocation:
    """Spawn ``argv`` in its own process group, capture output (capped), kill the group at the deadline.

    ``limit`` (:class:`Places`) bounds how many target processes run at once: a place is held from just before
    the spawn until the group is gone, so the suite's own work around a run (preparing the next one, filing the
    last one) overlaps a running target without ever running more targets at a time than the pool allows.
    ``jail``: its view of the files and its limits, entered in the child before exec
    (:mod:`pytest_dws.launch.contain.jail`)."""

    def start() -> Invocation:
        return _run_process(argv, env=env, cwd=cwd, timeout=timeout, stdin=stdin, cap=cap, live=live, jail=jail)

    return start() if limit is None else limit.run(start)


def _run_process(argv: Sequence[str], *, env: dict[str, str], cwd: Path, timeout: float, stdin: bytes,
                 cap: int, live: LiveGroups | None = None, jail: Jail | None = None) -> Invocation:
    if live is not None and live.cancelled.is_set():
        raise TargetFailure("the session was interrupted: no implementation is started any more")
    start = time.perf_counter()
    tag = live.next_tag() if live is not None else f"{os.getpid()}-{os.urandom(4).hex()}:0"
    proc: Any = None
    try:
        if jail is not None and live is not None:  # entered by the spawner: this (big) process never forks
            proc = live.spawner.spawn(argv, env={**env, TAG_VAR: tag}, cwd=cwd, stdin=bool(stdin), jail=jail)
        if proc is None:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env={**env, TAG_VAR: tag}, cwd=cwd, start_new_session=True, close_fds=True,
                preexec_fn=jail.preexec if jail is not None else None,
            )
    except (OSError, subprocess.SubprocessError, SpawnRefused) as exc:  # (its jail could not be entered)
        if jail is not None:
            jail.release()
        raise TargetFailure(f"cannot start the implementation {_shell(argv)}: {exc}") from None
    if jail is not None:
        jail.watch(proc.pid)
    if live is not None:
        live.add(proc.pid, argv)
    inv = None
    try:
        inv = _supervise(proc, argv, start, timeout, stdin, cap, tag)
        inv.warm = bool(getattr(proc, "warm", False))
        return inv
    finally:
        kill_tagged(tag, since=proc.pid)  # what escaped its group (setsid, double fork) never outlives the invocation
        if live is not None:
            live.discard(proc.pid)
        if jail is not None:
            if inv is not None:
                inv.limited = jail.hit(signal_number=inv.signal, cpu=inv.cpu, timed_out=inv.timed_out)
            jail.release()


def _supervise(proc: subprocess.Popen[bytes] | Served, argv: Sequence[str], start: float, timeout: float, stdin: bytes,
               cap: int, tag: str = "") -> Invocation:
    """Feed stdin, pump the output until exit, deadline or flood; kill and reap the whole group."""
    if stdin:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(stdin)
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    out, err = bytearray(), bytearray()
    timed_out, overflow, status, rusage = pump(proc, out, err, start + timeout, cap, tag)
    if status is None:  # killed (deadline or flood): reap the leader
        _killpg(proc.pid)
        if isinstance(proc, Served):
            status, rusage = proc.wait()
        else:
            _, status, rusage = os.wait4(proc.pid, 0)
    _killpg(proc.pid, settle=_SETTLE)  # leftovers of the group never outlive the invocation
    if isinstance(proc, Served):
        proc.close()
    for stream in (proc.stdout, proc.stderr):
        with contextlib.suppress(Exception):
            stream.close()  # type: ignore[union-attr]
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    crashed = code < 0 and not timed_out and not overflow
    captured = len(out) + len(err)
    if overflow:
        del out[KEPT_OF_A_FLOOD:], err[KEPT_OF_A_FLOOD:]
    return Invocation(
        argv=list(argv), exit_code=code, stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"), timed_out=timed_out, crashed=crashed, captured=captured,
        signal=-code if code < 0 else None, overflow=overflow, duration=time.perf_counter() - start,
        cpu=(rusage.ru_utime + rusage.ru_stime) if rusage is not None else 0.0,
    )


def pump(proc: subprocess.Popen[bytes] | Served, out: bytearray, err: bytearray, deadline: float, cap: int,
         tag: str = "") -> tuple[bool, bool, int | None, Any]:
    """Read both pipes until EOF and exit, or the deadline, or the cap. Returns (timed_out, overflow,
    wait status or None when the leader still runs, rusage)."""
    sel = selectors.DefaultSelector()
    bufs = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}  # type: ignore[union-attr]
    for fd in bufs:
        sel.register(fd, selectors.EVENT_READ)
    served = isinstance(proc, Served)  # its end comes on the spawner's reply socket, not a pidfd of ours
    pidfd = proc.fd if isinstance(proc, Served) else _pidfd(proc.pid)
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ)
    status = rusage = None
    timed_out = overflow = False
    total = 0
    try:
        while True:
            open_pipes = sum(1 for fd in bufs if fd in sel.get_map())
            if status is None and (pidfd is None or open_pipes == 0):
                status, rusage = _reap(proc)
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
                        status, rusage = _reap(proc)
                    timed_out = status is None or any(fd in sel.get_map() for fd in bufs)
                    break
            for key, _ in events:
                fd = key.fd
                if fd == pidfd:
                    sel.unregister(fd)
                    status, rusage = _reap(proc)
                    if status is not None:
                        _killpg(proc.pid)  # background children holding the pipes must not stall us,
                        if tag:            # nor those that left the group (a daemon keeping stdout open)
                            kill_tagged(tag, since=proc.pid)
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
        if pidfd is not None and not served:
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


def _reap(proc: subprocess.Popen[bytes] | Served) -> tuple[int | None, Any]:
    return proc.poll() if isinstance(proc, Served) else _try_reap(proc.pid)


def _try_reap(pid: int) -> tuple[int | None, Any]:
    try:
        got, status, rusage = os.wait4(pid, os.WNOHANG)
    except ChildProcessError:
        return 0, None
    return (status, rusage) if got else (None, None)


_SETTLE = 2.0  # seconds to wait for SIGKILLed group members to actually die
#: The environment variable that tags every process an invocation starts (see :class:`LiveGroups`).
TAG_VAR = "DWS_CONTRACT_INVOCATION"


def kill_tagged(tag: str, *, prefix: bool = False, since: int | None = None) -> int:
    """SIGKILL every process whose environment carries ``TAG_VAR=tag`` (``prefix``: any tag starting so), however
    it left its invocation's process group; returns how many. A ``/proc`` scan (0.2 ms for 65 processes); without
    ``/proc`` it finds nothing and the process groups remain the only net.

    ``since``: the invocation's leader pid. Whatever it started got a later pid, so only those environments are
    read, unless the pid counter wrapped meanwhile (:func:`_wrapped_since`). The scan ran twice per invocation over
    every process of the machine, the suite's own included: 4 % of the test command's CPU (issue 44)."""
    needle = f"{TAG_VAR}={tag}".encode()
    killed = 0
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0
    if since is not None and not _wrapped_since(since):
        pids = [pid for pid in pids if pid >= since]
    me = os.getpid()
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        for var in env.split(b"\0"):
            if var == needle or (prefix and var.startswith(needle)):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                break
    return killed


def _wrapped_since(pid: int) -> bool:
    """Whether the kernel's pid counter may have wrapped (or cannot be read) since ``pid`` was given out: pids are
    handed out upwards from the last one, back from the bottom past ``pid_max``. Read after the ``/proc`` listing, a
    last pid below ``pid`` means a wrap before or during it (then every process is read)."""
    try:
        with open("/proc/sys/kernel/ns_last_pid", "rb") as fh:
            return int(fh.read()) < pid
    except (OSError, ValueError):
        return True


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
