"""The one reading of an invocation's outcome (issue 24): refused / ran / prompted / tried to leave / crashed /
timed out, from typed fields only, whatever exit code the implementation uses for a refusal."""

from __future__ import annotations

import pytest

from pytest_dws.core.outcome import READINGS, reading
from pytest_dws.launch import Invocation


class _Call:
    rpc_method, tool = "tools/call", "list_groups"


@pytest.mark.parametrize(("fields", "prompted", "expected"), [
    ({"exit_code": 3}, False, "refused"),                              # the reference's validation refusal
    ({"exit_code": 5}, False, "refused"),                              # the real binary's cobra refusal
    ({"exit_code": 0}, False, "ran"),
    ({"exit_code": 1, "transcript": [_Call()]}, False, "failed_after_requests"),
    ({"exit_code": 5, "egress": ["mcp-gw.example.com:443"]}, False, "tried_to_leave"),
    ({"exit_code": 0}, True, "prompted"),
    ({"exit_code": None, "timed_out": True}, False, "timed_out"),
    ({"exit_code": -11, "crashed": True, "signal": 11}, False, "crashed"),
])
def test_reading(fields: dict, prompted: bool, expected: str) -> None:
    inv = Invocation(["dws"], fields.pop("exit_code"), "", "", **fields)
    assert reading(inv, prompted=prompted) == expected
    assert expected in READINGS
