"""The gate families, one module (or sub-package) per family, named for it. Only gates live here: the machinery
they share is outside this package, and gate modules never import each other.

:data:`FAMILIES` is the explicit list of the modules whose import registers the built-in gates; the registry
finds this package through the ``pytest_dws.gates`` entry-point group (``pyproject.toml``), the same way it finds
a plugin's own gates, so nothing below the gates imports them. Find a gate by its id with one grep:
``grep -rn '"SCH-DESTRUCTIVE"' pytest_dws/gates``.
"""

import importlib

#: Every module that registers built-in gates, by family.
FAMILIES = (
    "acc", "ali", "ds", "err", "eval", "fin", "fit", "met", "rel", "smk", "tgt", "wire",
    "sch.confirm", "sch.data", "sch.examples", "sch.flags", "sch.regen", "sch.release", "sch.reviews", "sch.skills",
    "sch.snapshot", "sch.tree",
    "schcli.corrupt", "schcli.plugins", "schcli.views",
)

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")
