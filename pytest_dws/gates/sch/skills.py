"""SCH-SKILL-NO-PHANTOM (D2 §1, §3): Skills never cite a command or a flag the binary does not have."""

from __future__ import annotations

from pytest_dws.core.protocols import GateContext
from pytest_dws.observe.binary.views import prefetch_selected as prefetch
from pytest_dws.observe.binary.worlds import plain
from pytest_dws.observe.calls import plans
from pytest_dws.observe.skills import cited_commands, help_resolves
from pytest_dws.registry import Access, gate

plans("SCH-SKILL-NO-PHANTOM")(lambda ctx: [plain(*c.tokens, "--help") for c in cited_commands(ctx) if not c.anti])


@gate("SCH-SKILL-NO-PHANTOM", doc="D2 §1, §3 table; e81 scripts/policy/check-skill-commands.sh",
      access={Access.SRC, Access.BIN})
def skill_no_phantom(ctx: GateContext) -> None:
    """Skills never cite a command or a flag the binary does not have."""
    ctx.require(Access.BIN)
    prefetch(ctx)
    cmds = [c for c in cited_commands(ctx) if not c.anti]
    problems = help_resolves(ctx, [(f"{c.where} `{c.text}`", c.tokens, c.path) for c in cmds])
    if problems:
        raise AssertionError("\n".join(problems))
