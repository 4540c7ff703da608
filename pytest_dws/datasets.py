"""The three datasets of D1 §9.2 as data: observed, variant (generated) and safety holdout.

A case is a command line, a fake-backend scenario and the expected outcome, never code. Files live under
``fixtures/scenarios/<dataset>/*.json`` (override the root with env ``DWS_DATASETS_DIR``); one file holds
one failure pattern::

    {"pattern": "ambiguous_same_name", "group": "ambiguous_same_name", "doc": "D1 §1, §6", "weight": 37,
     "symbols": {"name_a": "评审群甲", "cid_a": "cidOBSamb0000001"},
     "world": {...fake_mcp world...},
     "cases": [{"id": "members", "argv": ["chat", "+chat-members-list", "--group", "{{name_a}}"],
                "overrides": [...], "dims": {"target_input": "same_name"},
                "expect": {"class": "expected_resolution_stop", "business_calls": 0}}]}

``{{symbol}}`` placeholders are replaced in argv, world, overrides and expect; the symbol's key prefix
(``cid_``, ``name_``, ``kw_``, ``text_``, ``trace_``, ``odid_``) says what it is, so every run can swap in
random synthetic values (FIT-NO-OVERFIT: nothing may depend on a fixed name or CID). The file's weight is
the count D1 gives for the pattern, split into whole numbers over its cases (:func:`case_weights`);
``manifest.toml`` beside the files pins the totals. The variant dataset is generated (end of this module):
hypothesis strategies over the D1 §9.3 matrix whose vocabulary (commands, target spellings, injected errors) is data in
``fixtures/scenarios/variant/matrix.json``; the expected outcome follows from the matrix point.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import string
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_dws.errors import DwsInputError
from pytest_dws.judge import CLASSES, FAILURE_CLASSES, Judgement, Outcome, judge, looks_like_cid

DATASETS = ("observed", "variant", "holdout")
SYMBOL_KINDS = ("cid", "name", "kw", "text", "trace", "odid")
EXPECT_KEYS = {"class", "reason", "stage", "origin", "target", "business_calls", "search_calls", "writes",
               "result", "trace_id", "misleading_recovery", "call", "exit_code", "or"}
DIMS = ("target_input", "entry", "command_type", "backend_error", "stage", "result")
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
#: Literals no dataset may contain (D1 §9.1: no fitting to the evaluation's fixed groups).
FORBIDDEN_LITERALS = ("dws测试群01", "dws测试群02")


def default_root() -> Path:
    """Where the dataset files live: ``$DWS_DATASETS_DIR``, else the shipped :func:`scenarios_root`."""
    env = os.environ.get("DWS_DATASETS_DIR")
    return Path(env) if env else scenarios_root()


def scenarios_root() -> Path:
    """The shipped scenario files: the repository's ``fixtures/scenarios`` (a checkout or an editable
    install), else the copy inside the wheel (``pytest_dws/_scenarios``)."""
    here = Path(__file__).resolve().parent
    checkout = here.parent / "fixtures" / "scenarios"
    return checkout if checkout.is_dir() else here / "_scenarios"


# -- symbols --------------------------------------------------------------------------------------------
def symbol_kind(key: str) -> str:
    """``cid_a`` -> ``cid``; the prefix decides how a random replacement is drawn."""
    kind = key.split("_", 1)[0]
    if kind not in SYMBOL_KINDS:
        raise ValueError(f"symbol {key!r}: the prefix must be one of {', '.join(SYMBOL_KINDS)}")
    return kind


def render(value: Any, symbols: dict[str, str]) -> Any:
    """``value`` with every ``{{key}}`` replaced (recursively); an unknown key is a KeyError naming it."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: symbols[m.group(1)], value)
    if isinstance(value, list):
        return [render(v, symbols) for v in value]
    if isinstance(value, dict):
        return {render(k, symbols): render(v, symbols) for k, v in value.items()}
    return value


_NAME_CHARS = "星河松竹梅兰晨曦远航启明青禾北辰云帆锦程朝阳知行致远"
_NAME_TAIL = string.ascii_letters + string.digits + "-_·" + _NAME_CHARS
_ID_CHARS = string.ascii_letters + string.digits


def random_value(kind: str, rng: random.Random, role: int) -> str:
    """One synthetic value; ``role`` (a distinct small int per symbol) keeps values pairwise unrelated.

    Names start with a CJK character (never ``cid``) and end with a per-role marker that occurs nowhere
    else, so no name is a substring of another one (search_groups matches substrings).
    """
    marker = _ROLE_MARKERS[role % len(_ROLE_MARKERS)]
    if kind == "cid":
        return "cid" + marker[1] + "".join(rng.choice(_ID_CHARS) for _ in range(rng.randint(10, 22)))
    if kind == "name":
        return rng.choice(_NAME_CHARS) + "".join(rng.choice(_NAME_TAIL) for _ in range(rng.randint(1, 6))) + marker[0]
    if kind == "kw":
        return "".join(rng.choice(_NAME_CHARS) for _ in range(rng.randint(1, 3))) + marker[0] + str(role)
    if kind == "text":
        return "通知" + "".join(rng.choice(_NAME_TAIL) for _ in range(rng.randint(3, 12)))
    if kind == "trace":
        return "trace-" + "".join(rng.choice(_ID_CHARS) for _ in range(16))
    return "odid-" + "".join(rng.choice(_ID_CHARS) for _ in range(12))


#: (name marker, cid marker) per role; the name markers appear in no other generated text.
_ROLE_MARKERS = [("甲", "A"), ("乙", "B"), ("丙", "C"), ("丁", "D"), ("戊", "E"), ("己", "F"), ("庚", "G"),
                 ("辛", "H"), ("壬", "J"), ("癸", "K"), ("子", "L"), ("丑", "M")]


def random_symbols(symbols: dict[str, str], rng: random.Random) -> dict[str, str]:
    """The same keys with fresh random values of the same kind (distinct per key)."""
    return {key: random_value(symbol_kind(key), rng, role) for role, key in enumerate(sorted(symbols))}


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
    own = [c.get("weight") if isinstance(c, dict) else None for c in cases]
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
            world=raw.get("world", data.get("world", {})),
            overrides=tuple(data.get("overrides", [])) + tuple(raw.get("overrides", [])),
            expect=expect, dims={**data.get("dims", {}), **raw.get("dims", {})}, symbols=dict(symbols),
            source=str(path), requires=raw.get("requires", data.get("requires")),
        )
        _validate_case(path, where, case)
        cases.append(case)
    return cases


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
    from fake_mcp import ScenarioError, validate

    try:
        argv, scenario, _ = case.instantiate()
    except KeyError as exc:
        raise _fail(path, where, f"placeholder {{{{{exc.args[0]}}}}} has no symbol") from None
    try:
        validate(scenario, f"{path}: {where}")
    except ScenarioError as exc:
        raise DwsInputError(str(exc), "", "invalid scenario") from None
    text = json.dumps([argv, scenario], ensure_ascii=False)
    for lit in FORBIDDEN_LITERALS:
        if lit in text:
            raise _fail(path, where, f"contains the fixed evaluation name {lit!r} (D1 §9.1)")


def load_dataset(name: str, root: Path | None = None) -> list[Case]:
    """Every case of ``observed`` or ``holdout`` (files sorted by name), weights checked against the manifest."""
    folder = (root or default_root()) / name
    if not folder.is_dir():
        raise DwsInputError(folder, "", f"dataset {name!r} not found (set DWS_DATASETS_DIR)")
    cases = [c for p in sorted(folder.glob("*.json")) for c in load_cases(p, name)]
    manifest = folder / "manifest.toml"
    if manifest.is_file():
        problems = check_weights(cases, load_manifest(manifest))
        if problems:
            raise DwsInputError(manifest, "$.weights", "; ".join(problems))
    return cases


def load_manifest(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise DwsInputError(path, "$", f"not valid TOML ({exc})") from None


def check_weights(cases: Iterable[Case], manifest: dict[str, Any]) -> list[str]:
    """Problems where the case files' weights differ from the counts the manifest pins (per group, total)."""
    weights = manifest.get("weights", {})
    by_group: dict[str, int] = {}
    for c in cases:
        by_group[c.group] = by_group.get(c.group, 0) + c.weight
    problems = [f"group {g!r}: files weigh {by_group.get(g, 0)}, manifest pins {n}"
                for g, n in sorted(weights.get("groups", {}).items()) if by_group.get(g, 0) != n]
    problems += [f"group {g!r} has case files but no manifest entry"
                 for g in sorted(set(by_group) - set(weights.get("groups", {})))]
    total = weights.get("total")
    if total is not None and sum(by_group.values()) != total:
        problems.append(f"total: files weigh {sum(by_group.values())}, manifest pins {total}")
    return problems


# -- evaluation -------------------------------------------------------------------------------------------
@dataclass
class CaseResult:
    """A case run and judged: the verdict, what differed from the expectation, and the metric flags."""

    case: Case
    argv: list[str]
    expect: dict[str, Any]
    judgement: Judgement
    problems: list[str] = field(default_factory=list)
    flags: dict[str, Any] = field(default_factory=dict)
    not_applicable: str | None = None  # the case needs a capability the implementation lacks (reason)

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.case.id, "argv": self.argv, "expected": self.expect.get("class"),
                "judged": self.judgement.klass, "rule": self.judgement.evidence.get("rule"),
                "problems": self.problems, "weight": self.case.weight, "not_applicable": self.not_applicable}


def evaluate(case: Case, argv: list[str], expect: dict[str, Any], judgement: Judgement,
             calls: list[dict[str, Any]] | None = None) -> CaseResult:
    """Compare one judgement with the case's expectation; every mismatch is one typed problem line.

    ``calls`` are the recorded tool calls (dicts with ``tool`` and ``arguments``), needed by ``expect.call``.
    ``expect.or``: alternative outcomes that conform as well (each a partial expectation laid over the main
    one), e.g. a read whose transient failure may be retried once or surfaced (D1 §3.2 "最多…重试一次").
    """
    main = _evaluate(case, argv, {k: v for k, v in expect.items() if k != "or"}, judgement, calls)
    if main.passed:
        return main
    for alt in expect.get("or") or []:
        base = {k: v for k, v in expect.items() if k not in ("or", *alt)}
        other = _evaluate(case, argv, {**base, **{k: v for k, v in alt.items() if v is not None}}, judgement, calls)
        if other.passed:
            return other
    return main


def _evaluate(case: Case, argv: list[str], expect: dict[str, Any], judgement: Judgement,
              calls: list[dict[str, Any]] | None = None) -> CaseResult:
    ev, want = judgement.evidence, expect
    problems: list[str] = []

    def check(name: str, actual: Any) -> None:
        if name in want and want[name] != actual:
            problems.append(f"{name}: expected {want[name]!r}, got {actual!r}")

    # A partial result whose failure entries carry no reason: its class is not observable from typed fields
    # (e81's page ledger records {stage, cursor, error}); the partial itself is judged below ("result").
    untyped_partial = want.get("result") == "partial" and ev.get("rule") == "partial-result" \
        and not ev.get("failure_reasons")
    if judgement.klass != want["class"] and not untyped_partial:
        problems.append(f"class: expected {want['class']}, judged {judgement.klass} ({ev.get('rule')})")
    for name in ("reason", "stage", "origin", "trace_id"):
        check(name, ev.get(name))
    for name in ("business_calls", "search_calls", "writes", "exit_code"):
        check(name, ev.get(name))
    if "misleading_recovery" in want and bool(ev.get("misleading_recovery")) != want["misleading_recovery"]:
        problems.append(f"misleading_recovery: expected {want['misleading_recovery']}, "
                        f"got {bool(ev.get('misleading_recovery'))}")
    target = want.get("target")
    allowed = {target} if target else set()
    wrong_selection = sorted(set(ev.get("targets", [])) - allowed)
    wrong_writes = sorted(set(ev.get("write_targets", [])) - allowed)
    if "writes" in want and want["writes"] == 0 and ev.get("writes"):
        wrong_writes = wrong_writes or ["<write despite expected none>"]
    if wrong_selection:
        problems.append(f"wrong selection: business calls targeted {wrong_selection}, expected {target!r}")
    if target and judgement.klass == "clean" and target not in ev.get("targets", []):
        problems.append(f"target: {target!r} never reached a business call")
    for name in ("names_in_id", "cids_searched"):
        if ev.get(name):
            problems.append(f"{name}: {ev[name]}")
    if ev.get("duplicate_writes"):
        problems.append(f"duplicate writes: {ev['duplicate_writes']}")
    result_ok = _result_truthful(want.get("result"), ev)
    if result_ok is False:
        problems.append(f"result: expected {want['result']}, output complete={ev.get('complete')!r} "
                        f"failedCount={ev.get('failedCount')!r}")
    problems += _call_problems(want.get("call"), calls or [])
    expected_ok = want["class"] in ("clean", "recovered_infrastructure_error") or want.get("result") == "partial"
    false_success = bool(ev.get("false_success")) or (
        judgement.evidence.get("exit_code") == 0 and not expected_ok) or (
        want.get("result") == "partial" and ev.get("complete") is True)
    if false_success and not any(p.startswith("class") for p in problems):
        problems.append("false success: exit 0 / complete although the expected outcome is a failure or stop")
    flags = {
        "wrong_selection": bool(wrong_selection), "wrong_write": bool(wrong_writes),
        "duplicate_writes": int(ev.get("duplicate_writes") or 0), "false_success": false_success,
        # None: not observable (an untyped partial), left out of the classification accuracy
        "class_ok": None if untyped_partial else judgement.klass == want["class"],
        "reason_ok": want.get("reason") in (None, ev.get("reason")),
        "result_truthful": result_ok, "trace_linked": None if "trace_id" not in want else
        ev.get("trace_id") == want["trace_id"],
        "target_ok": None if not target else (target in ev.get("targets", []) and not wrong_selection
                                              and not ev.get("names_in_id")),
        "unexpected_contract_error": judgement.klass == "request_contract_error" != want["class"],
        "accepted_first_try": ev.get("reason") not in ("unknown_flag", "unknown_command", "parameter_conflict",
                                                       "flag_conflict"),
        "failure": judgement.klass in FAILURE_CLASSES,
    }
    return CaseResult(case, argv, expect, judgement, problems, flags)


def _result_truthful(want: str | None, ev: dict[str, Any]) -> bool | None:
    if want == "complete":  # nothing failed; a single page may still say complete:false with hasMore
        return not ev.get("reported_failures")
    if want == "partial":
        return ev.get("complete") is False and bool(ev.get("reported_failures"))
    return None


def _call_problems(spec: dict[str, Any] | None, calls: list[dict[str, Any]]) -> list[str]:
    """``expect.call``: some recorded call of ``tool`` carries the given arguments (a subset)."""
    if not spec:
        return []
    for rec in calls:
        args = rec.get("arguments") or {}
        if rec.get("tool") == spec["tool"] and all(args.get(k) == v for k, v in spec.get("arguments", {}).items()):
            return []
    return [f"call: no {spec['tool']} call with arguments {spec.get('arguments', {})}"]


def run_cases(ctx: Any, cases: Iterable[Case]) -> list[CaseResult]:
    """Run cases against the implementation under test, each on a fresh fake backend (in parallel on the
    runner's pool of servers), and judge them; results in the order given."""
    from pytest_dws.target import Job

    rendered = [(c, *c.instantiate()) for c in cases]
    invs = ctx.cli().run_jobs([Job(tuple(argv), scenario) for _, argv, scenario, _ in rendered])
    out = []
    for (case, argv, _, expect), inv in zip(rendered, invs, strict=True):
        outcome = Outcome.from_invocation(inv)
        calls = [dict(r) for r in outcome.transcript if r.get("rpc_method") == "tools/call"]
        result = evaluate(case, argv, expect, judge(outcome), calls)
        reason = _unsupported(case, result)
        if reason:
            result.not_applicable, result.problems = reason, []
        out.append(result)
    return out


#: Optional capabilities a case may require, and how their absence shows (D1 §9.2: cross-profile IDs): an
#: implementation without --profile rejects the flag; one with it but without the named profile configured
#: (the suite cannot configure profiles of an implementation) refuses before any request.
REQUIREMENTS = {"multi_profile": "the implementation has no --profile flag, or no second profile is configured "
                                 "for it (it refused --profile before any request: exit {exit}, reason {reason})"}


def _unsupported(case: Case, result: CaseResult) -> str | None:
    """Why a case with ``requires`` does not apply to this implementation (None: it applies)."""
    if case.requires is None:
        return None
    if case.requires not in REQUIREMENTS:
        return f"unknown requirement {case.requires!r}"
    ev = result.judgement.evidence
    refused = ev.get("reason") == "unknown_flag" or (ev.get("exit_code") not in (0, None) and not ev.get("calls"))
    return REQUIREMENTS[case.requires].format(exit=ev.get("exit_code"), reason=ev.get("reason")) if refused else None


def copy_case(case: Case, **changes: Any) -> Case:
    """A modified copy (deep-copied templates), for generated cases."""
    return replace(case, world=copy.deepcopy(case.world), **changes)


# -- the variant matrix (D1 §9.3) ------------------------------------------------------------------------
INFRA_ERRORS = ("rate_limit", "internal_dependency")
_CID_OF = {"unique_name": "name_a", "fuzzy_name": "name_a", "same_name": "name_a", "zero_hits": "name_z",
           "cid": "cid_a"}


@dataclass(frozen=True)
class Point:
    """One point of the matrix. ``stage`` is where the backend error is injected (``none`` without one)."""

    command: str
    target_input: str
    entry: str
    spelling: int
    backend_error: str
    stage: str
    transient: bool = False
    order: tuple[int, ...] | None = None


class Matrix:
    """The variant vocabulary of ``matrix.json`` with the rules of which points are meaningful."""

    def __init__(self, data: dict[str, Any], source: str = "matrix.json") -> None:
        self.data, self.source = data, source
        self.commands: dict[str, dict[str, Any]] = data["commands"]
        self.errors: dict[str, dict[str, Any]] = data["errors"]
        self.dimensions: dict[str, list[str]] = data["dimensions"]

    @classmethod
    def load(cls, root: Path | None = None) -> Matrix:
        path = (root or default_root()) / "variant" / "matrix.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DwsInputError(path, "$", f"not a readable JSON file ({exc})") from None
        for key in ("commands", "errors", "dimensions", "symbols"):
            if not isinstance(data.get(key), (dict, list)):
                raise DwsInputError(path, f"$.{key}", "missing")
        return cls(data, str(path))

    def spellings(self, command: str, entry: str, kind: str) -> list[dict[str, Any]]:
        """Target spellings ``{"flags": [...], "path": [...]?}`` of an entry for a value kind."""
        raw = self.commands[command]["entries"].get(entry, {}).get(kind, [])
        return [s if isinstance(s, dict) else {"flags": s} for s in raw]

    def stages(self, command: str, error: str) -> list[str]:
        """Where ``error`` can be injected for ``command``."""
        if error == "none":
            return ["none"]
        spec = self.errors[error]
        stages = list(spec.get("stages", ["metadata", "execution", "later_page"]))
        if "later_page" not in self.commands[command]:
            stages = [s for s in stages if s != "later_page"]
        return stages

    def entries(self, command: str, kind: str) -> list[str]:
        return [e for e in self.dimensions["entry"] if self.spellings(command, e, kind)]

    def valid(self, p: Point) -> bool:
        kind = "cid" if p.target_input == "cid" else "name"
        return (p.entry in self.entries(p.command, kind) and p.spelling < len(self.spellings(p.command, p.entry, kind))
                and p.stage in self.stages(p.command, p.backend_error)
                and (not p.transient or (p.backend_error in INFRA_ERRORS and p.stage != "metadata")))


def expected_for(matrix: Matrix, p: Point) -> tuple[dict[str, Any], dict[str, Any]]:
    """(expect, dims) of a point: the oracle of the variant dataset (templates, rendered per case)."""
    cmd = matrix.commands[p.command]
    ctype = cmd["type"]
    writes = ctype != "read"
    dims = {"command": p.command, "target_input": p.target_input, "entry": p.entry, "command_type": ctype,
            "backend_error": p.backend_error, "stage": p.stage, "transient": p.transient}
    if p.entry == "conflict" or p.target_input in ("same_name", "zero_hits"):
        dims.update(stage="before_call", result="fail_closed")
        if p.entry == "conflict":
            return {"class": "request_contract_error", "business_calls": 0, "search_calls": 0, "writes": 0}, dims
        reason = "resolution_ambiguous" if p.target_input == "same_name" else "resolution_not_found"
        return {"class": "expected_resolution_stop", "reason": reason, "business_calls": 0, "search_calls": 1,
                "writes": 0}, dims
    expect: dict[str, Any] = {"target": "{{cid_a}}", "search_calls": 0 if p.target_input == "cid" else 1}
    if writes:
        expect["writes"] = 1  # a write is never retried, whatever the failure (D1 §3.2)
    if p.backend_error == "none":
        dims["result"] = "complete"
        return {**expect, "class": "clean", "result": "complete"}, dims
    err = matrix.errors[p.backend_error]
    if err.get("trace") and not (p.transient and not writes):
        expect["trace_id"] = "{{trace_a}}"
    if p.transient and not writes:
        dims["result"] = "retry_recovered"
        expect.pop("trace_id", None)
        # D1 §3.2: a read MAY be retried at most once; surfacing the failure, classified, conforms too.
        surfaced: dict[str, Any] = {"class": err["class"], "result": "partial" if p.stage == "later_page" else None}
        if p.stage != "later_page":
            surfaced.update({k: err[k] for k in ("reason",) if k in err})
        return {**expect, "class": "recovered_infrastructure_error", "result": "complete", "or": [surfaced]}, dims
    expect["class"] = err["class"]
    if p.stage == "later_page":
        dims["result"] = "partial"
        expect.pop("trace_id", None)
        return {**expect, "result": "partial"}, dims
    dims["result"] = "fail_closed"
    for key in ("reason", "stage"):
        if key in err:
            expect[key] = err[key]
    if p.stage == "metadata" and "metadata_stage" in err:
        expect["stage"] = err["metadata_stage"]
    return expect, dims


def arg_groups(matrix: Matrix, p: Point) -> tuple[list[str], list[list[str]]]:
    """(command path, flag groups) of a point before ordering; each group keeps a flag with its value."""
    cmd = matrix.commands[p.command]
    kind = "cid" if p.target_input == "cid" else "name"
    spelling = matrix.spellings(p.command, p.entry, kind)[p.spelling]
    value = "{{" + _CID_OF[p.target_input] + "}}"
    groups = [[flag, value] for flag in spelling["flags"]] + [list(g) for g in cmd["args"]]
    if p.stage == "later_page":
        groups += [list(g) for g in cmd["later_page"].get("args", [])]
    return list(spelling.get("path", cmd["path"])), groups


def build_case(matrix: Matrix, p: Point, symbols: dict[str, str]) -> Case:
    """The case of one matrix point (argv in the point's flag order, world, injected fault, expectation)."""
    cmd = matrix.commands[p.command]
    path, groups = arg_groups(matrix, p)
    order = p.order if p.order is not None else tuple(range(len(groups)))
    argv = path + [tok for i in order for tok in groups[i]]
    start = int(matrix.data["world"]["messages_from_ms"])
    title = "{{name_a}}" + (matrix.data["world"]["fuzzy_suffix"] if p.target_input == "fuzzy_name" else "")
    target = {"cid": "{{cid_a}}", "title": title,
              "members": [{"name": f"成员{i}", "openDingtalkId": f"odid-v{i}"} for i in range(5)],
              "messages": [{"openMessageId": f"msg-v{i}", "sender": "odid-v0", "content": f"记录{{{{kw_a}}}}{i}",
                            "createTime": start + i * 1000} for i in range(5)]}
    groups_w = [target, {"cid": "{{cid_b}}", "title": "{{name_b}}"}]
    if p.target_input == "same_name":
        groups_w.append({"cid": "{{cid_c}}", "title": "{{name_a}}"})
    world: dict[str, Any] = {"groups": groups_w}
    overrides: list[dict[str, Any]] = []
    if p.backend_error != "none":
        err = matrix.errors[p.backend_error]
        reply = copy.deepcopy(err["metadata_reply"] if p.stage == "metadata" and "metadata_reply" in err
                              else err["reply"])
        if p.stage == "metadata" and "metadata_reply" not in err:
            reply.setdefault("payload", {})["technical_detail"] = matrix.data["metadata_detail"]
        if p.stage == "later_page":
            lp = cmd["later_page"]
            world["page_sizes"] = dict(lp["page_sizes"])
            ov: dict[str, Any] = {"tool": lp["tool"], "reply": reply}
            ov.update({"call": 2} if p.transient else {"page": 2})
        else:
            ov = {"tool": cmd["business"], "reply": reply}
            if p.transient:
                ov["call"] = 1
        overrides.append(ov)
    expect, dims = expected_for(matrix, p)
    label = f"{p.command}:{p.target_input}:{p.entry}{p.spelling}:{p.backend_error}@{p.stage}" + (
        ":transient" if p.transient else "")
    return Case(id=f"variant/{label}", dataset="variant", pattern=p.command, group=p.command,
                doc=str(matrix.data["doc"]), weight=1, argv=tuple(argv), world=world, overrides=tuple(overrides),
                expect=expect, dims=dims, symbols=dict(symbols), source=matrix.source)


def covering_points(matrix: Matrix) -> list[Point]:
    """A deterministic set covering, for EVERY command, each target input, entry spelling, backend error,
    stage and result at least once. Factors are combined (the k-th error point gets the k-th resolvable target
    input and spelling) to keep the set small; spellings no error point drew are added afterwards."""
    out: list[Point] = []
    resolvable = [t for t in matrix.dimensions["target_input"] if t not in ("same_name", "zero_hits")]
    for name in sorted(matrix.commands):
        errors = [("none", "none", False)] + [(e, s, False) for e in matrix.errors for s in matrix.stages(name, e)]
        errors += [(e, s, True) for e in INFRA_ERRORS for s in matrix.stages(name, e) if s != "metadata"]
        spellings = {kind: [(e, i) for e in matrix.entries(name, kind) if e != "conflict"
                            for i in range(len(matrix.spellings(name, e, kind)))] for kind in ("name", "cid")}
        used: set[tuple[str, str, int]] = set()
        for k, (error, stage, transient) in enumerate(errors):
            target = resolvable[k % len(resolvable)]
            kind = "cid" if target == "cid" else "name"
            entry, i = spellings[kind][(k // len(resolvable)) % len(spellings[kind])]
            used.add((kind, entry, i))
            out.append(Point(name, target, entry, i, error, stage, transient))
        for kind, target in (("name", "unique_name"), ("cid", "cid")):
            out += [Point(name, target, e, i, "none", "none") for e, i in spellings[kind] if (kind, e, i) not in used]
            out += [Point(name, target, "conflict", i, "internal_dependency", "execution")
                    for i in range(len(matrix.spellings(name, "conflict", kind)))]
        out += [Point(name, t, "canonical", 0, "param", "execution") for t in ("same_name", "zero_hits")]
    unique: dict[Point, None] = {}
    for p in out:
        if matrix.valid(p):
            unique.setdefault(p, None)
    return list(unique)


def coverage(results: Iterable[CaseResult], matrix: Matrix) -> dict[str, Any]:
    """Per command, which values of each dimension ran, and which were missing."""
    seen: dict[str, dict[str, set[str]]] = {}
    for r in results:
        d = r.case.dims
        per = seen.setdefault(str(d.get("command")), {k: set() for k in DIMS})
        for k in DIMS:
            if d.get(k) is not None:
                per[k].add(str(d[k]))
    missing = {}
    for name in sorted(matrix.commands):
        per = seen.get(name, {k: set() for k in DIMS})
        wanted = _wanted_values(matrix, name)
        gaps = {k: sorted(set(v) - per[k]) for k, v in wanted.items() if set(v) - per[k]}
        if gaps:
            missing[name] = gaps
    return {"commands": {n: {k: sorted(v) for k, v in per.items()} for n, per in sorted(seen.items())},
            "missing": missing}


def _wanted_values(matrix: Matrix, name: str) -> dict[str, list[str]]:
    cmd = matrix.commands[name]
    entries = sorted(set(matrix.entries(name, "name")) | set(matrix.entries(name, "cid")))
    stages = ["none", "before_call", "metadata", "execution"] + (["later_page"] if "later_page" in cmd else [])
    results = ["complete", "fail_closed"] + (["partial"] if "later_page" in cmd else []) + (
        ["retry_recovered"] if cmd["type"] == "read" else [])
    return {"target_input": matrix.dimensions["target_input"], "entry": entries,
            "command_type": [cmd["type"]], "backend_error": list(matrix.dimensions["backend_error"]),
            "stage": stages, "result": results}


# -- hypothesis strategies -----------------------------------------------------------------------------
def symbol_strategy(keys: Iterable[str]) -> Any:
    """Hypothesis strategy of symbol tables: synthetic names / CIDs / keywords, pairwise unrelated."""
    from hypothesis import strategies as st

    def one(role: int, key: str) -> Any:
        marker = _ROLE_MARKERS[role % len(_ROLE_MARKERS)]
        kind = symbol_kind(key)
        if kind == "cid":
            return st.text(_ID_CHARS, min_size=10, max_size=22).map(lambda t, m=marker: "cid" + m[1] + t)
        if kind == "name":
            return st.tuples(st.sampled_from(_NAME_CHARS), st.text(_NAME_TAIL, min_size=0, max_size=6)).map(
                lambda t, m=marker: t[0] + t[1] + m[0])
        if kind == "kw":
            return st.text(_NAME_CHARS, min_size=1, max_size=3).map(lambda t, m=marker, r=role: t + m[0] + str(r))
        if kind == "text":
            return st.text(_NAME_TAIL, min_size=1, max_size=16).map(lambda t: "通知" + t)
        if kind == "trace":
            return st.text(_ID_CHARS, min_size=8, max_size=24).map(lambda t: "trace-" + t)
        return st.text(_ID_CHARS, min_size=6, max_size=12).map(lambda t: "odid-" + t)

    keys = sorted(keys)
    return st.fixed_dictionaries({k: one(i, k) for i, k in enumerate(keys)})


def point_strategy(matrix: Matrix) -> Any:
    """Hypothesis strategy of valid matrix points, flag order included."""
    from hypothesis import strategies as st

    @st.composite
    def points(draw: Any) -> Point:
        name = draw(st.sampled_from(sorted(matrix.commands)))
        target = draw(st.sampled_from(matrix.dimensions["target_input"]))
        kind = "cid" if target == "cid" else "name"
        entry = draw(st.sampled_from(matrix.entries(name, kind)))
        spelling = draw(st.integers(0, len(matrix.spellings(name, entry, kind)) - 1))
        error = draw(st.sampled_from(matrix.dimensions["backend_error"]))
        stage = draw(st.sampled_from(matrix.stages(name, error)))
        transient = error in INFRA_ERRORS and stage != "metadata" and draw(st.booleans())
        p = Point(name, target, entry, spelling, error, stage, transient)
        n = len(arg_groups(matrix, p)[1])
        return replace(p, order=tuple(draw(st.permutations(list(range(n))))))

    return points()


def variant_case_strategy(matrix: Matrix) -> Any:
    """Hypothesis strategy of whole variant cases (point + random symbols)."""
    from hypothesis import strategies as st

    return st.builds(lambda p, s: build_case(matrix, p, s), point_strategy(matrix),
                     symbol_strategy(matrix.data["symbols"]))


def generate_variants(matrix: Matrix, examples: int, seed: int) -> list[Case]:
    """``examples`` random variant cases drawn by hypothesis with a fixed seed (same seed, same cases).

    Hypothesis only generates here (no shrinking): the cases then run in parallel like every other case.
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    out: list[Case] = []

    @hseed(seed)
    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(variant_case_strategy(matrix))
    def collect(case: Case) -> None:
        out.append(case)

    collect()
    return out[:examples]
