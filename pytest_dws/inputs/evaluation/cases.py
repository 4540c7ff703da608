"""Agent evaluation cases as data (D1 §8.4, §9.2): a prompt template, the world the fake backend starts from,
the faults it injects by stage, the fixture it needs, and the expected end state.

Files live under ``<scenarios>/agent/<layer>/*.json`` (``observed``, ``holdout``; the ``variant`` layer is
generated, :mod:`.variants`), validated by ``schemas/agent-cases.json``; a defect is one line naming the file
and the JSON path. ``{{symbol}}`` placeholders are rendered everywhere with the symbol table of the run (the
file's own values, or random ones: :func:`pytest_dws.inputs.datasets.random_symbols`), so a prompt never holds a
fixed name and an agent cannot play a case by its literals (D1 §9.1).

``replays`` is the number of D1 §1 failed calls a case of the observed layer stands for; the layer's
``manifest.toml`` pins the totals per failure class (1 infrastructure, 1 auth, 24 target type, 11 drift, 37
ambiguity = 74) and the number of cases (31: D1 §9.4's "31×5" replay).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError
from pytest_dws.inputs.catalog import jsonio
from pytest_dws.inputs.catalog.jsonio import jpath
from pytest_dws.inputs.datasets.cases import check_pinned, check_rendered, default_root, load_folder
from pytest_dws.inputs.datasets.symbols import random_symbols, render, symbol_kind

LAYERS = ("observed", "variant", "holdout")
#: The typed statuses an agent's final answer may claim (docs/evaluation.md, "The answer").
ANSWERS = ("complete", "partial", "stopped", "failed")
#: Where a fault is injected (D1 §9.3 执行阶段): before the business call (the target resolution), the tool's
#: metadata lookup, the business execution, a later page.
STAGES = ("before_call", "metadata", "execution", "later_page")
DEFAULT_BUDGET = {"seconds": 60.0, "calls": 16}
_OVERRIDE_KEYS = ("tool", "product", "call", "page", "args", "reply")


@cache
def schema(name: str) -> dict[str, Any]:
    """A JSON Schema of this package (``agent-cases``, ``trajectory``)."""
    text = resources.files("pytest_dws.inputs.evaluation").joinpath(f"schemas/{name}.json").read_text("utf-8")
    return dict(json.loads(text))


@cache
def _validator(name: str) -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(schema(name))


def first_error(doc: Any, name: str) -> tuple[str, str] | None:
    """``($.json.path, message)`` of the most relevant schema error of ``doc``, or None when it is valid."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(name).iter_errors(doc))
    if error is None:
        return None
    return jpath(*error.absolute_path), error.message[:300]


@dataclass(frozen=True)
class Rendered:
    """A case rendered with one symbol table: what the agent is told, and what the backend and judge use."""

    prompt: str
    scenario: dict[str, Any]
    fixture: dict[str, Any]
    faults: list[dict[str, Any]]
    expect: dict[str, Any]


@dataclass(frozen=True)
class AgentCase:
    """One evaluation case (templates unrendered)."""

    id: str
    layer: str
    pattern: str
    group: str
    doc: str
    prompt: str
    world: dict[str, Any]
    expect: dict[str, Any]
    faults: tuple[dict[str, Any], ...] = ()
    fixture: dict[str, Any] = field(default_factory=dict)
    symbols: dict[str, str] = field(default_factory=dict)
    dims: dict[str, Any] = field(default_factory=dict)
    budget: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_BUDGET))
    replays: int = 0
    source: str = ""

    def render(self, symbols: dict[str, str] | None = None) -> Rendered:
        """The case with every placeholder replaced (``symbols``: the run's values, default the file's)."""
        table = {**self.symbols, **(symbols or {})}
        faults = render([dict(f) for f in self.faults], table)
        scenario = {"name": self.id.replace("/", "-"), "world": render(self.world, table),
                    "overrides": [{k: f[k] for k in _OVERRIDE_KEYS if k in f} for f in faults]}
        return Rendered(render(self.prompt, table), scenario, render(self.fixture, table), faults,
                        render(self.expect, table))

    def randomised(self, seed: str) -> AgentCase:
        """The same case with fresh synthetic names, CIDs, keywords and trace IDs drawn from ``seed``."""
        import random

        return replace(self, symbols=random_symbols(self.symbols, random.Random(seed)))

    def as_json(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def agent_root(root: Path | None = None) -> Path:
    """The folder of the agent cases: ``<scenarios>/agent`` ($DWS_DATASETS_DIR or the shipped files)."""
    return (root or default_root()) / "agent"


def load_file(path: Path, layer: str) -> list[AgentCase]:
    """The cases of one file; any defect is one line naming the file and the JSON path."""
    data = jsonio.load(path)[1]
    found = first_error(data, "agent-cases")
    if found:
        raise DwsInputError(path, *found)
    symbols = data.get("symbols", {})
    for key, value in symbols.items():
        try:
            kind = symbol_kind(key)
        except ValueError as exc:
            raise DwsInputError(path, f"$.symbols.{key}", str(exc)) from None
        if kind == "name" and value.lower().startswith("cid"):
            raise DwsInputError(path, f"$.symbols.{key}", "a natural name must not start with 'cid'")
    cases = []
    seen: set[str] = set()
    for i, raw in enumerate(data["cases"]):
        where = f"$.cases[{i}]"
        if raw["id"] in seen:
            raise DwsInputError(path, f"{where}.id", f"duplicate case id {raw['id']!r}")
        seen.add(raw["id"])
        case = AgentCase(
            id=f"{layer}/{data['pattern']}/{raw['id']}", layer=layer, pattern=data["pattern"],
            group=str(data.get("group", data["pattern"])), doc=data["doc"], prompt=raw["prompt"],
            world=dict(raw.get("world", data.get("world", {}))), expect=dict(raw["expect"]),
            faults=tuple(raw.get("faults", ())), fixture=dict(raw.get("fixture", {})), symbols=dict(symbols),
            dims={**data.get("dims", {}), **raw.get("dims", {})},
            budget={**DEFAULT_BUDGET, **data.get("budget", {}), **raw.get("budget", {})},
            replays=int(raw.get("replays", 0)), source=str(path))
        check_case(case, path, where)
        cases.append(case)
    return cases


def check_case(case: AgentCase, path: Path | str, where: str) -> None:
    """Render with the file's symbols, validate the world with fake_mcp's schema, refuse fixed literals."""

    def rendered() -> tuple[str, dict[str, Any]]:
        r = case.render()
        return r.prompt, r.scenario

    check_rendered(path, where, rendered)


def load_layer(layer: str, root: Path | None = None) -> list[AgentCase]:
    """Every case of the ``observed`` or ``holdout`` layer (files sorted by name), checked against the manifest."""
    return load_folder(agent_root(root) / layer, f"agent case layer {layer!r}", lambda p: load_file(p, layer),
                       check_manifest)


def check_manifest(cases: list[AgentCase], manifest: dict[str, Any]) -> list[str]:
    """Where the cases differ from what the manifest pins: the case count and the replays per D1 class."""
    want = manifest.get("cases")
    problems = [f"cases: the files hold {len(cases)}, the manifest pins {want}"] if want not in (None, len(cases)) \
        else []
    return problems + check_pinned([(c.group, c.replays) for c in cases], manifest.get("replays", {}), "replay")
