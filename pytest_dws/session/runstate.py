"""Where the running contract session is kept: in the pytest config's stash, never in a module global.

A leaf module, so the plugin wiring and the public fixtures both reach the session without importing each other.
"""

from __future__ import annotations

from typing import Any

import pytest

#: The ContractSession of this pytest run (set in pytest_configure when ``--dws-contract`` is given).
SESSION = pytest.StashKey[Any]()


def contract(config: pytest.Config) -> Any:
    """The running ContractSession, or None when the suite is off."""
    return config.stash.get(SESSION, None)
