"""A hypothesis draw that depends on its seed and its strategy only (../shared/contract/RULINGS.md §6).

Hypothesis mixes into what it draws, now and then, the string and integer constants of every *local* module the
process has loaded (its "local constants": ``hypothesis.internal.conjecture.providers``). For a test suite that is a
good heuristic; for the suite's datasets it meant that one seed drew other variant cases after any change to the
suite's source, or when the suite ran from a wheel (its modules are not local there) instead of a checkout, or
beside a user's conftest. A release report carries its seed to name its cases, so during the suite's own draws the
local pool is empty (hypothesis' global constants, a fixed list of its release, still apply).

Hypothesis offers no setting for this; the pool is read through one module function, replaced here for the
duration of a draw. Were it renamed in a later hypothesis, nothing is replaced, and
tests/test_seed_stability.py fails: the draws would again depend on the source.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

_LOCK = threading.Lock()


@contextlib.contextmanager
def seed_only() -> Iterator[None]:
    """Draw inside this block with no local constants (and a constants cache that holds none of them)."""
    from hypothesis.internal.conjecture import providers

    original = getattr(providers, "_get_local_constants", None)
    empty_type: Any = getattr(providers, "Constants", None)
    if original is None or empty_type is None:  # a hypothesis without the feature: nothing to switch off
        yield
        return
    empty = empty_type()
    with _LOCK:
        providers.CONSTANTS_CACHE.cache.clear()  # permitted constants computed with the local pool
        providers._get_local_constants = lambda: empty
        try:
            yield
        finally:
            providers._get_local_constants = original
            providers.CONSTANTS_CACHE.cache.clear()
