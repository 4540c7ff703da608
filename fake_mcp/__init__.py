"""fake_mcp: a loopback MCP backend that the real ``dws`` binary (or any alternative) talks to unchanged.

Stdlib-only at import time (``jsonschema`` is imported lazily when a scenario is validated) and never
imports pytest, so it also runs standalone: ``python -m fake_mcp serve --scenario FILE``.
"""

from .client import WIRE_HEADERS, MCPClient, ToolReply, parse_tool_result, tools_call_body
from .env import PRODUCTS, endpoint_env, endpoint_var, isolation_env
from .overrides import BUSINESS_PRESETS, REPLY_KINDS, Reply, business_payload, override
from .scenario import Scenario, ScenarioBuilder, ScenarioError, validate
from .server import FakeMCPServer
from .transcript import NAME_RESOLUTION_TOOLS, READ_PREFIXES, WRITE_TOOLS, Record, Transcript, is_write_tool
from .world import TOOLS, World

__all__ = [
    "BUSINESS_PRESETS", "NAME_RESOLUTION_TOOLS", "PRODUCTS", "READ_PREFIXES", "REPLY_KINDS", "TOOLS",
    "WIRE_HEADERS", "WRITE_TOOLS", "FakeMCPServer", "MCPClient", "Record", "Reply", "Scenario",
    "ScenarioBuilder", "ScenarioError", "ToolReply", "Transcript", "World", "business_payload",
    "endpoint_env", "endpoint_var", "is_write_tool", "isolation_env", "override", "parse_tool_result",
    "tools_call_body", "validate",
]
