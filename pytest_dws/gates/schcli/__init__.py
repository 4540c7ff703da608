"""SCHCLI — D2 §6, §7: the `dws schema` command, one module per concern: :mod:`.views` (every level of the
schema command against the catalog), :mod:`.corrupt` (a tampered catalog is refused), :mod:`.plugins`
(plugins load lazily, never for schema or help).
"""
