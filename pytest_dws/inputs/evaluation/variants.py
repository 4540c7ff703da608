"""The variant layer of the agent evaluation (D1 §9.2 variant, §9.3), generated from data and a seed.

``<scenarios>/agent/variant/matrix.json`` holds the vocabulary: intents (a prompt with ``{T}`` for the target,
the backend tool, read or write), the target inputs of D1 §9.3 (unique name, CID, fuzzy name, same-name,
zero hits), entry hints (a compatibility alias or a canonical+alias pair the task suggests), backend errors
and the extra points (intent, target, error, stage). The layer is the covering set: every intent with every
target input, every entry hint, every point. Names, CIDs, keywords and trace IDs are drawn per case from the
seed (``random.Random(f"{seed}:{case id}")``), so two runs with one seed play the same cases and a case's values
never depend on which other cases were drawn. The expected end state follows from the point (:func:`expected`).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_dws.core.errors import DwsInputError
from pytest_dws.inputs.catalog import jsonio
from pytest_dws.inputs.datasets.symbols import random_symbols
from pytest_dws.inputs.evaluation.cases import AgentCase, agent_root, check_case

DOC = "D1 §9.2 (variant), §9.3"
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
        if stage not in ("before_call", "metadata", "execution", "later_page"):
            raise DwsInputError(path, f"$.points[{i}][3]", f"unknown stage {stage!r}")
    data["_path"] = str(path)
    return dict(data)


def points(matrix: dict[str, Any]) -> list[Point]:
    """The covering set: every intent x target input, every entry hint, every extra point."""
    out = [Point(i, t) for i in matrix["intents"] for t in matrix["targets"]]
    out += [Point(i, "cid", entry) for entry, per in matrix["entries"].items() for i in per]
    out += [Point(i, t, "canonical", e, s) for i, t, e, s in matrix["points"]]
    return out


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
    case = AgentCase(id=point.id, layer="variant", pattern=point.intent, group=point.target, doc=DOC, prompt=prompt,
                     world=_world(point), expect=expected(matrix, point), faults=tuple(_faults(matrix, point)),
                     symbols=symbols, source=matrix.get("_path", ""),
                     dims={"target_input": point.target, "entry": point.entry, "command_type": intent["type"],
                           "backend_error": point.error, "stage": point.stage})
    check_case(case, case.source, f"{point.id}")
    return case


def generate(seed: int, root: Path | None = None) -> list[AgentCase]:
    """The variant layer for ``seed`` (the covering set of the matrix, values drawn per case)."""
    matrix = load_matrix(root)
    return [build(matrix, p, seed) for p in points(matrix)]
