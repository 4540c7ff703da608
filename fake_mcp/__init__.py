"""fake_mcp: a loopback MCP backend that the real ``dws`` binary (or any alternative) talks to unchanged.

Stdlib-only at import time (``jsonschema`` is imported lazily when a scenario is validated) and never
imports pytest, so it also runs standalone: ``python -m fake_mcp serve --scenario FILE``.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the submodule defining it. Imported on first use (PEP 562): a user of one small module
#: (``fake_mcp.transcript``'s write rule, say) does not pay for the HTTP server, the world and the scenarios.
_EXPORTS = {
    "MCPClient": "client", "ToolReply": "client", "WIRE_HEADERS": "client", "parse_tool_result": "client",
    "tools_call_body": "client",
    "PRODUCTS": "env", "endpoint_env": "env", "endpoint_var": "env", "isolation_env": "env",
    "BUSINESS_PRESETS": "overrides", "REPLY_KINDS": "overrides", "Reply": "overrides", "business_payload": "overrides",
    "override": "overrides",
    "EMPTY_WORLD": "scenario", "Scenario": "scenario", "ScenarioBuilder": "scenario", "ScenarioError": "scenario",
    "validate": "scenario",
    "FakeMCPServer": "server",
    "NAME_RESOLUTION_TOOLS": "transcript", "READ_PREFIXES": "transcript", "WRITE_TOOLS": "transcript",
    "Record": "transcript", "Transcript": "transcript", "is_write_tool": "transcript",
    "is_write_call": "transcript",
    "TOOLS": "world", "World": "world",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fake_mcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
