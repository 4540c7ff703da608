"""pytest-dws: the black-box conformance and policy suite of the DingTalk Workspace CLI (``dws``).

Run it with ``pytest --dws-contract --dws-cli ./dws``. The plugin module (:mod:`pytest_dws.plugin`) only wires
pytest; gates live in :mod:`pytest_dws.gates`, public assertions in :mod:`pytest_dws.assertions`, adapter hooks
in :mod:`pytest_dws.hookspecs`.
"""

__version__ = "0.1.0"
