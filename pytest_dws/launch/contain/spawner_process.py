"""The spawner's own program (:mod:`pytest_dws.launch.contain.spawner`), run as a script:
``python -I -S spawner_process.py``, its stdin a ``SOCK_SEQPACKET`` socket to the suite's process.

Why a process of its own: entering the jail needs code between fork and exec, and a ``preexec_fn`` makes
``subprocess`` fork the whole calling process, whose pages the kernel then copies on write until the exec. An xdist
worker grows to 300-400 MB over a run: forking it cost more than the target's own start (issue 44). This program
imports nothing of the suite but the jail module (by its path), so each fork copies a few MB.

Each message on stdin is one spawn: JSON ``{"argv", "env", "cwd", "jail"}`` with four file descriptors (the target's
stdin, stdout, stderr and a reply socket). The child enters its own session, takes the descriptors as 0, 1, 2 and
nothing else, resets every signal to its default and unblocks them all (this process ignores SIGPIPE, SIGXFSZ and
SIGINT, and a shell's background job starts with SIGINT and SIGQUIT ignored), enters the jail
(:meth:`Jail.preexec`) and execs, or, when the request asks for a warm start (``"warm"``, launch.contain.warm), runs
the script preloaded in this process instead (``warm_process``: imported once, on the first such request; this
process runs with launch.contain.warm.SPAWNER_ENV, the locale its interpreter is set up from). The reply socket
then carries ``{"pid": N}`` (with ``"warm": true``, or ``"cold": why``, for a warm request), or ``{"error": "..."}``
when it could not start, and, once the target is reaped, ``{"status": wait status, "cpu": seconds}``. At end of file
on stdin (the suite closed it or died) it exits; the targets it started are the suite's (process groups, tags, the
watchdog) to kill.
"""

from __future__ import annotations

import array
import importlib.util
import json
import os
import selectors
import signal
import socket
import sys
from typing import Any

MAX_MESSAGE = 1 << 20  # an argv and environment: far below (the suite refuses a target line longer than this)


def _load(name: str, file: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(__file__), file))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (dataclasses looks its module up while it builds the classes)
    spec.loader.exec_module(module)
    return module


def _jail(module: Any, spec: dict[str, Any] | None) -> Any:
    if spec is None:
        return None
    from pathlib import Path

    return module.Jail(writable=[Path(p) for p in spec["writable"]], readable=[Path(p) for p in spec["readable"]],
                       hidden=[Path(p) for p in spec["hidden"]], limits=module.Limits(**spec["limits"]),
                       mounts=spec["mounts"], cgroup=Path(spec["cgroup"]) if spec["cgroup"] else None,
                       home=Path(spec["home"]) if spec["home"] else None)


_RESET = tuple(sig for sig in signal.valid_signals() if sig not in (signal.SIGKILL, signal.SIGSTOP))


def _child(request: dict[str, Any], fds: list[int], errors: int, jail: Any, warm: Any = None
           ) -> None:  # pragma: no cover (the child)
    try:
        os.setsid()
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target, inheritable=True)
        os.closerange(3, errors)
        os.closerange(errors + 1, 1 << 16)
        for sig in _RESET:  # an ignored one stays so across the exec: this process's, or what its launcher left
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        os.chdir(request["cwd"])
        if jail is not None:
            jail.preexec()
        if warm is not None:
            sys.modules["dws_warm"].run(warm, request, errors)
        os.execvpe(request["argv"][0], request["argv"], request["env"])
    except BaseException as exc:
        text = f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:2000]
        os.write(errors, text)
    os._exit(127)


class Server:
    """One event loop: requests on the control socket, spawn confirmations on error pipes, exits on pidfds."""

    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.jail_module = _load("dws_jail", "jail.py")
        self.warm: Any = None  # the Preloaded of the one warm-start script this spawner serves (warm_process)
        self.sel = selectors.DefaultSelector()
        self.sel.register(control, selectors.EVENT_READ, ("request", None))

    def serve(self) -> None:
        while True:
            for key, _ in self.sel.select():
                kind, data = key.data
                if kind == "request" and not self.request():
                    return
                if kind == "started":
                    self.started(key.fd, *data)
                elif kind == "exited":
                    self.exited(key.fd, *data)

    def request(self) -> bool:
        fds = array.array("i")
        try:
            msg, ancdata, _, _ = self.control.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(4 * fds.itemsize))
        except OSError:
            return False
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        if not msg:
            return False
        reply = socket.socket(fileno=fds[3]) if len(fds) == 4 else None
        try:
            request = json.loads(msg)
            jail = _jail(self.jail_module, request.get("jail"))
            warm = self.preloaded(request.get("warm"))
            read, write = os.pipe2(os.O_CLOEXEC)
            pid = os.fork()
            if pid == 0:  # pragma: no cover (the child)
                os.close(read)
                _child(request, list(fds), write, jail, warm)
            os.close(write)
        except Exception as exc:
            if reply is not None:
                _send(reply, {"error": f"{type(exc).__name__}: {exc}"})
                reply.close()
            for fd in fds[:3] if reply is not None else fds:
                os.close(fd)
            return True
        for fd in fds[:3]:
            os.close(fd)  # the target holds them now: end of file on its pipes is its own
        said = {"warm": True} if warm is not None else \
            {"cold": self.warm.failed} if request.get("warm") and self.warm is not None else {}
        self.sel.register(read, selectors.EVENT_READ, ("started", (pid, reply, said)))
        return True

    def preloaded(self, spec: dict[str, Any] | None) -> Any:
        """The warm start a request asks for, preloaded on its first request (None: start it cold). One script per
        spawner: its modules fill this process's ``sys.modules``, where another script's would collide."""
        if spec is None:
            return None
        if self.warm is None:
            self.warm = _load("dws_warm", "warm_process.py").Preloaded(spec)
        return self.warm if self.warm.matches(spec) and not self.warm.failed else None

    def started(self, read: int, pid: int, reply: socket.socket | None, said_too: dict[str, Any]) -> None:
        said = b""
        while chunk := os.read(read, 4096):
            said += chunk
        self.sel.unregister(read)
        os.close(read)
        if said:  # it never ran: reap it, say why
            os.waitpid(pid, 0)
            if reply is not None:
                _send(reply, {"error": said.decode("utf-8", "replace")})
                reply.close()
            return
        if reply is not None:
            _send(reply, {"pid": pid, **said_too})
        pidfd = os.pidfd_open(pid)
        self.sel.register(pidfd, selectors.EVENT_READ, ("exited", (pid, reply)))

    def exited(self, pidfd: int, pid: int, reply: socket.socket | None) -> None:
        self.sel.unregister(pidfd)
        os.close(pidfd)
        _, status, usage = os.wait4(pid, 0)
        if reply is not None:
            _send(reply, {"status": status, "cpu": usage.ru_utime + usage.ru_stime})
            reply.close()


def _send(reply: socket.socket, message: dict[str, Any]) -> None:
    try:
        reply.send(json.dumps(message).encode())
    except OSError:  # the suite gave up on this target (an interrupt): nothing to tell
        pass


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the suite's Ctrl-C is the suite's: it closes stdin
    Server(socket.socket(fileno=0)).serve()


if __name__ == "__main__":
    main()
