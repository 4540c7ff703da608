"""The suite's side of the spawner (:mod:`pytest_dws.launch.contain.spawner_process`): jailed targets are started by
a small process of its own instead of by a fork of the suite's.

Why: a ``preexec_fn`` (the jail) makes ``subprocess`` fork the calling process instead of vfork-ing it, and the
kernel copies the caller's page tables, then its written pages, until the exec. An xdist worker holds 300-400 MB
late in a run: each jailed start cost it more than the target's own start (issue 44, bench/bench_jail.py
``--ballast``). The spawner is started once per runner (by vfork: no ``preexec_fn``) and forks only itself.

The target it starts is not a child of this process: its exit status and CPU come on a reply socket of the spawn's
own (:class:`Served`), which :func:`pytest_dws.launch.process.pump` watches instead of a pidfd. Its process group,
its invocation tag and the watchdog kill it as before. Linux only (pidfds, ``SCM_RIGHTS``); elsewhere, and for a
request too large for one message, the caller forks as before (:meth:`Spawner.spawn` returns None).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

from pytest_dws.launch.contain.jail import Jail
from pytest_dws.launch.contain.warm import SPAWNER_ENV, WarmStart

#: The spawner's program: a script of its own, run with -I -S (no site, no suite import).
PROGRAM = Path(__file__).with_name("spawner_process.py")

#: A request larger than this goes the old way (one SOCK_SEQPACKET message must fit the socket's buffer).
MAX_REQUEST = 160 << 10
#: Seconds the spawner may take to start one target (entering its jail takes milliseconds; a pids cgroup's join
#: waits for an RCU grace period): a guard against a wedged spawner, never reached by a working one.
SPAWN_TIMEOUT = 120.0


class SpawnRefused(Exception):
    """The spawner answered that the target could not be started (its message: the child's exception)."""


class Served:
    """A target started by the spawner: ``pid`` (its process group), its pipes, and the reply socket that carries
    its end. Duck-types what :mod:`pytest_dws.launch.process` reads of a ``Popen``."""

    def __init__(self, pid: int, stdin: IO[bytes] | None, stdout: IO[bytes], stderr: IO[bytes],
                 reply: socket.socket) -> None:
        self.pid, self.stdin, self.stdout, self.stderr, self.reply = pid, stdin, stdout, stderr, reply
        self.returncode: int | None = None
        self.warm = False  # started as a fork of the spawner (launch.contain.warm)

    @property
    def fd(self) -> int:
        """Readable when the target has ended and been reaped (its status waits there), or the spawner died."""
        return self.reply.fileno()

    def poll(self) -> tuple[int | None, Any]:
        """(wait status, rusage-like) once it ended, else (None, None)."""
        self.reply.setblocking(False)
        try:
            data = self.reply.recv(4096)
        except BlockingIOError:
            return None, None
        except OSError:
            data = b""
        finally:
            self.reply.setblocking(True)
        return self._said(data)

    def wait(self) -> tuple[int, Any]:
        """Block until it ended (the caller has killed its group)."""
        try:
            data = self.reply.recv(4096)
        except OSError:
            data = b""
        return self._said(data)

    @staticmethod
    def _said(data: bytes) -> tuple[int, Any]:
        """A spawner gone without a word reads as a SIGKILL (the caller has killed the group, or will)."""
        said = json.loads(data) if data else {}
        if "status" not in said:
            return 9, None  # (a wait status: killed by SIGKILL)
        return int(said["status"]), SimpleNamespace(ru_utime=float(said.get("cpu", 0.0)), ru_stime=0.0)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.reply.close()


class Spawner:
    """One spawner process per runner, started on the first jailed target (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self.failed = not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open")
        #: the implementation it may start warm (``--dws-warm-start``), and why the spawner started it cold instead
        self.warm: WarmStart | None = None
        self.cold_because = ""

    def _start(self) -> socket.socket | None:
        with self._lock:
            if self._control is None and not self.failed:
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                try:
                    self._proc = subprocess.Popen([sys.executable, "-I", "-S", str(PROGRAM)], stdin=theirs.fileno(),
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                  start_new_session=True, close_fds=True, env=SPAWNER_ENV)
                    self._control = ours
                except OSError:
                    self.failed = True
                    ours.close()
                finally:
                    theirs.close()
            return self._control

    def warm_start(self, prefix: Sequence[str], modules: Sequence[str]) -> None:
        """Start the target launched by ``prefix`` warm where it can (``--dws-warm-start``: launch.contain.warm)."""
        self.warm = WarmStart.of(prefix, modules)

    def spawn(self, argv: Sequence[str], *, env: dict[str, str], cwd: Path, stdin: bool, jail: Jail
              ) -> Served | None:
        """Start ``argv`` jailed; None when the spawner cannot (the caller forks instead). Raises
        :class:`SpawnRefused` when the target could not be started, ``OSError`` on a pipe it could not make."""
        warm = self.warm.spec() if self.warm is not None and self.warm.applies(argv, env) else None
        request = json.dumps({"argv": list(argv), "env": env, "cwd": str(cwd), "jail": _jail_spec(jail),
                              **({"warm": warm} if warm else {})}).encode()
        if len(request) > MAX_REQUEST:
            return None
        control = self._start()
        if control is None:
            return None
        fds: list[int] = []
        ends: list[int] = []
        try:
            if stdin:
                read, write = os.pipe()
                fds.append(read)
                ends.append(write)
            else:
                fds.append(os.open(os.devnull, os.O_RDONLY))
            for _ in range(2):
                read, write = os.pipe()
                fds.append(write)
                ends.append(read)
            reply, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            fds.append(theirs.detach())
            try:
                socket.send_fds(control, [request], fds)
            except OSError:
                self.failed = True  # the spawner is gone: this runner forks from now on
                reply.close()
                for fd in ends:
                    os.close(fd)
                return None
        finally:
            for fd in fds:
                os.close(fd)
        reply.settimeout(SPAWN_TIMEOUT)
        try:
            said = reply.recv(1 << 16)
        except OSError:
            said = b""
        reply.settimeout(None)
        if not said:  # the spawner died or is wedged: this runner forks from now on (what it may have started
            self.failed = True  # carries this invocation's tag: the caller kills it at the invocation's end)
            reply.close()
            for fd in ends:
                os.close(fd)
            return None
        answer = json.loads(said)
        if "pid" not in answer:
            reply.close()
            for fd in ends:
                os.close(fd)
            raise SpawnRefused(str(answer.get("error")))
        files = [os.fdopen(fd, "wb" if i == 0 and stdin else "rb") for i, fd in enumerate(ends)]
        served = Served(int(answer["pid"]), files[0] if stdin else None, files[-2], files[-1], reply)
        served.warm = bool(answer.get("warm"))
        if warm and not served.warm:
            self.cold_because = str(answer.get("cold") or "the spawner started it cold")
        return served

    def close(self) -> None:
        with self._lock:
            control, proc, self._control, self._proc = self._control, self._proc, None, None
            self.failed = True
        if control is not None:
            control.close()  # end of file: the spawner exits
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def _jail_spec(jail: Jail) -> dict[str, Any]:
    return {"writable": [str(p) for p in jail.writable], "readable": [str(p) for p in jail.readable],
            "hidden": [str(p) for p in jail.hidden], "limits": asdict(jail.limits), "mounts": jail.mounts,
            "cgroup": str(jail.cgroup) if jail.cgroup else None, "home": str(jail.home) if jail.home else None}
