"""Warm starts of a trusted Python implementation (``--dws-warm-start``): which invocations the spawner may start
as a fork of itself with the implementation's modules already imported (:mod:`.warm_process`), instead of a new
interpreter.

Why: the embedded reference spends about 12 of the 20 ms of CPU of a short invocation starting ``python -I -S`` and
importing its modules, identically every time, and the plugin's own tests start it some ten thousand times
(issue 44). What a gate judges is unchanged: the invocation still runs in its own process, jailed, with its own
environment, arguments, standard streams and exit code; tests/test_warm_start.py judges runs both ways.

Only an invocation whose start is the same either way starts warm: launched as ``<this interpreter> -I -S SCRIPT``
(the spawner's own interpreter and flags) for the script named, with the locale variables the spawner's interpreter
was set up with (its standard streams are configured from them). Any other invocation of the run (another build,
a tree copy, a changed locale) starts cold, as does every invocation when the preload failed (the report says why).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_dws.inputs.launchers import warm_script

#: The spawner's environment (its interpreter's locale, hence its standard streams' encoding): the suite's own
#: (pytest_dws.launch.runner.Runner.environment) for every target.
SPAWNER_ENV = {"LANG": "C.UTF-8"}
#: The variables a Python interpreter reads for its locale at start-up (-I ignores every PYTHON* one).
LOCALE_VARS = ("LC_ALL", "LC_CTYPE", "LANG")


@dataclass(frozen=True)
class WarmStart:
    """``script``: the implementation's entry script; ``modules``: what it imports before it reads its environment
    (imported once, from the script's folder, with an empty environment: trusted code only)."""

    script: Path
    modules: tuple[str, ...]

    def spec(self) -> dict[str, Any]:
        """The spawner's request field (:class:`.warm_process.Preloaded`)."""
        return {"script": str(self.script), "path": str(self.script.parent), "modules": list(self.modules)}

    def applies(self, argv: Sequence[str], env: Mapping[str, str]) -> bool:
        """Whether this invocation starts the same warm as cold (see the module's docstring)."""
        script = warm_script(argv)
        return (script is not None and os.path.realpath(script) == str(self.script)
                and all(env.get(name) == SPAWNER_ENV.get(name) for name in LOCALE_VARS))

    @classmethod
    def of(cls, prefix: Sequence[str], modules: Sequence[str]) -> WarmStart | None:
        """The warm start of the target launched by ``prefix`` (None: no modules, or not a script launched as
        ``{python} -I -S SCRIPT``; pytest_dws.inputs.settings refuses that as bad input)."""
        script = warm_script(prefix)
        return cls(Path(os.path.realpath(script)), tuple(modules)) if modules and script is not None else None
