"""One contract run: settings, context, baseline, the gate items, and what is reported at the end."""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import signal
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

import pytest

from pytest_dws.core.errors import DwsInputError, NotApplicable
from pytest_dws.inputs.catalog.layout import detect
from pytest_dws.inputs.expectations import load_expectations
from pytest_dws.inputs.profile import active_profile
from pytest_dws.inputs.settings import resolve
from pytest_dws.launch.contain.containment import files_isolation
from pytest_dws.launch.contain.sandbox import Isolation, isolate, loopback_only
from pytest_dws.launch.contain.workers import die_with_parent, stop_children
from pytest_dws.observe.context import Context
from pytest_dws.registry import all_gates, gate_ids
from pytest_dws.session.header import header_lines
from pytest_dws.session.items import FamilyCollector, GateItem
from pytest_dws.session.report import Recorder
from pytest_dws.verdict.baseline import load_baseline, split_entry


def _console() -> TextIO | None:
    """A duplicate of the real stderr, taken in pytest_configure while pytest's capture is suspended: the plan
    and progress lines of a batch reach the terminal while the item runs with fd 2 captured."""
    try:
        stream = os.fdopen(os.dup(2), "w", encoding="utf-8", errors="replace")
    except OSError:
        return None
    atexit.register(stream.close)
    return stream


def _xdist_controller(config: pytest.Config) -> bool:
    """Is this the controller of an xdist run (``-n N``: its workers run the gates, it runs none)?"""
    return not hasattr(config, "workerinput") and config.getoption("dist", "no") not in ("no", None) \
        and bool(config.getoption("numprocesses", None))


class ContractSession:
    """Built in ``pytest_configure`` when ``--dws-contract`` is given (nothing is imported otherwise)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.settings = resolve(config)
        self.isolation = self._isolate(config)
        self.expect = load_expectations(self.settings.expect)
        self.baseline = load_baseline(self.settings.baseline, gate_ids())
        self._tmp = tempfile.TemporaryDirectory(prefix="dws-contract-")
        self.ctx = Context(self.settings, self.expect, Path(self._tmp.name))
        self.ctx.baseline = self.baseline  # aggregate gates ask it which rule-gate causes are accepted
        self.recorder = Recorder(self)
        self.ctx.console = _console()
        worker = getattr(config, "workerinput", None)  # only a real xdist worker's config has it
        if isinstance(worker, dict):
            self.ctx.xdist = {k: worker.get(k) for k in ("workerid", "workercount", "testrunuid")}
        self.collected: dict[str, set[str | None]] = {}
        self._previous: dict[int, Any] = {}
        # Load the release now: a malformed artifact is then one ERROR line (exit 4) from pytest_configure,
        # also under xdist, where a failure during a worker's collection would otherwise be swallowed.
        if self.settings.catalog is not None or (self.settings.source is not None
                                                 and detect(self.settings.source) is not None):
            with contextlib.suppress(NotApplicable):  # (a tree without a catalog: the binary's, run later)
                self.ctx.release()
            # The parsed release (tens of MB of JSON, no cycles) lives as long as the run: move it out of the
            # cyclic collector's sight, or every collection, and pytest's gc.collect() at the end, walks it.
            gc.freeze()
        if self.settings.profile is not None:
            active_profile(self.ctx)  # the same for a malformed --dws-profile (gates list subjects from it)
        if self.settings.trajectories is not None:  # a bad file of agent runs: one ERROR line now (exit 4)
            from pytest_dws.observe.evaluation import from_file

            from_file(self.ctx)
        if _xdist_controller(config) and self.settings.cli is not None and self.settings.replay is None:
            # The workers do not probe (they would each ask --help): the controller asks once, before any worker
            # starts, so a hung or foreign target is exit 4 under xdist too, not a run of timed-out gates.
            self.ctx.cli()

    def _isolate(self, config: pytest.Config) -> Isolation:
        """The network part (:meth:`_isolate_network`) and the files part: may each target get a mount view of
        its own (issue 45, :func:`pytest_dws.launch.contain.containment.files_isolation`);
        ``--dws-isolation=namespace`` requires both (exit 4 without)."""
        network = self._isolate_network(config)
        return replace(network, files=files_isolation(self.settings.isolation))

    def _isolate_network(self, config: pytest.Config) -> Isolation:
        """Enter the loopback-only namespace now, before any server, worker or target exists (issue 29). A worker
        of an isolated controller was started inside it and finds itself there."""
        if hasattr(config, "workerinput"):
            die_with_parent(signal.SIGTERM)  # a controller killed outright (SIGKILL) takes its workers' targets along
            if loopback_only():
                return Isolation("namespace")
            return Isolation("proxy only", "the controller could not isolate the session")
        if self.settings.live_smoke is not None:  # the opt-in real smoke must reach the service (SMK-LIVE)
            if self.settings.isolation == "namespace":
                raise DwsInputError("--dws-live-smoke", "", "the live smoke reaches the real service: it cannot run "
                                    "with --dws-isolation=namespace (only loopback)")
            return Isolation("proxy only", "--dws-live-smoke reaches the real service (opt-in)")
        isolation = isolate(self.settings.isolation)
        if self.settings.isolation == "namespace" and isolation.mode != "namespace":
            raise DwsInputError("--dws-isolation", "", f"namespace required, but {isolation.reason}")
        return isolation

    def items(self, session: pytest.Session) -> list[pytest.Item]:
        """One item per gate, or per gate part when one id has several checks (``GATE-ID[bin]``)."""
        root = FamilyCollector.from_parent(session, name="dws", nodeid="dws")
        families: dict[str, FamilyCollector] = {}
        out: list[pytest.Item] = []
        registered = all_gates()
        chosen = self.config.hook.pytest_dws_gates(config=self.config, gates=registered)
        # A sweep gate judges every invocation the run made: it runs after the others (a stable sort).
        gates = sorted(registered if chosen is None else chosen, key=lambda g: "sweep" in g.tags)
        parts: dict[str, int] = {}
        for gate in gates:
            parts[gate.id] = parts.get(gate.id, 0) + 1
        for gate in gates:
            parent = families.get(gate.family)
            if parent is None:
                parent = FamilyCollector.from_parent(root, name=gate.family)
                families[gate.family] = parent
            label = gate.part if parts[gate.id] > 1 and gate.part else None
            name = gate.id if label is None else f"{gate.id}[{label}]"
            out.append(GateItem.from_parent(parent, name=name, gate=gate, label=label, contract=self,
                                            **_part_id(parent, gate.id, label)))
            if gate.subjects is None:  # a per-subject gate is known by the subjects it lists when it runs
                self.collected.setdefault(gate.id, set()).add(label)
        return out

    def subjects_seen(self, gate_id: str, subjects: list[str]) -> None:
        """The subjects a gate item listed (the baseline check names unknown ``GATE[subject]`` entries)."""
        self.collected.setdefault(gate_id, set()).update(subjects)

    # -- pytest hooks: this session is registered as a plugin (pytest_dws.plugin), its methods are the hooks --
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not hasattr(self.config, "workerinput"):  # a worker's terminal is not shown: it keeps the console
            self.ctx.terminal = self.config.pluginmanager.get_plugin("terminalreporter")

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[Any]) -> None:
        gates = self.items(session)
        # Announce them like collected items, so "collected N items" and --collect-only count them.
        collected: list[pytest.Item | pytest.Collector] = [*gates]
        config.hook.pytest_collectreport(report=pytest.CollectReport("dws", "passed", None, collected))
        items[:0] = gates

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # The gates this process will judge: their call planners feed the first batch (a shard K > 1 judges
        # only the per-tool gates).
        shard = self.settings.shard
        self.ctx.selected_gates = {i.gate.id for i in session.items if isinstance(i, GateItem)
                                   and (shard is None or shard[0] == 1 or i.gate.per_tool)}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Reports carry the gate id in user_properties; the recorder ignores everything else.
        self.recorder.record(report)
        if not hasattr(self.config, "workerinput"):
            # Read: what runs after (JUnit XML) gets every value as JSON, not as a Python repr. A worker keeps the
            # objects: its controller's recorder reads them.
            report.user_properties = [(k, v if isinstance(v, str) else json.dumps(v, ensure_ascii=False,
                                                                                  default=str))
                                      for k, v in report.user_properties]

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """The run's first lines: what is judged, what would judge more, how the target is kept on the machine."""
        return header_lines(self.settings, self.isolation)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        self.recorder.terminal_summary(terminalreporter)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.finish(session)
        # pytest collects garbage twice at the end (to surface unraisable exceptions); what the gates built is
        # acyclic JSON and verdicts, dropped with the process: keep it out of those walks (60 ms on cf8cf95).
        gc.freeze()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.restore_signal_handlers()

    def install_signal_handlers(self) -> None:
        """SIGINT and SIGTERM (a CI cancel) kill the running targets, then interrupt pytest (exit 2, its
        interrupted summary shows what was judged). Main thread only; the previous handlers come back at the end."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def restore_signal_handlers(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.ctx.interrupt()
        if not hasattr(self.config, "workerinput"):  # an xdist controller: its workers stop their targets too
            stop_children(signal.SIGTERM)
        raise KeyboardInterrupt(f"dws-contract: {signal.Signals(signum).name}: the running targets were killed")

    def finish(self, session: pytest.Session) -> None:
        """Judge the baseline, write the JSON report, stop what the context started."""
        problems = []
        for kind, entry, text in self.baseline.findings(self.collected):
            if kind == "stale" and self.settings.shard is not None and split_entry(entry)[1] is None:
                # A gate-wide entry may fail in another shard's part of the tools: the merge judges it.
                self.recorder.deferred_stale.append(entry)
            else:
                problems.append(text)
        self.recorder.baseline_problems = problems
        outcomes = [r.outcome for r in self.recorder.results.values()]
        if outcomes and all(o == "not_applicable" for o in outcomes) and session.exitstatus in (
                pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            # Nothing judged is never a pass (issue 24): the run names what would have judged something.
            print(f"ERROR: dws-contract: nothing was judged: all {len(outcomes)} selected gate item(s) were not "
                  "applicable (the closing block says which option or file each one wants)", file=sys.stderr)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if problems and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        for entry, closest in sorted(self.baseline.unknown.items()):  # a misspelled case: bad input, exit 4
            print(f"ERROR: dws-contract: {self.baseline.path}: $.expected_failures.{entry!r}: no such case of its "
                  f"gate in this run (closest: {', '.join(map(repr, closest)) or 'none'})", file=sys.stderr)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if self.settings.record is not None and self.recorder.reads and not hasattr(self.config, "workerinput"):
            tape = self.ctx.cache.get(("runner", "tape"))  # what each gate read, for `recording show` (issue 37 (4))
            if tape is not None and getattr(tape, "recorder", None) is not None:
                tape.recorder.fact("reads_by_gate", {g: r["read"] for g, r in sorted(self.recorder.reads.items())})
        if self.settings.report is not None:
            try:
                self.recorder.write(self.settings.report)
            except OSError as exc:  # it could be written at the start: one line, exit 4, never a traceback
                print(f"ERROR: dws-contract: --dws-report: cannot write {self.settings.report}: "
                      f"{exc.strerror or exc}", file=sys.stderr)
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
        self.ctx.close()
        self._tmp.cleanup()


def _part_id(parent: pytest.Collector, gate_id: str, label: str | None) -> dict[str, Any]:
    """A gate part's id as pytest parses ``GATE[part]`` back (its structured node ids, pytest >= 9.2, keep the
    bracket as parameters): without it ``--lf``/``--sw``/``--ff`` would not find ``SCH-EXAMPLES[bin]`` again.
    Older pytest compares the string form, which the name alone already gives."""
    base = getattr(parent, "_id", None)
    if label is None or base is None or not hasattr(base, "with_params"):
        return {}
    return {"nodeid": base.child(gate_id).with_params(label)}
