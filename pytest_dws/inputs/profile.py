"""The contract profile: which commands, flags, aliases and backend tools the D1 runtime gates exercise.

The gates know the RULES of D1; the profile knows the NAMES an implementation uses for them (command paths,
target flags, hidden spellings, the backend tool and the argument key of each business call). The default
profile (``pytest_dws/inputs/data/profile.toml``) describes the real e81 ``dws``; ``--dws-profile FILE`` replaces it,
so a renamed implementation is judged by the same gates. A malformed profile is one line naming the file and
the path, never a traceback.

Example::

    prof = active_profile(ctx)
    cmd = prof.command("+chat-messages")
    argv = cmd.argv(["--group", "项目群"])     # ['chat', '+chat-messages', '--group', '项目群', '--time', ...]
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_dws.core.envelope import Envelope
from pytest_dws.core.errors import DwsInputError
from pytest_dws.core.protocols import GateContext
from pytest_dws.inputs.advice import Advice, parse_advice
from pytest_dws.inputs.envelope import parse_errors
from pytest_dws.inputs.tomlcheck import TomlValidator as _Validator

DEFAULT_PROFILE = Path(__file__).with_name("data") / "profile.toml"


@dataclass(frozen=True)
class Tool:
    """A backend tool as ``product/tool`` (product None = any product)."""

    product: str | None
    name: str

    @classmethod
    def parse(cls, text: str) -> Tool:
        product, sep, name = text.rpartition("/")
        return cls(product if sep else None, name)

    def matches(self, record: Any) -> bool:
        """True when a transcript record is a tools/call of this tool."""
        return (record.rpc_method == "tools/call" and record.tool == self.name
                and (self.product is None or record.product == self.product))

    def __str__(self) -> str:
        return f"{self.product}/{self.name}" if self.product else self.name


@dataclass(frozen=True)
class Command:
    """One command the gates drive, with the flags that carry its chat target."""

    key: str
    path: tuple[str, ...]
    pinned: tuple[tuple[str, ...], ...] = ()
    matrix: bool = False
    other: bool = False
    write: bool = False
    group: str | None = None
    conversation_id: str | None = None
    chat_query: str | None = None
    chat_query_repeatable: bool = False
    call: Tool | None = None
    id_key: str | None = None
    limit: str | None = None
    contract_version: str | None = None
    first_call: dict[str, Any] = field(default_factory=dict)
    call_args: dict[str, Any] = field(default_factory=dict)
    cursor: str | None = None
    #: a paginated read: the flag asking for every page (None: it reads every page by itself) and the flag
    #: bounding how many (D1 §9.4 / §11.1: its completeness must be truthful, judged by the SMK gates)
    page_all: str | None = None
    page_limit: str | None = None
    #: the other business calls one run makes besides ``call`` (a second bucket: +chat-members-list's bots), each
    #: given the same target: a name must not reach them either, and a failure of one must not pass as complete
    also_calls: tuple[Tool, ...] = ()

    def argv(self, args: list[str] | tuple[str, ...] = (), *, drop: tuple[str, ...] = (),
             path: tuple[str, ...] | None = None) -> list[str]:
        """``path + args + pinned``; pinned pairs whose flag is in ``args`` or ``drop`` are left out."""
        given = {a for a in args if a.startswith("--")} | set(drop)
        out = [*(path or self.path), *args]
        for pair in self.pinned:
            if pair[0] not in given:
                out.extend(pair)
        return out

    @property
    def paginated(self) -> bool:
        """A paginated read the profile names (it has a page-limit flag)."""
        return self.page_limit is not None

    def target_flags(self) -> dict[str, str]:
        """role -> flag for the target flags this command has (group, conversation_id, chat_query)."""
        roles = {"group": self.group, "conversation_id": self.conversation_id, "chat_query": self.chat_query}
        return {k: v for k, v in roles.items() if v}


@dataclass(frozen=True)
class Alias:
    """A hidden compatibility spelling and its canonical twin."""

    command: str
    alias: str
    canonical: str
    args: tuple[str, ...]
    gate: str | None = None
    kind: str = "flag"
    also: tuple[str, ...] = ()
    #: the route Skills must recommend instead (D1 §5 row 7: "Skill 默认仍只推荐 reviewed `chat group rename --id
    #: --name`"): its command path words, then the flags it names
    skill_route: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.command} {self.alias}" if self.kind == "flag" else self.alias


@dataclass(frozen=True)
class Profile:
    """The loaded profile (see module docstring)."""

    source: Path
    cli: dict[str, Any]
    stable_keys: tuple[str, ...]
    resolver: Tool
    resolver_keyword: str
    resolver_cursor: str
    resolver_first_page: dict[str, Any]
    resolver_page_size: int
    commands: dict[str, Command]
    probes: dict[str, Any]
    aliases: tuple[Alias, ...]
    conflicts: tuple[tuple[str, tuple[str, ...]], ...]
    mcp_hosts: tuple[str, ...] = ()  # [egress] mcp_hosts: the service's gateway hosts (and their subdomains)
    advice: Advice = field(default_factory=lambda: Advice({}, ()))  # [advice]: each error class's recovery action
    errors: Envelope = field(default_factory=Envelope)  # [errors]: where its typed error is, under which keys

    def egress_kind(self, host: str, seen: str = "") -> str:
        """``mcp-discovery`` / ``mcp`` when the request shows it (``seen``, a plain-HTTP body), else ``mcp`` for
        a gateway host of the service and ``other`` for anything else (what a CONNECT shows is only where)."""
        if seen:
            return seen
        host = host.lower().rstrip(".")
        return "mcp" if any(host == h or host.endswith("." + h) for h in self.mcp_hosts) else "other"

    def command(self, key: str) -> Command:
        if key not in self.commands:
            raise DwsInputError(self.source, f"$.commands.{key}", "missing (a gate needs this command)")
        return self.commands[key]

    def global_args(self, token: str | None, without: Collection[str] = ()) -> list[str]:
        """Global flags placed before the command: the token (when given) and the JSON format, less those the
        command defines itself (``without``: its own flag names). cobra's local flag shadows a persistent one of the
        same name, so a global ``--format json`` before ``audit export`` would set that command's own ``--format``
        (jsonl|csv, the 81f67c8d schema and Help) and be refused: a suite artifact, not the release's behaviour."""
        parts = ([[t.replace("{token}", token) for t in self.cli["token"]]] if token is not None else []) \
            + [list(self.cli["format"])]
        return [t for part in parts if part and part[0].lstrip("-").split("=", 1)[0] not in without for t in part]

    def hidden_flags(self, cli_path: str) -> set[str]:
        """The hidden compatibility flag spellings (without ``--``) the profile lists for the command at
        ``cli_path`` (`chat +search-msg`): a release may name one in a constraint group beside its published twin."""
        return {a.alias.lstrip("-") for a in self.aliases if a.kind == "flag" and a.command in self.commands
                and " ".join(self.commands[a.command].path) == cli_path}

    def matrix(self) -> list[str]:
        return [k for k, c in self.commands.items() if c.matrix]

    def others(self) -> list[str]:
        return [k for k, c in self.commands.items() if c.other]

    def ambiguity_commands(self) -> list[str]:
        """The matrix plus the write commands: several candidates must stop them before any business call."""
        return self.matrix() + [k for k in self.others() if self.commands[k].write]

    def alias_for_gate(self, gate_id: str) -> Alias | None:
        return next((a for a in self.aliases if a.gate == gate_id), None)


def active_profile(ctx: GateContext | None) -> Profile:
    """The profile of this run: ``--dws-profile`` if given, else the packaged default (cached per session)."""
    path = getattr(getattr(ctx, "settings", None), "profile", None) or DEFAULT_PROFILE
    if ctx is None or not hasattr(ctx, "memo"):
        return load_profile(path)
    return ctx.memo(("profile", str(path)), lambda: load_profile(path))


# -- loading and validation ---------------------------------------------------------------------------------
def load_profile(path: Path | str) -> Profile:
    """Parse and validate a profile TOML file; errors are one line naming the file and the key path."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DwsInputError(path, "", f"cannot read the profile: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise DwsInputError(path, "", f"not valid TOML: {exc}") from None
    v = _Validator(path)
    cli = v.table(data, "cli")
    for key in ("token", "format", "table_format", "unknown_command", "auth_actions"):
        v.strings(cli, key, f"$.cli.{key}")
    for key in ("dry_run", "yes", "help"):
        v.string(cli, key, f"$.cli.{key}")
    if "confirmation_reasons" in cli:  # the typed reasons of "the user must confirm" (D2 §5); default below
        v.strings(cli, "confirmation_reasons", "$.cli.confirmation_reasons")
    cli.setdefault("confirmation_reasons", ["confirmation_required"])
    ids = v.table(data, "ids")
    res = v.table(data, "resolver")
    commands = {key: _command(v, key, raw) for key, raw in v.table(data, "commands").items()}
    probes = v.table(data, "probes")
    for key in ("read", "write"):
        name = v.string(probes, key, f"$.probes.{key}")
        if name not in commands:
            v.fail(f"$.probes.{key}", f"names the unknown command {name!r}")
    mismatch = probes.get("type_mismatch", [])
    if not isinstance(mismatch, list):
        v.fail("$.probes.type_mismatch", "expected an array of tables")
    for i, probe in enumerate(mismatch):
        name = v.string(probe, "command", f"$.probes.type_mismatch[{i}].command")
        if name not in commands:
            v.fail(f"$.probes.type_mismatch[{i}].command", f"names the unknown command {name!r}")
        v.strings(probe, "args", f"$.probes.type_mismatch[{i}].args")
    aliases = tuple(_alias(v, i, raw, commands) for i, raw in enumerate(v.tables(data, "aliases")))
    conflicts: list[tuple[str, tuple[str, ...]]] = []
    for i, raw in enumerate(v.tables(data, "conflicts")):
        cmd = v.string(raw, "command", f"$.conflicts[{i}].command")
        if cmd not in commands:
            v.fail(f"$.conflicts[{i}].command", f"unknown command {cmd!r}")
        conflicts.append((cmd, tuple(v.strings(raw, "args", f"$.conflicts[{i}].args"))))
    egress = data.get("egress", {})
    if not isinstance(egress, dict):
        v.fail("$.egress", "expected a table")
    mcp_hosts = tuple(h.lower() for h in v.strings(egress, "mcp_hosts", "$.egress.mcp_hosts")) \
        if "mcp_hosts" in egress else ()
    first = res.get("first_page", {})
    if not isinstance(first, dict):
        v.fail("$.resolver.first_page", "expected a table")
    size = res.get("page_size")
    if not isinstance(size, int) or size <= 0:
        v.fail("$.resolver.page_size", "expected a positive integer")
    return Profile(
        source=path, cli=cli, stable_keys=tuple(v.strings(ids, "stable_keys", "$.ids.stable_keys")),
        resolver=Tool.parse(v.string(res, "tool", "$.resolver.tool")),
        resolver_keyword=v.string(res, "keyword", "$.resolver.keyword"),
        resolver_cursor=v.string(res, "cursor", "$.resolver.cursor"),
        resolver_first_page=dict(first), resolver_page_size=size, commands=commands, probes=probes,
        aliases=aliases, conflicts=tuple(conflicts), mcp_hosts=mcp_hosts,
        advice=parse_advice(v, data["advice"]) if "advice" in data else _default_advice(path),
        errors=parse_errors(v, data["errors"]) if "errors" in data else Envelope(),
    )


def _default_advice(path: Path) -> Advice:
    """A profile without ``[advice]`` is judged on the packaged default's wording of the recovery actions."""
    return Advice({}, ()) if path.resolve() == DEFAULT_PROFILE.resolve() else load_profile(DEFAULT_PROFILE).advice


def _command(v: _Validator, key: str, raw: Any) -> Command:
    where = f"$.commands.{key}"
    if not isinstance(raw, dict):
        v.fail(where, "expected a table")
    pinned = raw.get("pinned", [])
    if not isinstance(pinned, list) or not all(
            isinstance(p, list) and p and all(isinstance(t, str) for t in p) for p in pinned):
        v.fail(f"{where}.pinned", "expected a list of [flag, value?] string lists")
    flags: dict[str, Any] = {k: v.string(raw, k, f"{where}.{k}") if k in raw else None
             for k in ("group", "conversation_id", "chat_query", "id_key", "limit", "contract_version", "cursor",
                       "page_all", "page_limit")}
    call = v.string(raw, "call", f"{where}.call") if "call" in raw else None
    tables: dict[str, Any] = {}
    for k in ("first_call", "call_args"):
        tables[k] = raw.get(k, {})
        if not isinstance(tables[k], dict):
            v.fail(f"{where}.{k}", "expected a table")
    bools: dict[str, Any] = {}
    for k in ("matrix", "other", "write", "chat_query_repeatable"):
        bools[k] = raw.get(k, False)
        if not isinstance(bools[k], bool):
            v.fail(f"{where}.{k}", "expected true or false")
    if (bools["matrix"] or bools["other"]) and not (call and flags["id_key"]):
        v.fail(where, "a matrix/other command needs `call` and `id_key`")
    if flags["page_all"] and not flags["page_limit"]:
        v.fail(f"{where}.page_limit", "a paginated read (page_all) needs the flag that bounds its pages")
    if flags["page_limit"] and not call:
        v.fail(f"{where}.call", "a paginated read needs its business call (the paged tool)")
    also = tuple(Tool.parse(t) for t in v.strings(raw, "also_calls", f"{where}.also_calls")) \
        if "also_calls" in raw else ()
    return Command(key=key, path=tuple(v.strings(raw, "path", f"{where}.path")),
                   pinned=tuple(tuple(p) for p in pinned), call=Tool.parse(call) if call else None,
                   also_calls=also, **tables, **flags, **bools)


def _alias(v: _Validator, i: int, raw: Any, commands: dict[str, Command]) -> Alias:
    where = f"$.aliases[{i}]"
    if not isinstance(raw, dict):
        v.fail(where, "expected a table")
    cmd = v.string(raw, "command", f"{where}.command")
    if cmd not in commands:
        v.fail(f"{where}.command", f"unknown command {cmd!r}")
    kind = raw.get("kind", "flag")
    if kind not in ("flag", "command"):
        v.fail(f"{where}.kind", "expected 'flag' or 'command'")
    args = v.strings(raw, "args", f"{where}.args")
    if kind == "flag" and "{flag}" not in args:
        v.fail(f"{where}.args", "a flag alias needs the {flag} placeholder")
    gate = raw.get("gate")
    if gate is not None and not isinstance(gate, str):
        v.fail(f"{where}.gate", "expected a gate id")
    also = raw.get("also", [])
    if not isinstance(also, list) or not all(isinstance(a, str) for a in also):
        v.fail(f"{where}.also", "expected a list of flags")
    route = tuple(v.strings(raw, "skill_route", f"{where}.skill_route")) if "skill_route" in raw else ()
    return Alias(command=cmd, alias=v.string(raw, "alias", f"{where}.alias"),
                 canonical=v.string(raw, "canonical", f"{where}.canonical"), args=tuple(args), gate=gate,
                 kind=kind, also=tuple(also), skill_route=route)
