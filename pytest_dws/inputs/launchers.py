"""The launcher words an option names (``--dws-cli``, ``--dws-agent``, ``--dws-warm-start``): read, with
``{python}`` for this interpreter, and checked before anything runs (a one-line input error naming the option)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_dws.core.errors import DwsInputError


def cli_argv(value: str, base: Path) -> list[str]:
    """The words of a command option: ``{python}`` is this interpreter (a venv's Python, not the PATH's), and a
    relative script path resolves against ``base`` like any other path setting."""
    argv = [sys.executable if tok == "{python}" else tok for tok in shlex.split(value)]
    return [str(base / tok) if ("/" in tok and not Path(tok).is_absolute() and (base / tok).exists()) else tok
            for tok in argv]


def check_launcher(argv: list[str], what: str) -> None:
    """The command's program exists and is executable (a path), or is found on PATH (a bare name)."""
    if not argv:
        raise DwsInputError(what, "", "empty command")
    prog = argv[0]
    if "/" not in prog:
        if shutil.which(prog) is None:
            raise DwsInputError(what, "", f"{prog!r} is not on PATH")
        return
    path = Path(prog)
    if not path.exists():
        raise DwsInputError(what, "", f"no such file: {prog!r}")
    if path.is_dir():
        raise DwsInputError(what, "", f"{prog!r} is a directory, not an executable")
    if not os.access(path, os.X_OK):
        raise DwsInputError(what, "", f"{prog!r} is not executable (chmod +x it)")


#: The launcher words a warm start stands for, after this interpreter (the spawner runs ``sys.executable -I -S``).
WARM_FLAGS = ("-I", "-S")


def warm_script(argv: Sequence[str] | None) -> str | None:
    """The script of a launcher ``{python} -I -S SCRIPT`` (this interpreter with the spawner's flags), else None:
    the one shape a warm start applies to (pytest_dws.launch.contain.warm)."""
    if argv and len(argv) >= 4 and argv[0] == sys.executable and tuple(argv[1:3]) == WARM_FLAGS \
            and os.path.isfile(argv[3]):
        return argv[3]
    return None


def warm_start_modules(value: str, cli: list[str] | None, what: str) -> tuple[str, ...]:
    """``--dws-warm-start MODULE ...``: module names, for a target launched as ``{python} -I -S SCRIPT`` (the
    spawner's own interpreter and flags: pytest_dws.launch.contain.warm)."""
    modules = tuple(value.replace(",", " ").split())
    if not modules or not all(part.isidentifier() for m in modules for part in m.split(".")):
        raise DwsInputError(what, "", f"expected module names (e.g. pkg.cli), got {value!r}")
    if warm_script(cli) is None:
        raise DwsInputError(what, "", "a warm start needs a target launched as `{python} -I -S SCRIPT`, got "
                            f"{' '.join(cli or [])!r}")
    return modules
