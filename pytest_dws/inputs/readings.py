"""The strict readings of disputed sentences (``--dws-strict``, docs/contract.md R9).

Where a document sentence can be read as naming a mechanism or its effect, the gates judge the effect; a run may ask
for the strict reading by name. The names and what each adds are data here, so the option's help, the report and
the gates that read them (``ctx.settings.strict``) agree.
"""

from __future__ import annotations

from pytest_dws.core.errors import DwsInputError

#: ``--dws-strict``: the strict reading of a sentence whose literal reading is disputed (docs/contract.md R9). The
#: default judges the sentence's effect; a strict reading adds the mechanism its literal words name.
STRICT_READINGS: dict[str, str] = {
    "scope-argument": "D1 §7.2 '下层收到同一 CID': the business call itself carries the stable ID under its ID "
    "argument (default: the CID reaches the lower layer, and the effect lands on that target alone)",
    "alias-absent": "D1 §5 '不会制造第二入口': no reviewed hidden compatibility alias appears in the schema, not "
    "even as an alias of its canonical tool (default: D2 §4 lets reviewed hidden commands into the fixed schema)",
    "typed-refusal": "D2 §5 'Agent 不能自行确认': a user-confirmed tool run without the confirmation flag ends "
    "non-zero with a typed confirmation reason (default, RULINGS §1: it sends no write, however it refuses: a "
    "prompt that reads end-of-input and cancels, a failed prompt, a typed error, a validation error)",
}


def parse_strict(value: str | None) -> frozenset[str]:
    """``--dws-strict a,b``: the named strict readings; an unknown name is bad input naming the known ones."""
    names = frozenset(p.strip().lower() for p in (value or "").split(",") if p.strip())
    unknown = sorted(names - set(STRICT_READINGS))
    if unknown:
        raise DwsInputError("--dws-strict", "", f"unknown reading(s) {', '.join(map(repr, unknown))}; expected "
                            f"a comma-separated subset of {', '.join(STRICT_READINGS)}")
    return names
