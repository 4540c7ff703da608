"""One finished run of the implementation: its argv, exit, output, backend transcript and egress.

Why apart: gates, assertions and the reports read invocations; only the runner makes them."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from pytest_dws.core.compare import Diffable
from pytest_dws.core.envelope import Envelope
from pytest_dws.core.errors import Finding
from pytest_dws.core.jsondoc import first_json


class CallList(Diffable, list):  # type: ignore[misc]
    """Backend calls of an invocation (fake_mcp Records, or ``(path, tool, arguments)`` tuples): a list whose
    failed ``==`` pytest renders as a deepdiff (see :mod:`pytest_dws.core.compare`)."""

    __slots__ = ()

    def plain(self) -> list[Any]:
        return [r.to_dict() if hasattr(r, "to_dict") else r for r in self]


class TargetFailure(Finding):
    """The implementation misbehaved as a process (hang, crash, runaway output).

    An ``AssertionError`` (a :class:`Finding`, fingerprinted by its outcome) on purpose: it is a verdict on the
    implementation, reported under the gate that ran it (and eligible for the baseline like any other failure).
    """


@dataclass
class Invocation:
    """One finished run of the implementation: what it was given, what it printed, what it sent."""

    argv: list[str]
    exit_code: int | None
    stdout: str
    stderr: str
    transcript: list[Any] = field(default_factory=list)
    timed_out: bool = False
    crashed: bool = False
    signal: int | None = None
    overflow: bool = False
    captured: int = 0  # bytes read from stdout + stderr (of a flood: before the cut; only the head is kept)
    duration: float = 0.0
    cpu: float = 0.0
    egress: list[str] = field(default_factory=list)  # host:port it tried to reach off the machine (refused)
    #: host:port -> mcp-discovery / mcp / other (Runner.file_egress); empty for an old recording: all count
    egress_kinds: dict[str, str] = field(default_factory=dict)
    collected: list[str | None] = field(default_factory=list)  # the run's ``collect`` files after it (None: absent)
    key: str | None = None  # its key in a recording (--dws-record / --dws-replay), None when neither
    #: the per-invocation limits it ran into (pytest_dws.launch.contain.jail.LIMIT_NAMES): cpu_seconds,
    #: file_size, processes
    limited: list[str] = field(default_factory=list)
    #: the switch points the target reported consulting (the coverage side channel, launch.targeting): a bare
    #: ``VARIABLE`` (it reports that variable's switches) and ``VARIABLE=name`` lines; None: not asked or not told
    consulted: list[str] | None = None
    #: started as a fork of a preloaded interpreter (``--dws-warm-start``, launch.contain.warm), not a new one
    warm: bool = False
    #: where the release puts its typed error on stderr and under which keys (profile ``[errors]``, issue 42): the
    #: runner hands it the run's; the default is docs/contract.md R4.1's own names
    envelope: Envelope = field(default_factory=Envelope, repr=False, compare=False)
    recorded: ClassVar[bool] = True  # False only for launch.recording.Unrecorded (a replay did not hold it)

    @property
    def service_egress(self) -> list[str]:
        """The egress that tried to reach the service (its MCP gateways: discovery or calls); every attempt when
        the kinds are unknown."""
        return [t for t in self.egress if self.egress_kinds.get(t, "mcp") != "other"]

    @property
    def discovery_asked(self) -> list[str]:
        """What it asked of the service beyond tools/call: a listing method (``tools/list`` ...) on the fake
        server, or an attempt to reach the gateway for discovery (egress of kind mcp-discovery)."""
        asked = [f"{r.rpc_method} on {r.path}" for r in self.transcript
                 if isinstance(r.rpc_method, str) and r.rpc_method.endswith("/list")]
        return asked + [f"{t} ({k})" for t, k in self.egress_kinds.items() if k == "mcp-discovery"]

    @cached_property
    def stdout_json(self) -> Any:
        """The first JSON document on stdout, or None."""
        return first_json(self.stdout)

    @cached_property
    def stderr_json(self) -> Any:
        """The first JSON document on stderr, or None (a trailing ``RECOVERY_EVENT_ID=...`` line is ignored)."""
        return first_json(self.stderr)

    @property
    def error(self) -> dict[str, Any] | None:
        """The typed error object of the first JSON document on stderr under the canonical keys (``reason``,
        ``category`` ...), read through the release's :attr:`envelope` (issue 42: never a fixed ``.error.reason``
        path), or None."""
        return self.envelope.error_of(self.stderr_json)

    def calls(self, tool: str | None = None) -> CallList:
        """The ``tools/call`` records of this invocation (optionally of one tool)."""
        return CallList(r for r in self.transcript if r.rpc_method == "tools/call" and (tool is None or r.tool == tool))

    def call_tuples(self) -> CallList:
        """The ordered ``(path, tool, arguments)`` of the backend calls: the invocation as docs/contract.md R6.4
        compares it (``assert inv.call_tuples() == [("/mcp/im", "search_groups", {...})]`` fails with a deepdiff)."""
        return CallList((r.path, r.tool, r.arguments) for r in self.calls())

    @property
    def problem(self) -> str | None:
        """Why this run cannot be judged at all (hang, crash, flood), or None."""
        if self.timed_out:
            return f"timed out after {self.duration:.1f}s and was killed with its process group"
        if self.overflow:
            return (f"flooded its output past the capture limit (cut at {self.captured:,} bytes) and was killed; "
                    "only the head of its output is kept")
        if self.limited:
            return (f"ran into its limit ({', '.join(self.limited)}) and was stopped there"
                    + (f" (signal {self.signal}, {_signal_name(self.signal)})" if self.signal else ""))
        if self.crashed:
            name = _signal_name(self.signal)
            return f"was killed by signal {self.signal} ({name})"
        return None

    def check(self) -> Invocation:
        """Raise :class:`TargetFailure` when the run was abnormal; return self otherwise."""
        __tracebackhide__ = True
        if self.problem is not None:
            outcome = ("timed_out" if self.timed_out else "flooded" if self.overflow else
                       "limited" if self.limited else "crashed")
            raise TargetFailure(f"the implementation {self.problem}\n{self.describe()}", outcome=outcome,
                                limited=",".join(self.limited) or None)
        return self

    def describe(self, limit: int = 700) -> str:
        """A compact, readable account of the run for failure messages."""
        calls = [f"{r.product}/{r.tool} {json.dumps(r.arguments, ensure_ascii=False, sort_keys=True)}"
                 for r in self.calls()]
        other = sorted({str(r.rpc_method) for r in self.transcript if r.rpc_method != "tools/call"})
        lines = [f"  argv: {_shell(self.argv)}", f"  exit: {self.exit_code}"]
        lines.append(f"  backend calls ({len(calls)}): " + ("; ".join(calls)[:limit] if calls else "none"))
        if other:
            lines.append(f"  other requests: {', '.join(other)}")
        if self.egress:
            hosts = [f"{t} ({self.egress_kinds[t]})" if t in self.egress_kinds else t for t in self.egress]
            lines.append(f"  tried to leave the machine (refused by the suite's proxy): {', '.join(hosts)}")
        for name, text, doc in (("stdout", self.stdout, self.stdout_json), ("stderr", self.stderr, self.stderr_json)):
            if text.strip():
                shown = json.dumps(doc, ensure_ascii=False) if doc is not None else printable(text.strip())
                lines.append(f"  {name}: {shown[:limit]}" + (" ..." if len(shown) > limit else ""))
        return "\n".join(lines)


#: Control characters of the target's output, shown escaped: an ESC or NUL never reaches the user's terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


def printable(text: str) -> str:
    """``text`` with its control characters (all but newline and tab) as ``\\xNN`` escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _signal_name(num: int | None) -> str:
    try:
        return signal.Signals(num).name if num is not None else "?"
    except ValueError:
        return "?"


def _shell(argv: Sequence[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)
