"""The variant layer of the agent evaluation (D1 §9.2 variant, §9.3), generated from data and a seed.

``<scenarios>/agent/variant/matrix.json`` holds the vocabulary of D1 §9.3's dimensions: intents (a prompt with
``{T}`` for the target, the backend tool, the command type: read, write, high-risk write; ``paged`` when the tool
pages), the target inputs (unique name, CID, fuzzy name, same-name, zero hits), entry hints (a compatibility alias, or
a canonical+alias conflict the task suggests), backend errors with the stages each can be injected at (before the call,
the metadata lookup, the business execution, a later page), and extra points. The result state follows from the point
(:func:`expected`, :func:`result`); :func:`invalid` says why a point has no known end state.

The layer is the covering set (every intent with every target input, every entry hint, every extra point) plus
``examples`` points drawn by hypothesis from the whole valid space with the seed (:func:`drawn`; a point the covering
set holds is not drawn again), so every run plays new combinations while one seed replays the same ones. Names,
CIDs, keywords and trace IDs are drawn per case from the seed (``random.Random(f"{seed}:{case id}")``), so a case's
values never depend on which other cases were drawn. A case id spells its point, so a run recorded with another seed
is judged by rebuilding its case from the id (:func:`case_of`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError
from pytest_dws.inputs.catalog import jsonio
from pytest_dws.inputs.datasets.symbols import random_symbols
from pytest_dws.inputs.evaluation.cases import AgentCase, agent_root, check_case

DOC = "D1 §9.2 (variant), §9.3"
#: Points drawn beyond the covering set by default (each costs ``--dws-repeats`` agent runs).
DEFAULT_EXAMPLES = 12
_TARGET = {"unique_name": "{{name_a}}", "cid": "{{cid_a}}", "fuzzy_name": "{{name_a}}", "same_name": "{{name_a}}",
           "zero_hits": "{{name_z}}"}


@dataclass(frozen=True)
class Point:
    """One point of the matrix: intent x target input x entry x backend error x stage."""

    intent: str
    target: str
    entry: str = "canonical"
    error: str = "none"
    stage: str = "none"

    @property
    def id(self) -> str:
        tail = f"/{self.error}-{self.stage}" if self.error != "none" else ""
        tail += f"/{self.entry}" if self.entry != "canonical" else ""
        return f"variant/{self.intent}/{self.target}{tail}"


def load_matrix(root: Path | None = None) -> dict[str, Any]:
    path = agent_root(root) / "variant" / "matrix.json"
    data = jsonio.load(path)[1]
    if not isinstance(data, dict):
        raise DwsInputError(path, "$", "expected a JSON object")
    for key in ("intents", "targets", "entries", "errors", "points", "symbols"):
        if key not in data:
            raise DwsInputError(path, f"$.{key}", "missing")
    for i, (intent, target, error, stage) in enumerate(data["points"]):
        if intent not in data["intents"] or target not in _TARGET or error not in data["errors"]:
            raise DwsInputError(path, f"$.points[{i}]", "unknown intent, target input or error")
        why = invalid(data, Point(intent, target, "canonical", error, stage))
        if why:
            raise DwsInputError(path, f"$.points[{i}]", why)
    data["_path"] = str(path)
    return dict(data)


def points(matrix: dict[str, Any]) -> list[Point]:
    """The covering set: every intent x target input, every entry hint, every extra point."""
    out = [Point(i, t) for i in matrix["intents"] for t in matrix["targets"]]
    out += [Point(i, "cid", entry) for entry, per in matrix["entries"].items() for i in per]
    out += [Point(i, t, "canonical", e, s) for i, t, e, s in matrix["points"]]
    return out


def invalid(matrix: dict[str, Any], p: Point) -> str | None:
    """Why a point has no known end state (None: it has one). A resolution stop comes before any backend error; a
    fault before the call hits the name search (a CID is not searched); a later page needs a paged read; an error
    is injected only at the stages the matrix lists for it."""
    intent = matrix["intents"].get(p.intent)
    if intent is None or p.target not in _TARGET:
        return "unknown intent or target input"
    if p.entry != "canonical" and p.intent not in matrix["entries"].get(p.entry, {}):
        return f"no {p.entry} hint for {p.intent}"
    if (p.error == "none") != (p.stage == "none"):
        return "an error needs a stage, and a stage an error"
    if p.error == "none":
        return None
    if p.error not in matrix["errors"] or p.stage not in matrix["errors"][p.error].get("stages", ()):
        return f"{p.error} is not injected at {p.stage}"
    if p.target in ("same_name", "zero_hits"):
        return "a resolution stop comes before any backend error"
    if p.stage == "before_call" and p.target == "cid":
        return "a CID is not searched: nothing before the call to fail"
    if p.stage == "later_page" and not (intent.get("paged") and intent["type"] == "read"):
        return f"{p.intent} reads no later page"
    if p.stage == "metadata" and intent["type"] != "read":
        return "a write's failed metadata lookup is not retried by a careful agent (D1 §3.2)"
    return None


def space(matrix: dict[str, Any]) -> list[Point]:
    """Every valid point of D1 §9.3's dimensions (what :func:`drawn` samples)."""
    entries = ["canonical", *matrix["entries"]]
    every = (Point(i, t, n, e, st) for i in matrix["intents"] for t in matrix["targets"] for n in entries
             for e, st in _faults_of(matrix))
    return [p for p in every if invalid(matrix, p) is None]


def _faults_of(matrix: dict[str, Any]) -> list[tuple[str, str]]:
    return [("none", "none")] + [(e, st) for e, spec in matrix["errors"].items() for st in spec.get("stages", ())]


def point_strategy(matrix: dict[str, Any]) -> Any:
    """Hypothesis strategy of valid points, one dimension at a time: intent, target input, entry, then a backend
    error and its stage among those with a known end state for them."""
    from hypothesis import strategies as st

    @st.composite
    def one(draw: Any) -> Point:
        intent = draw(st.sampled_from(sorted(matrix["intents"])))
        target = draw(st.sampled_from(list(matrix["targets"])))
        entry = draw(st.sampled_from(["canonical"] + [e for e, per in matrix["entries"].items() if intent in per]))
        faults = [f for f in _faults_of(matrix) if invalid(matrix, Point(intent, target, entry, *f)) is None]
        return Point(intent, target, entry, *draw(st.sampled_from(faults)))

    return one()


def drawn(matrix: dict[str, Any], examples: int, seed: int, exclude: Iterable[Point] = ()) -> list[Point]:
    """``examples`` distinct valid points not in ``exclude`` (the covering set), drawn by hypothesis with a fixed
    seed (same seed, same points; generation only, no shrinking). Fewer when the space holds fewer."""
    if examples <= 0:
        return []
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from pytest_dws.inputs.datasets.seeded import seed_only

    skip = set(exclude)
    out: list[Point] = []

    @hseed(seed)
    @settings(max_examples=8 * examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(point_strategy(matrix))
    def collect(point: Point) -> None:
        if point not in skip and point not in out and len(out) < examples:
            out.append(point)

    with seed_only():  # the seed alone names the points, whatever else the process loaded
        collect()
    return out


def result(point: Point, expect: dict[str, Any]) -> str:
    """D1 §9.3's result state of a point: complete, retry_recovered, partial or fail_closed."""
    answer = expect.get("answer")
    if answer == "complete":
        return "retry_recovered" if point.stage == "metadata" else "complete"
    return "partial" if answer == "partial" else "fail_closed"


def case_of(case_id: str, seed: int, root: Path | None = None) -> AgentCase | None:
    """The variant case a case id spells (``variant/<intent>/<target>[/<error>-<stage>][/<entry>]``), or None when
    it spells no valid point: a trajectory of a run with another seed or more examples is judged by its own case."""
    parts = case_id.split("/")
    if len(parts) < 3 or parts[0] != "variant":
        return None
    error, stage, entry = "none", "none", "canonical"
    for part in parts[3:]:
        if "-" in part and error == "none":
            error, stage = part.split("-", 1)
        else:
            entry = part
    matrix = load_matrix(root)
    point = Point(parts[1], parts[2], entry, error, stage)
    if point.id != case_id or invalid(matrix, point) is not None:
        return None
    return build(matrix, point, seed)


def _world(point: Point) -> dict[str, Any]:
    members = [{"name": f"成员{i}", "openDingtalkId": "{{odid_a}}" + str(i)} for i in range(5)]
    messages = [{"openMessageId": f"msg-var-{i}", "sender": "{{odid_a}}0", "content": "纪要{{kw_a}}" + str(i),
                 "createTime": 1767200000000 + i * 1000} for i in range(5)]
    groups: list[dict[str, Any]] = [{"cid": "{{cid_a}}", "title": "{{name_a}}", "members": members,
                                     "messages": messages}, {"cid": "{{cid_c}}", "title": "{{name_b}}"}]
    if point.target == "fuzzy_name":
        groups.append({"cid": "{{cid_b}}", "title": "{{name_a}}项目组"})
    if point.target == "same_name":
        groups.append({"cid": "{{cid_b}}", "title": "{{name_a}}"})
    world: dict[str, Any] = {"groups": groups, "at_me": [
        {"openMessageId": "m-var-atme", "sender": "{{odid_a}}1", "content": "@我 {{kw_a}}", "createTime": 1767203000000,
         "openConversationId": "{{cid_a}}"}]}
    if point.stage == "later_page":
        world["page_sizes"] = {"get_group_members": 2, "search_messages": 2, "list_conversation_message_v2": 2}
    return world


def _faults(matrix: dict[str, Any], point: Point) -> list[dict[str, Any]]:
    if point.error == "none":
        return []
    err = matrix["errors"][point.error]
    intent = matrix["intents"][point.intent]
    fault: dict[str, Any] = {"stage": point.stage, "tool": intent["tool"], "reply": err["reply"],
                             "class": err["class"]}
    if point.stage == "metadata":
        fault.update(reply=err.get("metadata_reply", err["reply"]), call=1)
        fault["class"] = ["infrastructure_error", "recovered_infrastructure_error"]
    elif point.stage == "later_page":
        fault["page"] = 2
    elif point.stage == "before_call":
        fault["tool"] = "search_groups"
    if err.get("reason"):
        fault["reason"] = err["reason"]
    return [fault]


def expected(matrix: dict[str, Any], point: Point) -> dict[str, Any]:
    """The end state of a point: what the answer claims, the decisive class, the writes that must exist."""
    intent = matrix["intents"][point.intent]
    write = intent["type"] != "read"
    if point.target == "same_name":
        return {"answer": "stopped", "class": "expected_resolution_stop", "reason": "resolution_ambiguous",
                "candidates": ["{{cid_a}}", "{{cid_b}}"], "writes": [], "attempts": 0}
    if point.target == "zero_hits":
        return {"answer": "stopped", "class": "expected_resolution_stop", "reason": "resolution_not_found",
                "writes": [], "attempts": 0}
    done: dict[str, Any] = {"answer": "complete", "target": "{{cid_a}}", "writes": []}
    if write:
        done["writes"] = [{"tool": intent["tool"], "target": "{{cid_a}}", "values": list(intent["values"])}]
    if point.error == "none":
        return {**done, "class": "clean"}
    err = matrix["errors"][point.error]
    if point.stage == "metadata":  # the first call's metadata lookup fails once: one safe read retry recovers
        return done
    if point.stage == "later_page":
        return {"answer": "partial", "class": "infrastructure_error", "target": "{{cid_a}}", "writes": []}
    failed: dict[str, Any] = {"answer": "failed", "class": err["class"], "writes": [],
                              "attempts": 1 if write and point.stage != "before_call" else 0}
    if point.stage != "before_call":
        failed["target"] = "{{cid_a}}"
    if err.get("reason"):
        failed["reason"] = err["reason"]
    if "trace_a" in json.dumps(err["reply"]) and point.stage != "before_call":
        failed["trace_id"] = "{{trace_a}}"
    return failed


def build(matrix: dict[str, Any], point: Point, seed: int) -> AgentCase:
    intent = matrix["intents"][point.intent]
    prompt = intent.get("pages", intent["prompt"]) if point.stage == "later_page" else intent["prompt"]
    prompt = prompt.replace("{T}", _TARGET[point.target])
    if point.entry != "canonical":
        prompt += matrix["entries"][point.entry][point.intent]
    keys = {k: "" for k in matrix["symbols"]}
    symbols = random_symbols(keys, random.Random(f"{seed}:{point.id}"))
    expect = expected(matrix, point)
    case = AgentCase(id=point.id, layer="variant", pattern=point.intent, group=point.target, doc=DOC, prompt=prompt,
                     world=_world(point), expect=expect, faults=tuple(_faults(matrix, point)),
                     symbols=symbols, source=matrix.get("_path", ""),
                     dims={"target_input": point.target, "entry": point.entry, "command_type": intent["type"],
                           "backend_error": point.error, "stage": point.stage, "result": result(point, expect)})
    check_case(case, case.source, f"{point.id}")
    return case


def generate(seed: int, root: Path | None = None, examples: int = DEFAULT_EXAMPLES) -> list[AgentCase]:
    """The variant layer for ``seed``: the covering set of the matrix, then ``examples`` points drawn beyond it;
    values drawn per case."""
    matrix = load_matrix(root)
    cover = points(matrix)
    return [build(matrix, p, seed) for p in cover + drawn(matrix, examples, seed, set(cover))]
