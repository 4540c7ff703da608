"""The one object gates talk to: lazy access to the release data, the CLI runner and the fake backend.

Gates never know how the implementation is launched or where its files are: they ask the context, which
raises :class:`~pytest_dws.registry.NotApplicable` (with the option to set) when an input is missing.
Everything is loaded once per session and cached; per-gate clean state comes from :meth:`Context.backend`.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_dws.core.errors import NoCatalog, NotApplicable
from pytest_dws.core.protocols import Access
from pytest_dws.inputs.expectations import Expectations
from pytest_dws.inputs.settings import Settings
from pytest_dws.launch.plan import Ledger
from pytest_dws.verdict.baseline import Baseline

if TYPE_CHECKING:
    from fake_mcp import FakeMCPServer


class Context:
    """Session-wide inputs of the gates (see module docstring)."""

    def __init__(self, settings: Settings, expect: Expectations, tmp_root: Path) -> None:
        self.settings = settings
        self.expect = expect
        self.tmp_root = tmp_root
        self.cache: dict[Any, Any] = {}  # gates memoise derived views here (key: a tuple naming the view)
        self.observed: dict[str, Any] = {}  # counts gates observed; printed ready to pin
        self.sections: dict[str, Any] = {}  # top-level sections of the JSON report (metrics, release ...)
        self._server: FakeMCPServer | None = None
        self._closers: list[Any] = []
        self._fresh_sections: set[str] = set()
        self.selected_gates: set[str] | None = None  # ids of the gates this run executes (after -k/-m)
        self.baseline: Baseline = Baseline()  # the run's expected failures (set by the session)
        self.item: Any = None  # the gate item running now (set by pytest_dws.session.items; syrupy needs it)
        self.ledger = Ledger()  # every target invocation by cost kind (drained into each item's report)
        self.console: TextIO | None = None  # the real stderr for plan and progress lines (set by the session)
        self.terminal: Any = None  # pytest's terminal reporter, where progress lines go (None in an xdist worker)
        self._say = threading.Lock()
        self.xdist: dict[str, Any] | None = None  # the pytest-xdist workerinput when this session is a worker

    # -- availability --------------------------------------------------------------------------------
    def available(self, access: Access) -> bool:
        """Whether the input of this access class is configured."""
        s = self.settings
        if access is Access.DATA:
            return s.source is not None or s.catalog is not None or s.cli is not None
        if access in (Access.BIN, Access.MCP):
            return s.cli is not None
        if access is Access.AGENT:
            return s.agent is not None or s.trajectories is not None
        return s.source is not None

    def require(self, access: Access) -> None:
        """Raise NotApplicable naming the option that would provide ``access`` (or the recorded path a replay
        did not find here)."""
        if not self.available(access):
            missing = self.settings.missing_recorded.get("source")
            if access is Access.SRC and missing:
                raise NotApplicable(f"the recorded --dws-source {missing} is not here (give --dws-source TREE)",
                                    wants="the recorded --dws-source tree")
            raise NotApplicable(_MISSING[access], wants=_WANTS[access])

    # -- observed counts -----------------------------------------------------------------------------
    def observe(self, key: str, value: Any) -> None:
        """Record a count the run observed (shown in the report, ready to pin in an expectations file)."""
        self.observed[key] = value

    def section(self, name: str, payload: dict[str, Any]) -> None:
        """Publish a top-level section of the JSON report (merged by key; e.g. ``metrics``)."""
        self.sections.setdefault(name, {}).update(payload)
        self._fresh_sections.add(name)

    def drain_sections(self) -> dict[str, Any]:
        """Sections published since the last call (the item ships them to the controller process)."""
        fresh = {name: self.sections[name] for name in sorted(self._fresh_sections)}
        self._fresh_sections.clear()
        return fresh

    def memo(self, key: Any, build: Any) -> Any:
        """``cache[key]``, computed once by ``build()``. A NotApplicable or an AssertionError (the target
        failed: it crashed, hung, printed garbage) raised by build is cached too, so a broken target is run
        once per view, not once per gate item."""
        if key not in self.cache:
            try:
                self.cache[key] = build()
            except (NotApplicable, AssertionError) as exc:
                self.cache[key] = _Raised(exc)
        value = self.cache[key]
        if isinstance(value, _Raised):
            raise value.exc
        return value

    # -- data ----------------------------------------------------------------------------------------
    def release(self) -> Any:
        """The release data (:class:`pytest_dws.inputs.catalog.Release`) of the configured tree or catalog file, else
        of what the configured binary embeds (``dws schema --all``)."""
        s = self.settings
        if s.source is None and s.catalog is None:
            if s.cli is None:
                raise NotApplicable(_MISSING[Access.DATA], wants=_WANTS[Access.DATA])
            from pytest_dws.observe.binary.views import bin_release

            return bin_release(self)

        def build() -> Any:
            from pytest_dws.inputs.catalog import load_release

            try:
                release = load_release(source=s.source, catalog=s.catalog)
            except NoCatalog as exc:
                if s.cli is None:
                    raise
                # A tree that assembles its catalog at build time (issue 27): the release's catalog is the one
                # its binary embeds; the report says where the DATA gates' catalog came from.
                from pytest_dws.observe.binary.views import bin_release

                self.section("catalog", {"from": "the binary (dws schema --all)", "why": str(exc)})
                release = bin_release(self)
                release.built_from = s.source
                return release
            # The release is tens of MB of live objects for the whole session: keep the collector from
            # re-scanning it on every full collection.
            gc.freeze()
            self.on_close(gc.unfreeze)
            return release

        return self.memo(("release",), build)

    # -- binary ----------------------------------------------------------------------------------------
    def cli(self) -> Any:
        """The runner of the implementation under test (:class:`pytest_dws.launch.Runner`)."""

        def build() -> Any:
            self.require(Access.BIN)  # before the import: a run without a binary never loads the runner
            from pytest_dws.launch import Runner

            assert self.settings.cli is not None
            runner = Runner(self.settings.cli, self)
            if self.settings.replay is None and getattr(self, "xdist", None) is None:
                # A hung target is exit 4 now (memoised: every later ask re-raises it). Under xdist the workers
                # share the planned calls and each would probe again: there the timeout breaker stops a hung run.
                runner.probe_identity()
            return runner

        return self.memo(("cli",), build)

    def mcp(self) -> FakeMCPServer:
        """The session's fake MCP server, started on first use and stopped at the end of the session."""
        if self._server is None:
            from fake_mcp import FakeMCPServer

            self._server = FakeMCPServer()
            self._server.start()
            self.on_close(self._server.stop)
        return self._server

    @contextlib.contextmanager
    def backend(self, scenario: Any) -> Iterator[FakeMCPServer]:
        """A clean fake backend loaded with ``scenario`` for one gate (function-scoped state)."""
        server = self.mcp()
        server.load(scenario)
        try:
            yield server
        finally:
            server.transcript.clear()

    def interrupt(self) -> None:
        """Ctrl-C / SIGTERM: kill every running target group now and start no more (pytest then unwinds)."""
        runner = self.cache.get(("cli",))
        if runner is not None and not isinstance(runner, _Raised):
            runner.live.interrupt()

    def announce(self, line: str) -> None:
        """One progress line for the person waiting: through pytest's terminal reporter where this process has one
        (a line of its own, never inside the dots), else on the console (the real stderr past pytest's capture;
        an xdist worker's stderr is the terminal's)."""
        if self.xdist:
            line = f"[{self.xdist.get('workerid')}] {line}"
        with self._say:
            if self.terminal is not None:
                # pytest captures fd 1 while an item runs: step out of the capture for the line, as pytest's own
                # live logging does (the gate thread is waiting on its targets meanwhile).
                capture = self.terminal.config.pluginmanager.get_plugin("capturemanager")
                with contextlib.suppress(OSError, ValueError), \
                        capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
                    self.terminal.write_line(line)
                return
            stream = self.console or sys.__stderr__
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.write(line + "\n")
                    stream.flush()

    def on_close(self, func: Any) -> None:
        """Run ``func()`` when the session ends (runners and pools stop what they started)."""
        self._closers.append(func)

    def close(self) -> None:
        """Stop everything the session started (servers, worker pools); never raises.

        The closers are independent, and stopping a server waits for its serve loop to notice: they run side by
        side (in threads, all joined before this returns) so the session ends after the slowest, not the sum."""
        closers, self._closers = self._closers[::-1], []
        threads = [threading.Thread(target=_quietly, args=(func,), name="dws-close") for func in closers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def _quietly(func: Any) -> None:
    with contextlib.suppress(Exception):
        func()


class _Raised:
    """A cached exception (kept apart from values, which may themselves be exceptions)."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


_MISSING = {
    Access.DATA: "no catalog configured (--dws-source TREE, --dws-catalog FILE, or --dws-cli for schema --all)",
    Access.BIN: "no implementation binary configured (--dws-cli CMD)",
    Access.MCP: "no implementation binary configured (--dws-cli CMD)",
    Access.SRC: "no source tree configured (--dws-source TREE)",
    Access.AGENT: "no agent to judge (--dws-agent CMD runs one on every evaluation case; --dws-trajectories FILE "
                  "judges the runs of another harness)",
}
# What each access class lacks when it is not configured, as the phrase "not applicable for want of ..." reads.
_WANTS = {
    Access.DATA: "a catalog (--dws-source, --dws-catalog or --dws-cli)",
    Access.BIN: "--dws-cli",
    Access.MCP: "--dws-cli",
    Access.SRC: "--dws-source",
    Access.AGENT: "an agent (--dws-agent or --dws-trajectories)",
}
