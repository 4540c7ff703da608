"""The helper command line, one module per command: ``diff`` (agent contracts of two builds), ``merge`` (shard
reports), ``gatedocs`` (docs/gates.md); ``python -m pytest_dws`` dispatches to them.

May import everything below the session; the commands run without pytest.
"""
