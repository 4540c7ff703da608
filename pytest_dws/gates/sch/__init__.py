"""SCH — D2 §1, §3, §4, §5, §9: the Agent command catalog, one module per concern.

:mod:`.data` (per-tool catalog rules), :mod:`.release` (release-level counts, hashes, bindings),
:mod:`.reviews` (reviewed hint inputs), :mod:`.tree` (schema paths against the executed command tree),
:mod:`.flags` (Help and required flags), :mod:`.examples` (examples and one-of branches run),
:mod:`.regen` (byte-identical offline regeneration), :mod:`.skills` (Skill commands exist),
:mod:`.snapshot` (the reviewed agent contract).
"""
