"""The gate families, one module (or sub-package) per family, named for it: ``err``, ``tgt``, ``ali``, ``smk``,
``acc``, ``ds``, ``fit``, ``met``, ``rel``, ``fin``, ``sch/`` and ``schcli/``. Only gates live here: the machinery
they share is outside this package, and gate modules never import each other.

Importing this package imports every module in it, which registers its gates. Find a gate by its id with
one grep: ``grep -rn '"SCH-DESTRUCTIVE"' pytest_dws/gates``.
"""

import importlib
import pkgutil

for _mod in sorted(m.name for m in pkgutil.walk_packages(__path__, f"{__name__}.")):
    importlib.import_module(_mod)
