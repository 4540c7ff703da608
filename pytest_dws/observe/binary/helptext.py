"""Cobra help text, parsed (usage line, subcommands, local and inherited flags), and the help calls.

Why: help is what an agent reads (D1 §7.3 b3, D2 §6); the gates compare its flags with the schema, so the
parser follows what the real binary prints (docs/wire.md §8: only visible flags under `Flags:`; a local flag may
share a name with a global one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.worlds import plain
from pytest_dws.observe.calls import run_calls, run_one

#: Root execution controls and generic flags that Help shows but the Schema never lists (e81
#: TestFinalSchemaParametersMatchExecutableHelpFlags exclusions).
HELP_ONLY_FLAGS = frozenset({"client-id", "client-secret", "debug", "dry-run", "fields", "format", "jq", "mock",
                             "output", "profile", "timeout", "token", "verbose", "yes", "help"})


# -- help ----------------------------------------------------------------------------------------------------
#: A flag line of cobra's Help. The value name may be several words: cobra takes a backticked phrase of the usage
#: as the name (cf8cf95 `--rooms room search   会议室 roomId 列表…`).
_FLAG_LINE = re.compile(r"^\s+(?:-\w, )?--(?P<name>[A-Za-z0-9][\w.-]*)(?: (?P<type>[\w\[\]]+(?: [\w\[\]]+)*?))?"
                        r"(?:\s{2,}(?P<usage>.*))?$")


_DEFAULT = re.compile(r'\(default (?:"(?P<q>[^"]*)"|(?P<v>[^)]*))\)\s*$')


@dataclass
class Flag:
    name: str
    type: str
    default: str | None
    usage: str


@dataclass
class Help:
    """Cobra help, parsed: the usage line, the listed subcommands, local and inherited flags."""

    usage: str | None
    commands: list[str]
    flags: dict[str, Flag]
    inherited: dict[str, Flag]

    def usage_is(self, path: str) -> bool:
        """The usage line starts with `dws <path>` (then a space or the end)."""
        want = f"dws {path}".strip()
        return self.usage is not None and (self.usage == want or self.usage.startswith(want + " "))


#: Decoration a help may put before a section header or an item (the real root help: `▍ Utility Commands:`, then
#: `  • api   调用钉钉 OpenAPI`, and `  ● chat  群聊 / 消息 / 机器人` under `▍ Discovered MCP Services:`).
_DECORATION = "▍▌▎▏│┃•●○◦▪▫■□‣⁃·-*> \t"


def _listing_section(section: str) -> bool:
    """A section that lists commands: cobra's `Available Commands:` / `Additional Commands:`, and any header naming
    commands or services (81f67c8d and cf8cf95 print the root's products under `Discovered MCP Services:` and their
    other commands under `Utility Commands:`)."""
    return section.endswith(("commands", "services"))


def parse_help(text: str) -> Help:
    """Sections `Usage:`, `Available Commands:` (or another listing of commands or services), `Flags:`, `Global
    Flags:` of Cobra-style help text, with or without the decoration of the real root help (:data:`_DECORATION`)."""
    usage: str | None = None
    commands: list[str] = []
    flags: dict[str, Flag] = {}
    inherited: dict[str, Flag] = {}
    section = ""
    for line in text.splitlines():
        if line and not line[0].isspace():
            section = line.strip().lstrip(_DECORATION).rstrip(":").lower()
            continue
        item = line.strip().lstrip(_DECORATION) if not line.lstrip().startswith("-") else line.strip()
        if not item:
            continue
        if section == "usage" and usage is None:
            usage = item
        elif _listing_section(section):
            commands.append(item.split()[0])
        elif section in ("flags", "global flags"):
            m = _FLAG_LINE.match(line)
            if m:
                text_usage = m.group("usage") or ""
                d = _DEFAULT.search(text_usage)
                default = None if d is None else (d.group("q") if d.group("q") is not None else d.group("v"))
                (flags if section == "flags" else inherited)[m.group("name")] = Flag(
                    m.group("name"), m.group("type") or "bool", default, text_usage)
    return Help(usage, commands, flags, inherited)


def help_of(ctx: GateContext, path: str) -> tuple[Any, Help]:
    """`dws <path> --help` (memoised): the invocation and its parsed help."""
    inv = run_one(ctx, plain(*path.split(), "--help"))
    return inv, parse_help(inv.stdout)


def help_batch(ctx: GateContext, paths: Iterable[str]) -> None:
    """Prefetch several helps on the bounded pool (a no-op for the ones already memoised)."""
    run_calls(ctx, [plain(*p.split(), "--help") for p in paths])


def schema_flags(help_: Help, listed: Iterable[str] = ()) -> set[str]:
    """Help-visible flags that the Schema must list: local + inherited minus the root execution controls and
    the generic `--json`/`--params` payload escape hatches. As upstream's schemaHelpVisibleFlagNames, the
    controls are dropped only where they are inherited (`Global Flags:`): a leaf's own flag of the same name
    (`+chat-messages --output`, docs/wire.md §8) is an input the Schema must list. A `--json` the schema itself lists
    (``listed``) is that command's input, not the escape hatch (cf8cf95 `aitable view update filter --json`:
    the filter array)."""
    keep = set(listed)
    out = set()
    for f, inherited in [*((f, False) for f in help_.flags.values()), *((f, True) for f in help_.inherited.values())]:
        if f.name == "help" or (inherited and f.name in HELP_ONLY_FLAGS):
            continue
        if f.name in ("json", "params") and f.name not in keep and re.search(r"json|payload|参数", f.usage,
                                                                              re.IGNORECASE):
            continue
        out.add(f.name)
    return out
