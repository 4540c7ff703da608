"""Repository conftest: the plugin's own tests use pytester; the contract target is set in pyproject.toml."""
