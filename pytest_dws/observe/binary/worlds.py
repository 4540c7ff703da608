"""The fake worlds of the schema and help gates, and the calls made in them.

Why: a `--help` or a `schema` view runs against an empty fake world, so one costly call (seconds on the real
binary) serves both its reading and the "nothing is requested" check; dry runs and executions run in a world
where the synthetic names resolve. A world is named (:class:`World`) and built once per session through the
context; the planner (:mod:`pytest_dws.observe.calls`) asks it for its Scenario.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from fake_mcp.scenario import EMPTY_WORLD
from pytest_dws.core.protocols import GateContext
from pytest_dws.launch.plan import kind_of
from pytest_dws.observe.calls import Call

# Synthetic values: typed, CID-shaped where an ID is expected (>= 12 bytes, docs/contract.md §0), never `cid...` names.
SYN_CID = "cidSYNTHETICgate0001=="

SYN_GROUP = "合成测试群甲"

SYN_PERSON = "合成测试人甲"

SYN_USER = "user-synthetic-0001"

SYN_ODID = "dSYNTHETICodid0001"  # upstream isOpenDingTalkID: starts with d/D (else it is a userId to resolve)

SYN_VALUE = "synthetic-value"  # the generic value: nothing in the name or schema says more

SYN_TIME = "2026-01-01T00:00:00+08:00"

SYN_TIME_END = "2026-01-02T00:00:00+08:00"


@dataclass(frozen=True)
class World:
    """A fake world by name (hashable: part of a call's memo key); its Scenario is built once per session."""

    name: str

    def scenario(self, ctx: GateContext) -> Any:
        """The ready fake_mcp Scenario (see :func:`prebuilt`)."""
        return ctx.memo(("world", self.name), lambda: prebuilt(self.build(ctx)))

    def home(self, ctx: GateContext, args: tuple[str, ...]) -> dict[str, str | bytes]:
        """The HOME files a run of ``args`` starts with: a signed-in user's local state for the commands of the
        products the release facts name (``[schema] signed_in_state``: their commands read it first), else none
        (:mod:`pytest_dws.observe.binary.home`). The empty world's runs (help, schema) never get it."""
        from pytest_dws.inputs.release_facts import schema_facts
        from pytest_dws.observe.binary.home import signed_in_home

        products = set(schema_facts(ctx.expect).get("signed_in_state") or ())
        words = [a for a in args if not a.startswith("-")][:1]
        return signed_in_home() if self.name != "empty" and words and words[0] in products else {}

    def build(self, ctx: GateContext) -> dict[str, Any]:
        """The scenario document: `empty` has nothing in it; `synthetic` resolves the synthetic names."""
        if self.name == "empty":
            return copy.deepcopy(EMPTY_WORLD)
        if self.name == "synthetic":
            return synthetic_world("schema-synthetic", {SYN_GROUP}, {SYN_PERSON})
        raise KeyError(f"no world named {self.name!r}")


EMPTY = World("empty")
SYNTHETIC = World("synthetic")


def plain(*args: str) -> Call:
    """`dws <args>` exactly as given: no token, no global flags (help, schema, parse probes). A `--help` or a
    `schema` view runs against an empty fake world, as the offline runs of SCHCLI-NO-DISCOVERY do: one costly
    call (about 4 s on the real binary) then serves both its reading and the "nothing is requested" check."""
    return Call(tuple(args), scenario=None if kind_of(args) in ("probe", "run") else EMPTY)


def executed(*args: str, scenario: World | None = SYNTHETIC, tool: dict[str, Any] | None = None) -> Call:
    """`dws --token t --format json <args>` against a fresh fake world (dry-runs, executions); a global flag the
    schema's ``tool`` defines as its own parameter (`audit export --format jsonl|csv`) is left out."""
    own = tuple(sorted(str(k) for k in (tool or {}).get("parameters") or {}))
    return Call(tuple(args), globals_=True, token="t", scenario=scenario, own=own)


def prebuilt(data: dict[str, Any]) -> Any:
    """The fake_mcp Scenario of a world this module builds itself, made without re-validating it (jsonschema)
    in every session: that costs the suite ~0.2 s of CPU next to the targets it measures, for shapes fixed
    here, whose only data-derived values (example literals) are filtered to valid natural names (not empty,
    no leading ``cid``). tests/test_runner_home_pool.py validates every such world against the scenario schema.
    The server builds the same fresh world from it as from the validated dict."""
    from fake_mcp import Scenario

    return Scenario(name=data["name"], world=data.get("world", {}), overrides=tuple(data.get("overrides", ())),
                    source="<pytest_dws schema gates>", unmodelled=data.get("unmodelled", "error"))


def synthetic_world(name: str, groups: set[str], people: set[str]) -> dict[str, Any]:
    """A world where every name of ``groups`` is a unique group and every name of ``people`` a unique person."""
    out_groups, contacts, convs = [], [], []
    person = {"name": SYN_PERSON, "openDingtalkId": SYN_ODID, "userId": SYN_USER}
    for i, title in enumerate(sorted(groups)):
        cid = SYN_CID if title == SYN_GROUP else f"cidSYNTHETICworld{i:05d}"
        out_groups.append({"cid": cid, "title": title, "owner": SYN_USER, "members": [person], "bots": [],
                           "messages": []})
        convs.append({"openConversationId": cid, "title": title, "type": "group"})
    for i, who in enumerate(sorted(people)):
        contacts.append({"name": who, "userId": SYN_USER if who == SYN_PERSON else f"user-world-{i:05d}",
                         "openDingtalkId": SYN_ODID if who == SYN_PERSON else f"odid-world-{i:05d}"})
    # Examples and dry runs judge whether a command runs, not what a tool returns: a tool this world does not
    # model answers an empty success (fake_mcp `unmodelled`; the D1 worlds answer it as an unknown tool).
    return {"name": name, "world": {"groups": out_groups, "conversations": convs, "contacts": contacts},
            "overrides": [], "unmodelled": "empty"}
