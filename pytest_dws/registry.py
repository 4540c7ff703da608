"""The gate registry: every gate of GATES.md, by its stable id, with its document reference.

A gate is a short function registered with :func:`gate`. It receives the context
(:class:`~pytest_dws.core.protocols.GateContext`; and, for per-subject gates, one subject string) and either returns
(pass), raises ``AssertionError`` (fail; use the helpers of :mod:`pytest_dws.assertions`), or raises
:class:`NotApplicable` (the input it needs is not there; reported as a skip with the reason, never as a pass).

Gates know nothing of how the implementation is launched: they only talk to the context.

Example::

    @gate("SCH-DESTRUCTIVE", doc="D2 §5, §9 b7", access={Access.DATA}, subjects=per_tool)
    def destructive_is_high_risk(ctx, subject):
        tool = ctx.tool(subject)
        ...
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from pytest_dws.core.errors import NotApplicable
from pytest_dws.core.protocols import Access, GateContext
from pytest_dws.verdict.cases import judging

#: subjects(ctx) -> the subject ids of a per-subject gate (e.g. canonical paths, command names).
SubjectFn = Callable[[GateContext], Iterable[str]]


@dataclass(frozen=True)
class Gate:
    """One registered check. Several checks may share a gate id (e.g. a DATA part and a BIN part)."""

    id: str
    doc: str
    access: frozenset[Access]
    func: Callable[..., Any]
    subjects: SubjectFn | None = None
    summary: str = ""
    part: str = ""
    tags: frozenset[str] = field(default_factory=frozenset)
    per_tool: bool = False  # judges a per-tool list: --dws-shard splits it (every other gate runs in shard 1)

    @property
    def family(self) -> str:
        """The id prefix: ERR, TGT, ALI, SCH, SCHCLI, FIN, SMK, ACC, FIT, DS, MET, REL."""
        return self.id.split("-", 1)[0]

    @property
    def key(self) -> tuple[str, str]:
        return (self.id, self.part)


_REGISTRY: dict[tuple[str, str], Gate] = {}


def gate(
    gate_id: str,
    *,
    doc: str,
    access: Iterable[Access],
    subjects: SubjectFn | None = None,
    part: str = "",
    per_tool: bool = False,
    sweep: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``func`` as (a part of) gate ``gate_id``.

    ``doc`` is the document reference (``"D1 §3.1 row 1"``); the first docstring line becomes the summary
    shown in reports. ``part`` distinguishes several checks of one gate id (``"data"``, ``"bin"``).
    ``per_tool``: the gate judges a list of the binary's tools (or products), which ``--dws-shard K/N`` splits;
    every other gate is judged by shard 1 alone, so the shards together make the calls of one run.
    ``sweep``: the gate judges every invocation the run made (D2 §7: no discovery on ANY invocation), so its item
    runs after every other gate's (tag ``sweep``).
    """

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        key = (gate_id, part)
        if key in _REGISTRY and _REGISTRY[key].func.__qualname__ != func.__qualname__:
            raise RuntimeError(f"gate {gate_id!r} part {part!r} registered twice")
        summary = (func.__doc__ or "").strip().splitlines()[0] if func.__doc__ else ""
        _REGISTRY[key] = Gate(gate_id, doc, frozenset(access), func, subjects, summary, part, per_tool=per_tool,
                              tags=frozenset({"sweep"}) if sweep else frozenset())
        return func

    return register


def unregister(gate_id: str, part: str = "") -> None:
    """Forget gate part ``gate_id`` / ``part`` (no error when unknown): a plugin that registered a gate for one
    pytest run (a self-test's conftest) removes it in its ``pytest_unconfigure``."""
    _REGISTRY.pop((gate_id, part), None)


def run_once(ctx: GateContext, gate: Gate, subject: str | None = None) -> None:
    """Run a gate part on one subject (None: a whole-run gate), once per session: the item that reports it and
    an aggregate that re-judges it (FIN-SCHEMA-CATALOG over every DATA gate) share one run, and a failure
    (AssertionError) or NotApplicable is raised again from the cache (:meth:`Context.memo`)."""
    def build() -> None:
        with judging() as (judged, unjudged, unrecorded):
            ctx.cache[("gate-judged", gate.id, gate.part, subject)] = judged
            ctx.cache[("gate-unjudged", gate.id, gate.part, subject)] = unjudged
            ctx.cache[("gate-unrecorded", gate.id, gate.part, subject)] = unrecorded
            gate.func(ctx) if subject is None else gate.func(ctx, subject)

    ctx.memo(("gate-run", gate.id, gate.part, subject), build)


def judged_cases(ctx: GateContext, gate: Gate, subject: str | None = None) -> frozenset[str] | None:
    """The case labels the run of ``gate`` on ``subject`` judged (:func:`pytest_dws.verdict.cases.judging`); None when
    it has not run in this session."""
    judged = ctx.cache.get(("gate-judged", gate.id, gate.part, subject))
    return None if judged is None else frozenset(judged)


def unjudged_cases(ctx: GateContext, gate: Gate, subject: str | None = None) -> frozenset[str]:
    """The case labels the run of ``gate`` on ``subject`` knew but could not judge
    (:func:`pytest_dws.verdict.cases.not_judged`)."""
    return frozenset(ctx.cache.get(("gate-unjudged", gate.id, gate.part, subject)) or ())


def unrecorded_cases(ctx: GateContext, gate: Gate, subject: str | None = None) -> frozenset[str]:
    """Of :func:`unjudged_cases`, those a replayed recording could not answer (their invocation is not in it)."""
    return frozenset(ctx.cache.get(("gate-unrecorded", gate.id, gate.part, subject)) or ())


def find(gate_id: str, part: str = "") -> Gate:
    """The registered gate part ``gate_id`` / ``part`` (KeyError when there is none): how an aggregate gate
    re-judges a rule gate's subject without importing its module (gate modules never import each other)."""
    all_gates()
    return _REGISTRY[(gate_id, part)]


#: The entry-point group of gate modules: this package registers ``pytest_dws.gates`` there (pyproject.toml), a
#: plugin registers its own gate modules the same way.
ENTRY_POINT_GROUP = "pytest_dws.gates"


@functools.cache
def discover() -> tuple[str, ...]:
    """Import every gate module of the ``pytest_dws.gates`` entry-point group, once (importing registers its
    gates). The registry names no gate module: the layers below the gates never import them."""
    points = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    for point in points:
        point.load()
    return tuple(point.value for point in points)


def all_gates() -> list[Gate]:
    """Every registered gate, discovering the gate modules on first use (lazy: zero cost when off)."""
    discover()
    return sorted(_REGISTRY.values(), key=lambda g: (g.family, g.id, g.part))


def gate_ids() -> list[str]:
    """Distinct registered gate ids, sorted."""
    return sorted({g.id for g in all_gates()})


__all__ = ["Access", "Gate", "NotApplicable", "all_gates", "find", "gate", "gate_ids", "judged_cases", "run_once",
           "unregister"]
