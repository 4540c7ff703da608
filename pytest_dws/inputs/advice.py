"""The profile's ``[advice]`` section: what recovery advice tells the Agent to do, as kinds of action (D1 §8.1).
The release's wording of each kind is data; the rule (each error class its own action) is the gate's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pytest_dws.inputs.tomlcheck import TomlValidator


@dataclass(frozen=True)
class AdviceClass:
    """One error class of D1 §8.1 and the recovery action its advice must name (profile ``[advice.classes]``)."""

    name: str
    replies: tuple[str, ...]            # the fault replies of this class, one per failure path
    must: tuple[str, ...]               # action kinds the advice (hint and actions together) must name
    may_not: tuple[str, ...] = ()       # action kinds no field of the advice may name
    retryable: bool | None = None       # the typed .error.retryable it must carry (None: not judged)


@dataclass(frozen=True)
class Advice:
    """What recovery advice tells the Agent to do, as kinds of action (profile ``[advice]``): the release's
    wording of each kind is data, the rule (each class its own action) is the gate's."""

    actions: dict[str, tuple[re.Pattern[str], ...]]
    classes: tuple[AdviceClass, ...]

    def kinds(self, text: str) -> set[str]:
        """The action kinds one piece of advice names."""
        return {k for k, patterns in self.actions.items() if any(p.search(text) for p in patterns)}

    def replies(self) -> tuple[str, ...]:
        return tuple(r for c in self.classes for r in c.replies)


def parse_advice(v: TomlValidator, raw: Any) -> Advice:
    """Validate ``[advice]``: every class names only action kinds ``[advice.actions]`` defines."""
    if not isinstance(raw, dict):
        v.fail("$.advice", "expected a table")
    actions: dict[str, tuple[re.Pattern[str], ...]] = {}
    for kind in v.table(raw, "actions"):
        where = f"$.advice.actions.{kind}"
        try:
            actions[kind] = tuple(re.compile(p, re.IGNORECASE) for p in v.strings(raw["actions"], kind, where))
        except re.error as exc:
            v.fail(where, f"not a regular expression: {exc}")
    classes = []
    for name, cls in v.table(raw, "classes").items():
        where = f"$.advice.classes.{name}"
        if not isinstance(cls, dict):
            v.fail(where, "expected a table")
        kinds = {key: tuple(v.strings(cls, key, f"{where}.{key}")) if key in cls or key == "must" else ()
                 for key in ("must", "may_not")}
        unknown = sorted({k for ks in kinds.values() for k in ks} - set(actions))
        if unknown:
            v.fail(where, f"names action kinds [advice.actions] does not define: {', '.join(unknown)}")
        retryable = cls.get("retryable")
        if retryable is not None and not isinstance(retryable, bool):
            v.fail(f"{where}.retryable", "expected a boolean")
        classes.append(AdviceClass(name, tuple(v.strings(cls, "replies", f"{where}.replies")), kinds["must"],
                                   kinds["may_not"], retryable))
    return Advice(actions, tuple(classes))


