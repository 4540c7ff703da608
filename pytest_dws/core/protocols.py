"""The interfaces between the parts of the suite, as ``typing.Protocol``s (pytest-xdist's way): what a gate may
ask of its context, and what the items and the report read of the running contract session.

Why a leaf module: the gate registry, the gates and the shared machinery type their ``ctx`` against
:class:`GateContext` without importing :mod:`pytest_dws.observe.context` (which imports them back), and the items and
the report know the session only by :class:`ContractRun`. Nothing here imports the suite.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO, TypeVar

if TYPE_CHECKING:
    from fake_mcp import FakeMCPServer
    from pytest_dws.inputs.expectations import Expectations
    from pytest_dws.inputs.settings import Settings
    from pytest_dws.verdict.baseline import Baseline

T = TypeVar("T")


class Access(enum.Enum):
    """What a gate needs (docs/contract.md §0 access classes)."""

    DATA = "DATA"  # committed JSON data files (a catalog on disk, or `schema --all` output)
    BIN = "BIN"  # the dws binary, offline
    MCP = "BIN+MCP"  # the binary talking to the fake MCP server
    SRC = "SRC"  # a source tree (grep) and/or its generator command
    AGENT = "AGENT"  # an agent's runs: --dws-agent CMD (with the binary) or --dws-trajectories FILE


class Ledger(Protocol):
    """What the session records of the target's cost (:class:`pytest_dws.launch.plan.Ledger`): per kind of call its
    wall and CPU time, and the invocations a replay did not hold."""

    def record(self, kind: str, argv: Sequence[str], wall: float, cpu: float, end: float | None = None) -> None: ...

    def missing(self, argv: Sequence[str]) -> None: ...

    def reuse(self, kind: str) -> None: ...

    def read(self, inv: Any) -> None: ...

    def mean_cpu(self, kinds: Iterable[str]) -> float | None: ...

    def drain(self) -> dict[str, Any] | None: ...


class TargetRunner(Protocol):
    """What a gate may ask of the launcher (:class:`pytest_dws.launch.runner.Runner`): run the implementation,
    once or as a batch of jobs, against pooled fake backends. Named here so that core imports no layer above it
    (the launcher reads the profile, which types its context against this module)."""

    timeout: float
    workers: int
    tape: Any  # the --dws-record / --dws-replay tape, or None
    discovery: list[tuple[list[str], list[str]]]  # invocations that asked the service for discovery (D2 §7)
    observed_invocations: int  # how many invocations the runner looked at for that

    def run(self, *args: str, **options: Any) -> Any: ...

    def run_jobs(self, jobs: Sequence[Any], *, workers: int | None = None, progress: Any = None,
                 read: bool = True) -> list[Any]: ...

    def backends(self, scenario: Any, count: int) -> contextlib.AbstractContextManager[Any]: ...


class GateContext(Protocol):
    """What a gate (and the machinery it calls) may ask of its session: the settings and pinned expectations,
    memoised views, the runner and the fake backend, and where to report what it observed.
    :class:`pytest_dws.observe.context.Context` is the implementation."""

    settings: Settings
    expect: Expectations
    tmp_root: Path
    cache: dict[Any, Any]
    observed: dict[str, Any]
    sections: dict[str, Any]
    selected_gates: set[str] | None
    baseline: Baseline
    item: Any
    console: TextIO | None
    xdist: dict[str, Any] | None

    @property
    def ledger(self) -> Ledger: ...  # read-only, so the launcher's own Ledger class satisfies it

    def available(self, access: Access) -> bool: ...

    def require(self, access: Access) -> None: ...

    def observe(self, key: str, value: Any) -> None: ...

    def section(self, name: str, payload: dict[str, Any]) -> None: ...

    def memo(self, key: Any, build: Callable[[], T]) -> T: ...

    def release(self) -> Any: ...

    def cli(self) -> TargetRunner: ...

    def mcp(self) -> FakeMCPServer: ...

    def backend(self, scenario: Any) -> contextlib.AbstractContextManager[FakeMCPServer]: ...

    def on_close(self, func: Callable[[], Any]) -> None: ...


class ContractRun(Protocol):
    """What the gate items and the report read of the running contract session
    (:class:`pytest_dws.session.run.ContractSession`)."""

    ctx: Any
    settings: Settings
    baseline: Baseline
    isolation: Any  # pytest_dws.launch.contain.sandbox.Isolation (core imports no layer above it)

    def subjects_seen(self, gate_id: str, subjects: list[str]) -> None: ...


__all__ = ["Access", "ContractRun", "GateContext", "Ledger", "TargetRunner"]
