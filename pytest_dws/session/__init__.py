"""The contract run under pytest: the session (registered as a plugin), one item per gate, the context gates
talk to, the report, and the DATA re-judge without pytest.

May import everything below it: gates (through the registry), observe, verdict, launch, inputs, core.
"""
