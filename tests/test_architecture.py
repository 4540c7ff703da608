"""The layout's rules, checked on the source so that a change that breaks one fails here, by name.

- The runtime import graph of ``pytest_dws`` and ``fake_mcp`` has no cycle (function-level imports count), and
  neither has the typed one (``if TYPE_CHECKING:`` blocks too: a type named across a cycle ties the layers as
  much as an import does; issue 37 (7) broke launch -> profile -> core.protocols -> launch).
- The packages are the layers of docs/architecture.md (:data:`LAYERS`): a module imports its own layer and the
  layers below it, never one above; every package's ``__init__`` says its job; the top level stays small.
- Gate modules never import each other; shared machinery lives outside ``pytest_dws/gates``.
- The data layer (``pytest_dws.inputs.catalog``) imports nothing above it; ``fake_mcp`` imports neither pytest nor the
  suite.
- No module is over 400 lines; gates and their machinery take a typed context (no ``ctx: Any``).
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("pytest_dws", "fake_mcp")
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(name: str, path: Path, modules: set[str] | None = None, *, typed: bool = False) -> set[str]:
    """Every module name ``path`` imports at run time (any depth of the file; under ``if TYPE_CHECKING:`` only when
    ``typed``). ``from pkg import sub`` names ``pkg.sub`` when that is a module of ``modules``, else ``pkg``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = set() if typed else {
        id(n) for top in tree.body if isinstance(top, ast.If) and "TYPE_CHECKING" in ast.unparse(top.test)
        for n in ast.walk(top)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if modules is not None and sub in modules else base)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def _graph(*, typed: bool = False) -> dict[str, set[str]]:
    """module -> the suite's modules it imports (a name resolves to the longest module prefix it names)."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps = set()
        for imported in _imports(name, path, set(mods), typed=typed):
            while imported and imported not in mods:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                deps.add(imported)
        graph[name] = deps
    return graph


@pytest.mark.parametrize("typed", [False, True], ids=["runtime", "typed"])
def test_the_import_graph_has_no_cycle(typed: bool) -> None:
    graph = _graph(typed=typed)
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}", pytrace=False)
    assert len(order) == len(graph) > 100


def test_gate_modules_never_import_each_other() -> None:
    graph = _graph()
    gates = {m for m in graph if m.startswith("pytest_dws.gates.")}
    bad = {m: sorted(d & gates) for m, d in graph.items() if m in gates and d & gates}
    assert not bad, f"gate modules importing gate modules (move the shared part out of gates/): {bad}"
    outside = {m: sorted(d & gates) for m, d in graph.items()
               if m not in gates and m != "pytest_dws.gates" and d & gates}
    assert not outside, f"machinery importing a gate module (use the registry, pytest_dws.registry.find): {outside}"


#: The layers, top first: a module may import its own layer and those below it (docs/architecture.md).
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("entry points", frozenset({"pytest_dws", "pytest_dws.__main__", "pytest_dws.plugin", "pytest_dws.fixtures",
                                "pytest_dws.hookspecs", "pytest_dws.cli"})),
    ("pytest session", frozenset({"pytest_dws.session"})),
    ("gates", frozenset({"pytest_dws.gates"})),
    ("observation machinery", frozenset({"pytest_dws.observe"})),
    ("public assertions", frozenset({"pytest_dws.assertions"})),
    ("verdict and registry", frozenset({"pytest_dws.verdict", "pytest_dws.registry"})),
    ("launcher", frozenset({"pytest_dws.launch"})),
    ("release inputs", frozenset({"pytest_dws.inputs"})),
    ("core leaves", frozenset({"pytest_dws.core"})),
    ("fake backend", frozenset({"fake_mcp"})),
)


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the package that holds ``module`` (its first two name parts)."""
    parts = module.split(".")
    package = "fake_mcp" if parts[0] == "fake_mcp" else ".".join(parts[:2])
    for rank, (_, members) in enumerate(LAYERS):
        if package in members:
            return rank
    raise AssertionError(f"{module} is in no layer of LAYERS: give its package a layer (docs/architecture.md)")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} ({LAYERS[layer_of(m)][0]}) -> {d} ({LAYERS[layer_of(d)][0]})"
                  for m, deps in graph.items() for d in deps if layer_of(d) < layer_of(m))


def test_layers_point_down() -> None:
    up = upward_imports(_graph())
    assert not up, "imports pointing up a layer (move the shared part down):\n" + "\n".join(up)


def test_the_layer_check_catches_an_upward_import() -> None:
    graph = _graph()
    graph["pytest_dws.core.errors"] = graph["pytest_dws.core.errors"] | {"pytest_dws.session.run"}
    assert upward_imports(graph) == ["pytest_dws.core.errors (core leaves) -> pytest_dws.session.run (pytest session)"]


def test_the_fake_server_imports_neither_pytest_nor_the_suite() -> None:
    fake = {m: sorted(i for i in _imports(m, p) if i.split(".")[0] in ("pytest", "_pytest", "pytest_dws"))
            for m, p in _modules().items() if m.startswith("fake_mcp")}
    assert not any(fake.values()), f"fake_mcp must be usable without pytest and the suite: {fake}"


def test_every_package_says_its_job_and_the_top_level_stays_small() -> None:
    silent = [str(p.relative_to(REPO)) for pkg in PACKAGES for p in (REPO / pkg).rglob("__init__.py")
              if ast.get_docstring(ast.parse(p.read_text(encoding="utf-8"))) is None]
    assert not silent, f"packages without a docstring saying their job: {silent}"
    top = sorted(p.name for p in (REPO / "pytest_dws").iterdir() if p.name not in ("__pycache__", "gates"))
    assert len(top) <= 15, f"pytest_dws/ holds {len(top)} entries besides gates/: {top}"
    crowded = {str(d.relative_to(REPO)): n for d in (REPO / "pytest_dws").rglob("*") if d.is_dir()
               and (n := len(list(d.glob("*.py")))) > 13}
    assert not crowded, f"folders over 12 modules (besides __init__): {crowded}"


@pytest.mark.parametrize("root", ["pytest_dws", "fake_mcp", "fixtures/reference", "tests", "bench"])
def test_no_module_is_over_400_lines(root: str) -> None:
    long = {str(p.relative_to(REPO)): n for p in (REPO / root).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by job): {long}"


def test_gates_take_a_typed_context() -> None:
    untyped = [f"{p.relative_to(REPO)}:{i}" for p in (REPO / "pytest_dws").rglob("*.py")
               for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if "ctx: Any" in line
               and p.name not in ("context.py", "protocols.py")]
    assert not untyped, f"type ctx as pytest_dws.core.protocols.GateContext: {untyped}"
