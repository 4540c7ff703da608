"""The runner's side of the jail (:mod:`pytest_dws.launch.contain.jail`): may the kernel do it here (asked once
per process), what each invocation must still read under the hidden folders, which folders are hidden, and how a
fork flood is bounded on this machine. Apart from the jail because the jail is what runs in the child between fork
and exec, and this is what the suite decides before."""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path

from pytest_dws.core.errors import DwsInputError
from pytest_dws.launch.contain.jail import HOME_ROOTS, Cgroups, Jail, Limits, _pids_base, _under

__all__ = ["Containment", "Limits", "files_isolation", "probe", "processes_bound"]

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
        home, hidden = Path(tmp) / "home", Path(tmp) / "hidden"
        home.mkdir()
        hidden.mkdir()  # every step an invocation takes: a hidden folder, a HOME tmpfs, the user namespace
        jail = Jail(writable=[home], hidden=[hidden], home=home)
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


#: Folders never hidden (the system's): nothing below them needs revealing.
_SYSTEM = frozenset(Path(p) for p in ("/", "/usr", "/usr/local", "/bin", "/usr/bin", "/sbin", "/usr/sbin",
                                      "/opt", "/lib", "/usr/lib"))


def files_isolation(mode: str) -> str:
    """Why this run's targets are not contained (the report's ``isolation.files``), "" when they are;
    ``--dws-isolation=namespace`` (``mode``) where the kernel refuses: a usage error (exit 4, one line)."""
    if mode == "proxy":
        return "--dws-isolation=proxy"
    contained, why = probe()
    if mode == "namespace" and not contained:
        raise DwsInputError("--dws-isolation", "", f"namespace required, but {why}")
    return why


def reveal_for(prefix: Sequence[str], *more: Path | None) -> list[Path]:
    """What the target must read even where it lies in a hidden folder: each file its launcher names, with the
    folder it lies in (a script's package beside it), the installation a ``bin/`` folder belongs to (a virtual
    environment, a Python under ``~/.pyenv``), the same for their real paths (a venv's python is a link), and
    ``more`` (the source tree, the catalog). The suite's own Python (its environment and the installation it
    comes from) too: a wrapper script that execs it names it only in its body (the tests' hostile targets do)."""
    out: set[Path] = set()
    words = [w for w in (*prefix, sys.executable) if os.sep in w and "\n" not in w and len(w) < 4096]  # not `-c`
    out.update(Path(os.path.realpath(p)) for p in {sys.prefix, sys.base_prefix} if Path(p).is_dir())
    while words:
        path = Path(words.pop())
        if not path.is_absolute():
            path = Path.cwd() / path
        for candidate in {Path(os.path.abspath(path)), Path(os.path.realpath(path))}:
            try:
                if not candidate.exists():
                    continue
            except OSError:  # a word that only looks like a path (too long a name)
                continue
            folder = candidate if candidate.is_dir() else candidate.parent
            install = folder.parent if folder.name == "bin" else folder
            if install not in _SYSTEM:  # (/bin/sh is no reason to reveal /: the system is never hidden)
                out.add(install)
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


class Containment:
    """A runner's side of the jail: whether its targets are contained, what they see, their cgroups."""

    def __init__(self, prefix: Sequence[str], *, mode: str = "auto", limits: Limits | None = None,
                 more: Sequence[Path | None] = (), workspace: Path | None = None, writable: Sequence[Path] = ()
                 ) -> None:
        self.limits = limits or Limits()
        self._writable = [Path(p) for p in writable]  # besides each invocation's own folders (a test's side channel)
        if mode == "proxy":
            self.mounts, self.reason = False, "--dws-isolation=proxy"
        else:
            self.mounts, self.reason = probe()
        self.hidden = hidden_folders(workspace) if self.mounts else []
        self._more = list(more)
        self._reveal: dict[tuple[str, ...], list[Path]] = {}
        self._lock = threading.Lock()
        self._prefix = list(prefix)
        self.reveal(prefix)
        self.cgroups = Cgroups()
        weakref.finalize(self, self.cgroups.close)

    @classmethod
    def of(cls, prefix: Sequence[str], settings: object, *, limits: Limits | None = None,
           writable: Sequence[Path] = ()) -> Containment:
        """A runner's (``Runner(..., limits=, writable=)``): ``--dws-isolation`` (proxy: no jail, the limits stay),
        the source tree and catalog brought back, the suite's working directory hidden as its workspace;
        ``writable``: folders its targets may write besides their own (a test's side channel). Its cgroups go
        when it is collected or the process ends."""
        return cls(prefix, mode=str(getattr(settings, "isolation", None) or "auto"), limits=limits,
                   more=(getattr(settings, "source", None), getattr(settings, "catalog", None)),
                   workspace=Path.cwd(), writable=writable)

    def reveal(self, prefix: Sequence[str]) -> list[Path]:
        key = tuple(prefix)
        with self._lock:
            found = self._reveal.get(key)
        if found is None:
            found = reveal_for(prefix, *self._more) if self.mounts else []
            with self._lock:
                self._reveal[key] = found
        return found

    def make(self, home: Path, argv: Sequence[str], collect: Sequence[Path] = ()) -> Jail:
        """The jail of one invocation of ``argv`` (its launcher: the first words, as many as the runner's) in
        ``home``; the folders of the files it is asked to leave elsewhere (``collect``) are writable too."""
        jail = self.jail([home, *{Path(p).parent for p in collect}], argv[:len(self._prefix)])
        jail.home = home
        return jail

    def jail(self, writable: Sequence[Path], prefix: Sequence[str]) -> Jail:
        """The view and limits of one invocation (its cgroup made now: :meth:`done` removes it)."""
        return Jail(writable=[*map(Path, writable), *self._writable], readable=self.reveal(prefix), hidden=self.hidden,
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


#: A build or generator in a working copy of the tree (``go build`` links a 70 MB binary, ``go test`` runs many
#: processes of a dozen threads each): limits for a toolchain, not for one CLI call.
TREE_LIMITS = Limits(cpu_seconds=3600, file_size=16 << 30, open_files=65536, processes=4096)


def tree_jail(settings: object, argv: Sequence[str], copy: Path, home: Path, env: dict[str, str]) -> Jail:
    """The jail of a run in a working copy of the tree under test (regeneration, ``FIN-*``): the copy and its HOME
    writable, and Go's build cache when the environment names one (``GOCACHE``); readable under the hidden
    folders: the launcher, the Go toolchain (``go`` on the PATH, ``GOROOT``), ``GOPATH`` and ``GOMODCACHE``."""
    import shutil

    path = env.get("PATH", "")
    go = shutil.which("go", path=path)
    toolchain = [go] if go else []
    more = [Path(env[k]) for k in ("GOROOT", "GOPATH", "GOMODCACHE") if env.get(k)]
    box = Containment([*argv, *toolchain], mode=str(getattr(settings, "isolation", None) or "auto"),
                      limits=TREE_LIMITS, more=more, workspace=Path.cwd())
    cache = [Path(env["GOCACHE"])] if env.get("GOCACHE") and Path(env["GOCACHE"]).is_dir() else []
    return box.jail([copy, home, *cache], [*argv, *toolchain])
