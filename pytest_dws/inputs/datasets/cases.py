"""Loading the dataset files: cases, their weights (D1's counts in whole calls), the manifest that pins totals."""

from __future__ import annotations

import copy
import json
import os
import random
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from pytest_dws.core.errors import DwsInputError
from pytest_dws.core.outcome import CLASSES, looks_like_cid
from pytest_dws.inputs.datasets.symbols import random_symbols, render, symbol_kind

DATASETS = ("observed", "variant", "holdout")
T = TypeVar("T")

EXPECT_KEYS = {"class", "reason", "stage", "origin", "target", "business_calls", "search_calls", "writes",
               "result", "trace_id", "misleading_recovery", "call", "exit_code", "or"}


#: Literals no dataset may contain (D1 §9.1: no fitting to the evaluation's fixed groups).
FORBIDDEN_LITERALS = ("dws测试群01", "dws测试群02")


def default_root() -> Path:
    """Where the dataset files live: ``$DWS_DATASETS_DIR``, else the shipped :func:`scenarios_root`."""
    env = os.environ.get("DWS_DATASETS_DIR")
    return Path(env) if env else scenarios_root()


def scenarios_root() -> Path:
    """The shipped scenario files: the repository's ``fixtures/scenarios`` (a checkout or an editable
    install), else the copy inside the wheel (``pytest_dws/_scenarios``)."""
    here = Path(__file__).resolve().parents[2]  # the pytest_dws package
    checkout = here.parent / "fixtures" / "scenarios"
    return checkout if checkout.is_dir() else here / "_scenarios"


# -- cases ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One dataset case (templates unrendered); :meth:`instantiate` renders it with a symbol table."""

    id: str
    dataset: str
    pattern: str
    group: str
    doc: str
    weight: int  # failed calls this case stands for (D1's counts, whole numbers; see case_weights)
    argv: tuple[str, ...]
    world: dict[str, Any]
    overrides: tuple[dict[str, Any], ...]
    expect: dict[str, Any]
    dims: dict[str, Any]
    symbols: dict[str, str]
    source: str = ""
    requires: str | None = None
    #: The scenario's own profile names, in order (``multi_profile`` cases): the i-th is run as the i-th profile
    #: the release configures (its expectations' ``[profiles] selector``), so one file serves every release.
    profiles: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The case as plain JSON (a recording keeps generated cases: :meth:`from_json` reads them back)."""
        return {**self.__dict__, "argv": list(self.argv), "overrides": list(self.overrides),
                "profiles": list(self.profiles)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Case:
        return cls(**{**data, "argv": tuple(data["argv"]), "overrides": tuple(data["overrides"]),
                      "profiles": tuple(data.get("profiles", ()))})

    def instantiate(self, symbols: dict[str, str] | None = None) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        """(argv, scenario dict, expect) with every placeholder rendered."""
        table = self.symbols if symbols is None else symbols
        scenario = {"name": self.id.replace("/", "-"), "world": render(self.world, table),
                    "overrides": render(list(self.overrides), table)}
        return render(list(self.argv), table), scenario, render(self.expect, table)

    def randomised(self, rng: random.Random) -> Case:
        """The same case with fresh synthetic names, CIDs, keywords and trace IDs."""
        return replace(self, symbols=random_symbols(self.symbols, rng))


def _fail(source: Path | str, path: str, message: str) -> DwsInputError:
    return DwsInputError(source, path, message)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def case_weights(path: Path, data: dict[str, Any]) -> list[int]:
    """Whole-number weights, one per case: D1 counts failed *calls*, and a metric reads as calls (74 failed
    calls, not 1.5/1.5). A case may give its own ``weight``; they then add up to the file's. Else the file's
    weight (default: one per case) is split in file order, the first cases taking the remainder: 37 calls over
    5 cases are 8, 8, 7, 7, 7; a case beyond the count weighs 0 (judged, not counted)."""
    cases = data["cases"]
    if not cases:
        raise _fail(path, "$.cases", "expected at least one case")
    own: list[Any] = [c.get("weight") if isinstance(c, dict) else None for c in cases]
    total = data.get("weight")
    if total is not None and not _whole(total):
        raise _fail(path, "$.weight", f"expected a whole number of calls >= 0, got {total!r}")
    if any(w is not None for w in own):
        for i, w in enumerate(own):
            if not _whole(w):
                raise _fail(path, f"$.cases[{i}].weight", f"expected a whole number >= 0 (give every case a weight, "
                                                          f"or none), got {w!r}")
        if total is not None and sum(own) != total:
            raise _fail(path, "$.weight", f"the cases weigh {sum(own)}, the file says {total}")
        return [int(w) for w in own]
    if total is None:
        return [1] * len(cases)
    base, extra = divmod(total, len(cases))
    return [base + (1 if i < extra else 0) for i in range(len(cases))]


def load_cases(path: Path, dataset: str) -> list[Case]:
    """The cases of one pattern file; any defect is one line naming the file and the JSON path."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, "$", f"not a readable JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise _fail(path, "$", "expected an object with pattern, weight and cases")
    for key, kind in (("pattern", str), ("cases", list), ("doc", str)):
        if not isinstance(data.get(key), kind):
            raise _fail(path, f"$.{key}", f"expected a {kind.__name__}")
    weights = case_weights(path, data)
    symbols = data.get("symbols", {})
    for key, value in symbols.items():
        try:
            symbol_kind(key)
        except ValueError as exc:
            raise _fail(path, f"$.symbols.{key}", str(exc)) from None
        _check_value(path, f"$.symbols.{key}", symbol_kind(key), value)
    profiles = data.get("profiles", [])
    if not isinstance(profiles, list) or not all(isinstance(p, str) and p for p in profiles) \
            or len(set(profiles)) != len(profiles):
        raise _fail(path, "$.profiles", "expected a list of distinct profile names")
    cases = []
    for i, raw in enumerate(data["cases"]):
        where = f"$.cases[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            raise _fail(path, where, "expected an object with an 'id'")
        argv = raw.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise _fail(path, f"{where}.argv", "expected a non-empty list of strings")
        expect = raw.get("expect")
        if not isinstance(expect, dict) or expect.get("class") not in CLASSES:
            raise _fail(path, f"{where}.expect.class", f"expected one of {', '.join(CLASSES)}")
        unknown = sorted(set(expect) - EXPECT_KEYS)
        if unknown:
            raise _fail(path, f"{where}.expect.{unknown[0]}", f"unknown key; expected one of {sorted(EXPECT_KEYS)}")
        case = Case(
            id=f"{dataset}/{data['pattern']}/{raw['id']}", dataset=dataset, pattern=data["pattern"],
            group=str(data.get("group", data["pattern"])), doc=str(raw.get("doc", data["doc"])),
            weight=weights[i], argv=tuple(argv),
            world=dict(raw.get("world", data.get("world", {})) or {}),
            overrides=tuple(data.get("overrides", [])) + tuple(raw.get("overrides", [])),
            expect=expect, dims={**data.get("dims", {}), **raw.get("dims", {})}, symbols=dict(symbols),
            source=str(path), requires=raw.get("requires", data.get("requires")), profiles=tuple(profiles),
        )
        _validate_case(path, where, case)
        selected = profile_selected(case.argv)
        if selected is not None and selected not in case.profiles:
            raise _fail(path, f"{where}.argv", f"--profile {selected!r} is not one of the file's profiles "
                                               f"({case.profiles}): the suite could not map it onto a release's")
        cases.append(case)
    return cases


def profile_selected(argv: Iterable[str]) -> str | None:
    """The value of a case's ``--profile`` flag (None: the case selects no profile)."""
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--profile" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--profile="):
            return arg.split("=", 1)[1]
    return None


def _check_value(path: Path, where: str, kind: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise _fail(path, where, "expected a non-empty string")
    if kind == "cid" and not looks_like_cid(value):
        raise _fail(path, where, f"expected a synthetic CID (>= 12 chars starting with 'cid'), got {value!r}")
    if kind == "name" and value.lower().startswith("cid"):
        raise _fail(path, where, f"a natural name must not start with 'cid', got {value!r}")
    if any(lit in value for lit in FORBIDDEN_LITERALS):
        raise _fail(path, where, "the evaluation's fixed group names may not appear in a dataset (D1 §9.1)")


def _validate_case(path: Path, where: str, case: Case) -> None:
    """Render with the file's symbols and validate the scenario with fake_mcp's schema."""
    check_rendered(path, where, lambda: case.instantiate()[:2])


def check_rendered(path: Path | str, where: str, rendered: Callable[[], tuple[Any, dict[str, Any]]]) -> None:
    """A case rendered with its file's symbols (``rendered() -> (what the implementation or agent is given, the
    scenario)``): every placeholder has a symbol, the scenario is valid for fake_mcp, and neither holds a fixed
    evaluation name (D1 §9.1). Shared by the dataset cases and the agent evaluation's cases."""
    from fake_mcp import ScenarioError, validate

    try:
        given, scenario = rendered()
    except KeyError as exc:
        raise _fail(path, where, f"placeholder {{{{{exc.args[0]}}}}} has no symbol") from None
    try:
        validate(scenario, f"{path}: {where}")
    except ScenarioError as exc:
        raise DwsInputError(str(exc), "", "invalid scenario") from None
    text = json.dumps([given, scenario], ensure_ascii=False)
    for lit in FORBIDDEN_LITERALS:
        if lit in text:
            raise _fail(path, where, f"contains the fixed evaluation name {lit!r} (D1 §9.1)")


def load_dataset(name: str, root: Path | None = None) -> list[Case]:
    """Every case of ``observed`` or ``holdout`` (files sorted by name), weights checked against the manifest."""
    return load_folder((root or default_root()) / name, f"dataset {name!r}", lambda p: load_cases(p, name),
                       check_weights, "$.weights")


def load_folder(folder: Path, what: str, load: Callable[[Path], list[T]],
                check: Callable[[list[T], dict[str, Any]], list[str]], where: str = "$") -> list[T]:
    """The cases of every ``*.json`` file of ``folder`` (sorted by name), checked against the folder's
    ``manifest.toml`` when it has one (``check(cases, manifest) -> problems``); a missing folder or a problem is one
    input error. Shared by the datasets and the agent evaluation's layers."""
    if not folder.is_dir():
        raise DwsInputError(folder, "", f"{what} not found (set DWS_DATASETS_DIR)")
    cases = [c for p in sorted(folder.glob("*.json")) for c in load(p)]
    manifest = folder / "manifest.toml"
    if manifest.is_file():
        problems = check(cases, load_manifest(manifest))
        if problems:
            raise DwsInputError(manifest, where, "; ".join(problems))
    return cases


def load_manifest(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise DwsInputError(path, "$", f"not valid TOML ({exc})") from None


def check_weights(cases: Iterable[Case], manifest: dict[str, Any]) -> list[str]:
    """Problems where the case files' weights differ from the counts the manifest pins (per group, total)."""
    return check_pinned([(c.group, c.weight) for c in cases], manifest.get("weights", {}), "weigh")


def check_pinned(counts: Iterable[tuple[str, int]], pinned: dict[str, Any], verb: str) -> list[str]:
    """Problems where per-group counts of the case files (``(group, n)`` per case) differ from a manifest table's
    ``groups`` and ``total``: a group off, a group the table lacks, the total off. Shared by the datasets' weights
    and the agent evaluation's replayed failures."""
    by_group: dict[str, int] = {}
    for group, n in counts:
        by_group[group] = by_group.get(group, 0) + n
    problems = [f"group {g!r}: files {verb} {by_group.get(g, 0)}, manifest pins {n}"
                for g, n in sorted(pinned.get("groups", {}).items()) if by_group.get(g, 0) != n]
    problems += [f"group {g!r} has case files but no manifest entry"
                 for g in sorted(set(by_group) - set(pinned.get("groups", {})))]
    total = pinned.get("total")
    if total is not None and sum(by_group.values()) != total:
        problems.append(f"total: files {verb} {sum(by_group.values())}, manifest pins {total}")
    return problems


def copy_case(case: Case, **changes: Any) -> Case:
    """A modified copy (deep-copied templates), for generated cases."""
    return replace(case, world=copy.deepcopy(case.world), **changes)
