"""The variant dataset (D1 §9.3): the matrix of target spellings, commands and injected errors, the expected
outcome of each point, and hypothesis strategies that generate cases over it."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError
from pytest_dws.inputs.datasets.cases import Case, default_root
from pytest_dws.inputs.datasets.evaluate import CaseResult
from pytest_dws.inputs.datasets.symbols import ID_CHARS, NAME_CHARS, NAME_TAIL, ROLE_MARKERS, symbol_kind

DIMS = ("target_input", "entry", "command_type", "backend_error", "stage", "result")

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
def _tagged(text: str, *, before: str = "", after: str = "") -> str:
    return before + text + after


def _joined(parts: tuple[str, str], *, suffix: str) -> str:
    return parts[0] + parts[1] + suffix


def symbol_strategy(keys: Iterable[str]) -> Any:
    """Hypothesis strategy of symbol tables: synthetic names / CIDs / keywords, pairwise unrelated."""
    from hypothesis import strategies as st

    def one(role: int, key: str) -> Any:
        marker = ROLE_MARKERS[role % len(ROLE_MARKERS)]
        kind = symbol_kind(key)
        if kind == "cid":
            return st.text(ID_CHARS, min_size=10, max_size=22).map(
                functools.partial(_tagged, before="cid" + marker[1]))
        if kind == "name":
            return st.tuples(st.sampled_from(NAME_CHARS), st.text(NAME_TAIL, min_size=0, max_size=6)).map(
                functools.partial(_joined, suffix=marker[0]))
        if kind == "kw":
            return st.text(NAME_CHARS, min_size=1, max_size=3).map(
                functools.partial(_tagged, after=marker[0] + str(role)))
        if kind == "text":
            return st.text(NAME_TAIL, min_size=1, max_size=16).map(lambda t: "通知" + t)
        if kind == "trace":
            return st.text(ID_CHARS, min_size=8, max_size=24).map(lambda t: "trace-" + t)
        return st.text(ID_CHARS, min_size=6, max_size=12).map(lambda t: "odid-" + t)

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

    from pytest_dws.inputs.datasets.seeded import seed_only

    out: list[Case] = []

    @hseed(seed)
    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(variant_case_strategy(matrix))
    def collect(case: Case) -> None:
        out.append(case)

    with seed_only():  # the seed alone names the cases, whatever else the process loaded
        collect()
    return out[:examples]
