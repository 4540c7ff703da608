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
from pytest_dws.inputs.datasets.cases import FORBIDDEN_LITERALS, default_root, load_manifest
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


def first_error(doc: Any, name: str) -> tuple[str, str] | None:
    """``($.json.path, message)`` of the most relevant schema error of ``doc``, or None when it is valid."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema(name))
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is None:
        return None
    path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return path, error.message[:300]


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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DwsInputError(path, "$", f"not a readable JSON file ({exc})") from None
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
    from fake_mcp import ScenarioError, validate

    try:
        rendered = case.render()
    except KeyError as exc:
        raise DwsInputError(path, where, f"placeholder {{{{{exc.args[0]}}}}} has no symbol") from None
    try:
        validate(rendered.scenario, f"{path}: {where}")
    except ScenarioError as exc:
        raise DwsInputError(str(exc), "", "invalid scenario") from None
    text = json.dumps([rendered.prompt, rendered.scenario], ensure_ascii=False)
    for lit in FORBIDDEN_LITERALS:
        if lit in text:
            raise DwsInputError(path, where, f"contains the fixed evaluation name {lit!r} (D1 §9.1)")


def load_layer(layer: str, root: Path | None = None) -> list[AgentCase]:
    """Every case of the ``observed`` or ``holdout`` layer (files sorted by name), checked against the manifest."""
    folder = agent_root(root) / layer
    if not folder.is_dir():
        raise DwsInputError(folder, "", f"agent case layer {layer!r} not found (set DWS_DATASETS_DIR)")
    cases = [c for p in sorted(folder.glob("*.json")) for c in load_file(p, layer)]
    manifest = folder / "manifest.toml"
    if manifest.is_file():
        problems = check_manifest(cases, load_manifest(manifest))
        if problems:
            raise DwsInputError(manifest, "$", "; ".join(problems))
    return cases


def check_manifest(cases: list[AgentCase], manifest: dict[str, Any]) -> list[str]:
    """Where the cases differ from what the manifest pins: the case count and the replays per D1 class."""
    problems = []
    want = manifest.get("cases")
    if want is not None and len(cases) != want:
        problems.append(f"cases: the files hold {len(cases)}, the manifest pins {want}")
    pinned = manifest.get("replays", {})
    groups: dict[str, int] = {}
    for c in cases:
        groups[c.group] = groups.get(c.group, 0) + c.replays
    for group, n in sorted(pinned.get("groups", {}).items()):
        if groups.get(group, 0) != n:
            problems.append(f"replays of {group!r}: the files give {groups.get(group, 0)}, the manifest pins {n}")
    total = pinned.get("total")
    if total is not None and sum(groups.values()) != total:
        problems.append(f"replays: the files give {sum(groups.values())}, the manifest pins {total}")
    return problems
