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
    home_bytes: int = 256 << 20  # all it writes into its HOME together (a size-limited tmpfs over it: ENOSPC)

    def to_dict(self) -> dict[str, int]:
        return {"cpu_seconds": self.cpu_seconds, "file_size": self.file_size, "open_files": self.open_files,
                "processes": self.processes, "home_bytes": self.home_bytes}


#: Limit names an invocation's ``limited`` fact holds.
LIMIT_NAMES = ("cpu_seconds", "file_size", "open_files", "processes", "home_bytes")


@dataclass
class Jail:
    """One target process's view: what stays writable, what is brought back under the hidden folders."""

    writable: list[Path]
    readable: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    mounts: bool = True  # False: limits only (the kernel refused a mount namespace)
    cgroup: Path | None = None  # a pids cgroup of this invocation's own, joined before exec
    #: its HOME, given a tmpfs of Limits.home_bytes holding a copy of what the suite put there (the suite never
    #: reads a HOME after the run: what a gate reads afterwards is ``collect``-ed elsewhere); None: bound as is
    home: Path | None = None
    _seen: int | None = None  # the parent's handle on that tmpfs while and after the target runs (watch)

    def preexec(self) -> None:
        """Run in the child between fork and exec (subprocess ``preexec_fn``): no allocation-heavy work, no
        locks; a failure is an exception, which ``subprocess`` reports as the spawn's failure."""
        if self.cgroup is not None:
            with contextlib.suppress(OSError):  # a gone cgroup leaves the other limits in force
                _write(self.cgroup / "cgroup.procs", "0")
        if self.mounts:
            cwd = os.getcwd()  # subprocess entered it before this hook, i.e. before the mounts that now cover it
            _contain(self.writable, self.readable, self.hidden, self.home, self.limits.home_bytes)
            os.chdir(cwd)  # the folder of the new view (a HOME's own tmpfs), not the read-only one beneath it
        _limit(self.limits, userns=self.mounts)

    def watch(self, pid: int) -> None:
        """Right after the spawn: keep a handle on its HOME's tmpfs (``/proc/<pid>/root/<home>``), which outlives
        the target, so what it wrote there can be measured when it is gone."""
        if self.mounts and self.home is not None:
            with contextlib.suppress(OSError):
                self._seen = os.open(f"/proc/{pid}/root{self.home}", os.O_RDONLY | os.O_DIRECTORY)

    def hit(self, *, signal_number: int | None, cpu: float, timed_out: bool) -> list[str]:
        """What the finished invocation ran into (:func:`limits_hit`)."""
        folders = [p for p in self.writable if p != self.home or self._seen is None]
        if self._seen is not None:
            folders.append(Path(f"/proc/self/fd/{self._seen}"))
        hit = limits_hit(self.limits, signal_number=signal_number, cpu=cpu, timed_out=timed_out,
                         cgroup_hit=Cgroups.hit(self.cgroup), big_file=has_file_at(folders, self.limits.file_size))
        if self._seen is not None:
            with contextlib.suppress(OSError):
                st = os.fstatvfs(self._seen)
                if st.f_bavail * st.f_frsize < 64 << 10:  # its tmpfs is full (a page or so left)
                    hit.append("home_bytes")
        return hit

    def release(self) -> None:
        """Remove its cgroup (its processes are gone: the process group and the tag were killed), let its HOME's
        tmpfs go."""
        Cgroups.remove(self.cgroup)
        if self._seen is not None:
            with contextlib.suppress(OSError):
                os.close(self._seen)
            self._seen = None


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


def _contain(writable: Sequence[Path], readable: Sequence[Path], hidden: Sequence[Path], home: Path | None,
             home_bytes: int) -> None:
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
            # not recursive: the hiding tmpfs sits on that very folder (a workspace that is also the launcher's)
            _mount(f"/proc/self/fd/{fds[path]}", str(path), None, MS_BIND)
            _setattr(str(path), set_=MOUNT_ATTR_RDONLY, recursive=False)
    for path in writable:
        if path == home:  # a tmpfs of its own size, holding a copy of what it was given
            _mount("tmpfs", str(path), "tmpfs", MS_NOSUID | MS_NODEV,
                   f"size={home_bytes},mode={stat.S_IMODE(os.fstat(fds[path]).st_mode):o}")
            _copy_tree(f"/proc/self/fd/{fds[path]}", str(path))
            continue
        _mount(f"/proc/self/fd/{fds[path]}", str(path), None, MS_BIND)
        _setattr(str(path), clear=MOUNT_ATTR_RDONLY, recursive=False)
    for fd in fds.values():
        os.close(fd)
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    _write(Path("/proc/self/setgroups"), "deny")
    _write(Path("/proc/self/uid_map"), f"{uid} {uid} 1")
    _write(Path("/proc/self/gid_map"), f"{gid} {gid} 1")


def _copy_tree(src: str, dst: str) -> None:
    """Copy folders and files (modes kept) from ``src`` to ``dst`` with plain system calls (the child of a fork
    imports nothing)."""
    for name in os.listdir(src):
        source, target = f"{src}/{name}", f"{dst}/{name}"
        st = os.lstat(source)
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(target, stat.S_IMODE(st.st_mode))
            _copy_tree(source, target)
        elif stat.S_ISREG(st.st_mode):
            fin = os.open(source, os.O_RDONLY)
            fout = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IMODE(st.st_mode))
            try:
                while chunk := os.read(fin, 1 << 16):
                    os.write(fout, chunk)
            finally:
                os.close(fin)
                os.close(fout)
        elif stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(source), target)


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



# -- the parent's side: the invocation's pids cgroup and what it ran into ----------------------------------------
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
    _sweep(base)
    path = base / f"dws-{os.getpid()}-{os.urandom(3).hex()}"
    try:
        path.mkdir()
    except OSError:
        return None
    return path


def _sweep(base: Path) -> None:
    """Remove the empty cgroup folders of suite processes that are gone (killed before their finalizers ran): a
    cgroup folder outlives its maker, and nothing else would ever remove it."""
    for stale in base.glob("dws-*-*"):
        pid = stale.name.split("-")[1]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        with contextlib.suppress(OSError):
            for child in stale.iterdir():
                if child.is_dir():
                    child.rmdir()
            stale.rmdir()


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
