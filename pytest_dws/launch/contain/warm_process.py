"""The spawner's warm start (:mod:`pytest_dws.launch.contain.warm`), loaded by the spawner's program by its path.

Why: a Python implementation spends most of a short invocation starting its interpreter and importing its modules
(the embedded reference: about 12 of its 20 ms of CPU, issue 44), the same work every time. A warm start does that
work once: :class:`Preloaded` imports the named modules in the spawner, and each invocation is then a fork of the
spawner that enters its jail as a cold start does and runs the script (:func:`run`), its interpreter set up as
``python -I -S SCRIPT ARGS`` would set it up: ``sys.argv``, ``sys.executable``, the environment, a fresh
``__main__``, fresh standard streams, the signal dispositions and the exit code an interpreter gives (``SystemExit``,
an uncaught exception, a failed flush of stdout). Trusted code only: the imports run outside the jail, once, with
an empty environment (a module that reads its environment at import would see none of an invocation's).

Imports nothing of the suite (the spawner runs with -I -S and loads this file by its path).
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import io
import os
import signal
import sys
import time
from typing import Any

#: The capability-set version 3 of capset(2): two 32-bit words per set.
_CAP_V3 = 0x20080522


class Preloaded:
    """The modules of one script, imported once (with an empty environment and the script's folder on the path),
    and the script's code, compiled once. ``failed``: why it could not (every request then starts cold)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.script, self.folder, self.modules = str(spec["script"]), str(spec["path"]), list(spec["modules"])
        self.code: Any = None
        self.failed = ""
        path, environ = list(sys.path), dict(os.environ)
        os.environ.clear()
        sys.path.insert(0, self.folder)
        try:
            for name in self.modules:
                importlib.import_module(name)
            with open(self.script, "rb") as fh:
                self.code = compile(fh.read(), self.script, "exec")
        except BaseException as exc:
            self.failed = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            sys.path[:] = path
            os.environ.clear()
            os.environ.update(environ)
        gc.freeze()  # what the preload made is never collected: a child's collections leave those pages shared

    def matches(self, spec: dict[str, Any]) -> bool:
        return (str(spec["script"]), str(spec["path"]), list(spec["modules"])) == \
            (self.script, self.folder, self.modules)


def run(pre: Preloaded, request: dict[str, Any], started: int) -> None:  # pragma: no cover (the child)
    """In the forked child, after the jail: run the script as ``python -I -S`` would, then exit (never returns).
    ``started``: the pipe whose end of file tells the spawner the target runs (an exec closes it; here, once the
    interpreter's state is set, before the script's first line)."""
    argv: list[str] = request["argv"]
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    if os.getuid() != 0:  # an exec by another uid drops every capability of the user namespace just entered
        _drop_capabilities()
    sys.argv, sys.executable, sys.orig_argv = list(argv[3:]), argv[0], list(argv)
    _standard_streams()
    signal.signal(signal.SIGINT, signal.default_int_handler)  # what the interpreter sets at start-up
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_IGN)
    main = type(sys)("__main__")
    main.__file__ = pre.script
    main.__cached__ = None  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    os.close(started)
    code = _exit_code(pre, main)
    os._exit(_finish(code))


def _exit_code(pre: Preloaded, main: Any) -> int:  # pragma: no cover (the child)
    """The script's exit code as the interpreter computes it (an uncaught exception is printed, exit 1)."""
    try:
        exec(pre.code, main.__dict__)
    except SystemExit as exc:
        return _system_exit(exc)
    except KeyboardInterrupt:
        _print_uncaught()
        _finish(1)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # the interpreter ends by the signal, as it was told
        os.kill(os.getpid(), signal.SIGINT)
        return 130
    except BaseException:
        _print_uncaught()
        return 1
    return 0


def _system_exit(exc: SystemExit) -> int:  # pragma: no cover (the child)
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:
        pass
    return 1


def _print_uncaught() -> None:  # pragma: no cover (the child)
    kind, value, tb = sys.exc_info()
    if tb is not None:
        tb = tb.tb_next  # this module's frame is not the script's
    sys.excepthook(kind, value, tb)  # type: ignore[arg-type]


def _finish(code: int) -> int:  # pragma: no cover (the child)
    """The interpreter's end: threads joined, exit functions run, standard streams flushed (stdout's failure: 120)."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()  # type: ignore[attr-defined]
        except BaseException:
            pass
    import atexit

    atexit._run_exitfuncs()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            stream.flush()
        except Exception:
            if name == "stdout":
                code = code or 120
    return code


def _standard_streams() -> None:  # pragma: no cover (the child)
    """Streams on the descriptors 0-2 the child was given, with the configuration of the spawner's own (its
    interpreter was set up from the same locale variables: :mod:`pytest_dws.launch.contain.warm` checks)."""
    for fd, name, mode in ((0, "stdin", "rb"), (1, "stdout", "wb"), (2, "stderr", "wb")):
        old = getattr(sys, name)
        raw = io.FileIO(fd, mode, closefd=False)
        raw.name = f"<{name}>"  # type: ignore[misc]
        buffered: Any = io.BufferedReader(raw) if mode == "rb" else io.BufferedWriter(raw)
        stream = io.TextIOWrapper(buffered, encoding=old.encoding, errors=old.errors, newline="\n",
                                  line_buffering=raw.isatty() or fd == 2)
        stream.mode = mode[0]  # type: ignore[misc]
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _drop_capabilities() -> None:  # pragma: no cover (the child)
    header = (ctypes.c_uint32 * 2)(_CAP_V3, 0)
    data = (ctypes.c_uint32 * 6)()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
