"""The leaves every layer may import: the suite's exceptions (``errors``), the Protocols between the parts
(``protocols``), the JSON document of a CLI stream (``jsondoc``), where a release puts its typed error
(``envelope``) and deepdiff rendering (``compare``).

Imports nothing of the suite.
"""
