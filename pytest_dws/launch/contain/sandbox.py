"""Network isolation by construction: the contract session moves into a network namespace where only loopback
exists, before it starts any server, worker or implementation.

Why the whole session and not each invocation: the fake MCP servers and the egress recorder must stay reachable
from the implementation on ``127.0.0.1``, and a namespace holds both sides only if both live in it. Everything
the session starts afterwards (xdist workers, the watchdog, every target and its children, the Go toolchain)
inherits it; a connection to any non-loopback address then fails inside the sandbox (no route), whether or not
the client honours the proxy variables, and a loopback port of the machine outside is not reachable either.

A process that already runs threads cannot enter a new user namespace (and a thread alone must not move away from
the servers it shares a process with), so the session is isolated only when it is still single-threaded. Where the
kernel refuses (no user namespaces, a container without the capability), the run says so once and keeps the
proxy-only containment: :class:`Isolation` carries the mode and the reason into the report and the terminal.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1

@dataclass(frozen=True)
class Isolation:
    """How the implementation is kept on the machine in this run."""

    mode: str  # "namespace" (only loopback exists) or "proxy only"
    reason: str = ""  # why not the namespace
    #: why the implementation's view of the files is not contained (pytest_dws.launch.contain.jail), "" when it is
    files: str = ""

    def to_dict(self) -> dict[str, object]:
        from pytest_dws.launch.contain.containment import processes_bound
        from pytest_dws.launch.contain.jail import Limits

        files: dict[str, object] = {"mode": "not contained", "reason": self.files} if self.files else \
            {"mode": "mount namespace"}
        files["limits"] = Limits().to_dict()  # the limits hold either way (setrlimit needs no namespace)
        files["processes_by"] = processes_bound()
        return {"mode": self.mode, **({"reason": self.reason} if self.reason else {}), "files": files}

    @property
    def files_line(self) -> str:
        """The terminal line about the files (the one the network line has beside it)."""
        if not self.files:
            return ("dws-contract: isolation: files: the implementation sees them read-only, the home folders "
                    "hidden, only its own folders writable, and runs within its limits (docs/safety.md)")
        return (f"dws-contract: isolation: files not contained ({self.files}): the implementation could read the "
                "user's files and write outside its folders")

    @property
    def line(self) -> str:
        """The one terminal line (empty when isolated)."""
        if self.mode == "namespace":
            return ""
        return (f"dws-contract: isolation: proxy only ({self.reason}): an implementation that ignores the proxy "
                "variables could reach the network")


def interfaces() -> list[str]:
    """Network interfaces of this process's namespace (``/proc/net/dev``)."""
    try:
        lines = Path("/proc/self/net/dev").read_text(encoding="ascii").splitlines()[2:]
    except OSError:
        return []
    return sorted(line.split(":", 1)[0].strip() for line in lines if ":" in line)


def default_routes() -> int:
    """IPv4 and IPv6 default routes of this namespace (destination 0/0 outside loopback)."""
    count = 0
    for name, dest_col, zero in (("route", 1, "00000000"), ("ipv6_route", 0, "0" * 32)):
        try:
            rows = Path(f"/proc/self/net/{name}").read_text(encoding="ascii").splitlines()
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > max(dest_col, 1) and cols[dest_col] == zero and cols[0 if name == "route" else -1] != "lo":
                count += 1
    return count


def loopback_only() -> bool:
    """True when this process already lives where only loopback exists (an isolated session's worker)."""
    return interfaces() == ["lo"] and default_routes() == 0


def isolate(mode: str) -> Isolation:
    """Move this process into a new loopback-only network namespace (``mode`` auto or namespace), or say why not.
    Always a new one: a session never shares loopback with the process that started it."""
    if mode == "proxy":
        return Isolation("proxy only", "--dws-isolation=proxy")
    if threading.active_count() > 1:  # a session started inside an isolated process is isolated with it
        if loopback_only():
            return Isolation("namespace")
        return Isolation("proxy only", "the pytest process already runs threads; isolate a session of its own")
    try:
        _unshare()
        _loopback_up()
    except OSError as exc:
        return Isolation("proxy only", f"no network namespace: {exc.strerror or exc}")
    return Isolation("namespace")


def _unshare() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if uid == 0 and libc.unshare(CLONE_NEWNET) == 0:  # root: no user namespace needed, identity unchanged
        return
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        code = ctypes.get_errno() or errno.EPERM
        raise OSError(code, os.strerror(code))
    # The same ids inside as outside: files the run writes keep their owner, getuid() is unchanged.
    Path("/proc/self/setgroups").write_text("deny", encoding="ascii")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1", encoding="ascii")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1", encoding="ascii")


def _loopback_up() -> None:
    """A new namespace's ``lo`` is down: bring it up (ioctl SIOCSIFFLAGS, no ``ip`` binary needed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        req = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(sock.fileno(), _SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(sock.fileno(), _SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | _IFF_UP))
