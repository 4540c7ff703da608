"""The implementation sees only its own files: a private mount view and resource limits for each target process.

Why per process and not per session: the suite's own processes (xdist workers, fake servers, the report and
recording writers) must keep the real view and write where they write; only the target is untrusted. So the
child that becomes the target, between fork and exec (:meth:`Jail.preexec`), in this order:

1. joins a pids cgroup of its own where the machine has one (a fork flood stops at :attr:`Limits.processes`);
2. enters a new mount namespace (``unshare(CLONE_NEWNS)``, everything made private: nothing propagates out);
3. makes every mount read-only (``mount_setattr(AT_RECURSIVE)``), hides the home folders (``/root``, ``/home``,
   the suite's ``$HOME``, the workspace it was started in) behind empty read-only tmpfs, brings back read-only
   what it must read there (the binary or script under test and its folder, a virtual environment's root, the
   source tree it is judged on), and binds its own folders (its HOME with config, keychain, TMPDIR) writable;
4. enters a new user namespace mapping only its own uid: it keeps no capability over the mount namespace
   above, so it can neither unmount a hiding tmpfs nor make a mount writable again, and the kernel refuses it
   ``/proc/<pid>/root``, ``environ`` and ``cwd`` of every process outside (the suite's, the user's shell);
5. takes its limits (``setrlimit``: CPU seconds, file size, open files, and processes, which a fresh user
   namespace counts per invocation for a uid other than 0).

Where the kernel refuses any of it (no mount namespaces, a container without the capability), the target runs
unconfined and the run says so in one line (:func:`probe`), as the network part does.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import stat
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
MOUNT_ATTR_RDONLY = 0x1
AT_RECURSIVE = 0x8000
_SYS_MOUNT_SETATTR = 442  # the same number on x86_64 and arm64 (the generic syscall table)

#: Folders that hold people's files: hidden behind an empty tmpfs (the suite's own $HOME is added at run time).
HOME_ROOTS = ("/root", "/home", "/run/user")


#: What of a writable /proc acts on the whole machine (bubblewrap's list): bound read-only over itself.
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus")


@dataclass(frozen=True)
class Limits:
    """What one invocation may use. Defaults: far above what the real builds need (a leaf ``--help`` of the
    heaviest build takes 5.5 s of CPU, ``schema --all`` goes to a pipe, not a file; Go's runtime starts about a
    dozen threads, each counted as a process), far below what hurts the machine."""

    cpu_seconds: int = 300  # RLIMIT_CPU soft; SIGXCPU, then SIGKILL a second later
    file_size: int = 64 << 20  # RLIMIT_FSIZE: no file it writes grows past this (SIGXFSZ / EFBIG)
    open_files: int = 4096  # RLIMIT_NOFILE (soft = hard: Go raises its soft limit to the hard one)
    processes: int = 256  # pids cgroup, else RLIMIT_NPROC (threads count)

    def to_dict(self) -> dict[str, int]:
        return {"cpu_seconds": self.cpu_seconds, "file_size": self.file_size, "open_files": self.open_files,
                "processes": self.processes}


#: Limit names an invocation's ``limited`` fact holds.
LIMIT_NAMES = ("cpu_seconds", "file_size", "open_files", "processes")


@dataclass
class Jail:
    """One target process's view: what stays writable, what is brought back under the hidden folders."""

    writable: list[Path]
    readable: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    mounts: bool = True  # False: limits only (the kernel refused a mount namespace)
    cgroup: Path | None = None  # a pids cgroup of this invocation's own, joined before exec

    def preexec(self) -> None:
        """Run in the child between fork and exec (subprocess ``preexec_fn``): no allocation-heavy work, no
        locks; a failure is an exception, which ``subprocess`` reports as the spawn's failure."""
        if self.cgroup is not None:
            with contextlib.suppress(OSError):  # a gone cgroup leaves the other limits in force
                _write(self.cgroup / "cgroup.procs", "0")
        if self.mounts:
            _contain(self.writable, self.readable, self.hidden)
        _limit(self.limits, userns=self.mounts)

    def hit(self, *, signal_number: int | None, cpu: float, timed_out: bool) -> list[str]:
        """What the finished invocation ran into (:func:`limits_hit`)."""
        return limits_hit(self.limits, signal_number=signal_number, cpu=cpu, timed_out=timed_out,
                          cgroup_hit=Cgroups.hit(self.cgroup),
                          big_file=has_file_at(self.writable, self.limits.file_size))

    def release(self) -> None:
        """Remove its cgroup (its processes are gone: the process group and the tag were killed)."""
        Cgroups.remove(self.cgroup)


def _libc() -> ctypes.CDLL:
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


_LIBC: ctypes.CDLL | None = None


def _check(ret: int, what: str) -> None:
    if ret != 0:
        code = ctypes.get_errno() or errno.EPERM
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(src: str | None, dst: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    libc = _libc()
    _check(libc.mount(src.encode() if src else None, dst.encode(), fstype.encode() if fstype else None,
                      ctypes.c_ulong(flags), data.encode() if data else None), f"mount {dst}")


def _setattr(path: str, *, set_: int = 0, clear: int = 0, recursive: bool = True) -> None:
    attr = (ctypes.c_uint64 * 4)(set_, clear, 0, 0)
    libc = _libc()
    ret = libc.syscall(ctypes.c_long(_SYS_MOUNT_SETATTR), ctypes.c_int(-100), path.encode(),
                       ctypes.c_uint(AT_RECURSIVE if recursive else 0), ctypes.byref(attr), ctypes.c_size_t(32))
    _check(ret, f"mount_setattr {path}")


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode("ascii"))
    finally:
        os.close(fd)


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _contain(writable: Sequence[Path], readable: Sequence[Path], hidden: Sequence[Path]) -> None:
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keep = [*readable, *writable]
    fds = {p: os.open(p, os.O_PATH) for p in keep}  # reachable by fd once a tmpfs covers their path
    dirs = {p for p, fd in fds.items() if stat.S_ISDIR(os.fstat(fd).st_mode)}
    _setattr("/", set_=MOUNT_ATTR_RDONLY)
    # /proc stays writable, the user namespace's maps are written there below; but not its machine-wide files: a
    # sysctl checks the uid, not a capability (a target of uid 0 could set the host name, drop the caches).
    _setattr("/proc", clear=MOUNT_ATTR_RDONLY, recursive=False)
    for name in PROC_READ_ONLY:
        with contextlib.suppress(FileNotFoundError):
            _mount(f"/proc/{name}", f"/proc/{name}", None, MS_BIND | MS_REC)
            _setattr(f"/proc/{name}", set_=MOUNT_ATTR_RDONLY)
    for root in hidden:
        _mount("tmpfs", str(root), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,nr_inodes=256,mode=0755")
        for path in keep:  # the mount points of what comes back, made in the empty tmpfs
            if _under(path, root) and path != root:
                _mountpoint(root, path, path in dirs)
        _mount(None, str(root), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    for path in readable:
        if any(_under(path, root) for root in hidden):
            _mount(f"/proc/self/fd/{fds[path]}", str(path), None, MS_BIND | MS_REC)
            _setattr(str(path), set_=MOUNT_ATTR_RDONLY)
    for path in writable:
        _mount(f"/proc/self/fd/{fds[path]}", str(path), None, MS_BIND)
        _setattr(str(path), clear=MOUNT_ATTR_RDONLY, recursive=False)
    for fd in fds.values():
        os.close(fd)
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    _write(Path("/proc/self/setgroups"), "deny")
    _write(Path("/proc/self/uid_map"), f"{uid} {uid} 1")
    _write(Path("/proc/self/gid_map"), f"{gid} {gid} 1")


def _mountpoint(root: Path, path: Path, folder: bool) -> None:
    """Make ``path`` (below ``root``, a fresh tmpfs) exist as what it is outside: a folder or an empty file."""
    parent = root
    for part in path.relative_to(root).parts[:-1]:
        parent = parent / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent, 0o755)
    if folder:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o755)
    else:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))


def _limit(limits: Limits, *, userns: bool) -> None:
    for res, value in ((resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1)),
                       (resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size)),
                       (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
                       (resource.RLIMIT_CORE, (0, 0))):
        with contextlib.suppress(ValueError, OSError):  # never above a hard limit the suite itself runs under
            resource.setrlimit(res, value)
    if userns:  # after the new user namespace: it counts this invocation's processes, not the session's
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))


# -- the parent's side: may the kernel do it, what each invocation sees, its pids cgroup, what it hit -----------
_PROBED: tuple[bool, str] | None = None


def probe() -> tuple[bool, str]:
    """Whether a child can be contained here (a forked child tries the whole :meth:`Jail.preexec` on an empty
    view), and why not; asked once per process. The answer is the run's ``isolation.files``."""
    global _PROBED
    if _PROBED is None:
        _PROBED = _probe()
    return _PROBED


def _probe() -> tuple[bool, str]:
    if not sys.platform.startswith("linux"):
        return False, f"no mount namespaces on {sys.platform}"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dws-probe-") as tmp:
        jail = Jail(writable=[Path(tmp)], hidden=[])
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            os.close(read)
            code = 0
            try:
                jail.preexec()
            except OSError as exc:
                os.write(write, str(exc).encode()[:300])
                code = 1
            except BaseException:
                code = 2
            os._exit(code)
        os.close(write)
        with os.fdopen(read, "rb") as fh:
            said = fh.read().decode("utf-8", "replace")
        _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 0:
        return True, ""
    return False, f"no mount namespace: {said or 'the kernel refused'}"


def reveal_for(prefix: Sequence[str], *more: Path | None) -> list[Path]:
    """What the target must read even where it lies in a hidden folder: each file its launcher names, with the
    folder it lies in (a script's package beside it), the installation a ``bin/`` folder belongs to (a virtual
    environment, a Python under ``~/.pyenv``), the same for their real paths (a venv's python is a link), and
    ``more`` (the source tree, the catalog)."""
    out: set[Path] = set()
    words = [w for w in prefix if os.sep in w]
    while words:
        path = Path(words.pop())
        if not path.is_absolute():
            path = Path.cwd() / path
        for candidate in {Path(os.path.abspath(path)), Path(os.path.realpath(path))}:
            if not candidate.exists():
                continue
            folder = candidate if candidate.is_dir() else candidate.parent
            out.add(folder.parent if folder.name == "bin" else folder)
            words.extend(_interpreter(candidate))
    out.update(Path(os.path.realpath(p)) for p in more if p is not None and Path(p).exists())
    return sorted(_outermost(out))


def _interpreter(path: Path) -> list[str]:
    """The interpreter a script's ``#!`` line names (the kernel runs it: it must be seen too)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    words = head[2:].split(b"\n", 1)[0].split()
    return [words[0].decode("utf-8", "replace")] if words and words[0].startswith(b"/") else []


def _outermost(paths: set[Path]) -> set[Path]:
    return {p for p in paths if not any(q != p and q in p.parents for q in paths)}


def hidden_folders(workspace: Path | None = None) -> list[Path]:
    """The home folders of this machine that exist (``/root``, ``/home``, ``/run/user``, the suite's ``$HOME``)
    and the workspace the suite runs in, but never a folder that holds the system (``/usr``, the temp root)."""
    found = {Path(p) for p in HOME_ROOTS}
    home = os.environ.get("HOME")
    if home:
        found.add(Path(os.path.realpath(home)))
    if workspace is not None:
        found.add(Path(os.path.realpath(workspace)))
    import tempfile

    system = [Path(p) for p in ("/usr", "/lib", "/etc", "/bin", "/proc", "/dev", tempfile.gettempdir())]
    out = {p for p in found if p.is_dir() and p != Path("/") and not any(_under(s, p) for s in system)}
    return sorted(_outermost(out))


class Cgroups:
    """A pids cgroup per invocation where this process may make them (cgroup v1 ``pids`` or v2 with the pids
    controller delegated; root on most machines, seldom in a container): a fork flood stops at
    :attr:`Limits.processes` and ``pids.events`` says it did. Elsewhere RLIMIT_NPROC is the only bound."""

    def __init__(self) -> None:
        self.root = _pids_root()
        self._count = 0
        self._lock = threading.Lock()

    def make(self, limit: int) -> Path | None:
        if self.root is None:
            return None
        with self._lock:
            self._count += 1
            path = self.root / f"inv-{self._count}"
        try:
            path.mkdir()
            _write(path / "pids.max", str(limit))
        except OSError:
            return None
        return path

    @staticmethod
    def hit(path: Path | None) -> bool:
        """Whether a fork of the invocation was refused at the cgroup's limit."""
        if path is None:
            return False
        try:
            events = (path / "pids.events").read_text(encoding="ascii").split()
        except OSError:
            return False
        return len(events) >= 2 and events[0] == "max" and events[1] != "0"

    @staticmethod
    def remove(path: Path | None) -> None:
        if path is not None:
            with contextlib.suppress(OSError):
                path.rmdir()

    def close(self) -> None:
        if self.root is not None:
            with contextlib.suppress(OSError):
                for child in self.root.iterdir():
                    if child.is_dir():
                        child.rmdir()
                self.root.rmdir()
            self.root = None


def processes_bound(cgroup: bool | None = None) -> str:
    """How a fork flood is bounded here: a pids cgroup, RLIMIT_NPROC (counted per invocation in its own user
    namespace), or nothing (uid 0 is exempt from RLIMIT_NPROC: the kernel's rule, in any user namespace)."""
    if cgroup is None:
        base = _pids_base()
        cgroup = base is not None and os.access(base, os.W_OK)
    if cgroup:
        return "pids cgroup"
    if os.getuid() != 0:
        return "RLIMIT_NPROC"
    return "none (uid 0 is exempt from RLIMIT_NPROC and no pids cgroup can be made)"


def _pids_base() -> Path | None:
    """This process's pids cgroup folder (cgroup v1), or None."""
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if "pids" in controllers.split(","):
            return Path("/sys/fs/cgroup/pids") / rel.lstrip("/")
    return None


def _pids_root() -> Path | None:
    """A fresh cgroup folder of this process's own below its pids cgroup, or None."""
    base = _pids_base()
    if base is None:
        return None
    path = base / f"dws-{os.getpid()}-{os.urandom(3).hex()}"
    try:
        path.mkdir()
    except OSError:
        return None
    return path


def limits_hit(limits: Limits, *, signal_number: int | None, cpu: float, timed_out: bool, cgroup_hit: bool,
               big_file: bool) -> list[str]:
    """Which of ``limits`` the invocation ran into, from what the suite sees: the signal that ended it (SIGXCPU,
    SIGXFSZ, or SIGKILL at the hard CPU limit), the pids cgroup's refusals, a file it left at the size limit
    (a Python target ignores SIGXFSZ and gets EFBIG instead). An open-files or RLIMIT_NPROC refusal is the
    target's own error (EMFILE, EAGAIN): the kernel keeps no count of it."""
    import signal as signals

    hit = []
    if signal_number == signals.SIGXCPU or (signal_number == signals.SIGKILL and not timed_out
                                            and cpu >= limits.cpu_seconds):
        hit.append("cpu_seconds")
    if signal_number == signals.SIGXFSZ or big_file:
        hit.append("file_size")
    if cgroup_hit:
        hit.append("processes")
    return hit


def has_file_at(folders: Sequence[Path], size: int) -> bool:
    """A regular file of at least ``size`` bytes below ``folders`` (a write stopped at RLIMIT_FSIZE)."""
    for folder in folders:
        for dirpath, _, files in os.walk(folder):
            for name in files:
                with contextlib.suppress(OSError):
                    if os.lstat(os.path.join(dirpath, name)).st_size >= size:
                        return True
    return False


class Containment:
    """A runner's side of the jail: whether its targets are contained, what they see, their cgroups."""

    def __init__(self, prefix: Sequence[str], *, mode: str = "auto", limits: Limits | None = None,
                 more: Sequence[Path | None] = (), workspace: Path | None = None) -> None:
        self.limits = limits or Limits()
        if mode == "proxy":
            self.mounts, self.reason = False, "--dws-isolation=proxy"
        else:
            self.mounts, self.reason = probe()
        self.hidden = hidden_folders(workspace) if self.mounts else []
        self._more = list(more)
        self._reveal: dict[tuple[str, ...], list[Path]] = {}
        self._lock = threading.Lock()
        self.reveal(prefix)
        self.cgroups = Cgroups()

    def reveal(self, prefix: Sequence[str]) -> list[Path]:
        key = tuple(prefix)
        with self._lock:
            found = self._reveal.get(key)
        if found is None:
            found = reveal_for(prefix, *self._more) if self.mounts else []
            with self._lock:
                self._reveal[key] = found
        return found

    def jail(self, writable: Sequence[Path], prefix: Sequence[str]) -> Jail:
        """The view and limits of one invocation (its cgroup made now: :meth:`done` removes it)."""
        return Jail(writable=[Path(p) for p in writable], readable=self.reveal(prefix), hidden=self.hidden,
                    limits=self.limits, mounts=self.mounts, cgroup=self.cgroups.make(self.limits.processes))

    def close(self) -> None:
        self.cgroups.close()

    def to_dict(self) -> dict[str, object]:
        """The run's ``isolation.files``: the mode, why not contained, the limits and how processes are bound."""
        out: dict[str, object] = {"mode": "mount namespace" if self.mounts else "not contained"}
        if not self.mounts:
            out["reason"] = self.reason
        out["limits"] = self.limits.to_dict()
        out["processes_by"] = processes_bound(self.cgroups.root is not None)
        return out
