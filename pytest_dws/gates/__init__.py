"""The gate families, one module per family (``err``, ``tgt``, ``ali``, ``sch_data`` ...).

Importing this package imports every module in it, which registers its gates. Find a gate by its id with
one grep: ``grep -rn '"SCH-DESTRUCTIVE"' pytest_dws/gates``.
"""

import importlib
import pkgutil

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if not _mod.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod}")
