"""WIRE: rules of the real binary's wire that no D1/D2 sentence states, but whose breach leaks a secret.

The user's credentials (``Authorization`` / ``X-User-Access-Token``) go only to an endpoint the user trusts
(docs/wire.md §1: loopback is trusted only with ``DWS_ALLOW_HTTP_ENDPOINTS=1`` and a ``DWS_TRUSTED_DOMAINS``
entry; without them the real binary still sends its requests, without the headers). Judged by effect: no request
that reaches an untrusted endpoint carries the run's token in any header, whatever the header is called.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_dws.core.errors import Finding, NotApplicable
from pytest_dws.core.protocols import GateContext
from pytest_dws.observe import runtime as rt
from pytest_dws.observe.calls import Call, plans, run_one
from pytest_dws.registry import Access, gate

#: A token no header would carry by chance: any header value that contains it carries the credential.
TOKEN = "dws-contract-credential-0001"
#: How an endpoint becomes untrusted (docs/wire.md §1), each a case: plain http not allowed, or a host that no
#: DWS_TRUSTED_DOMAINS entry names.
UNTRUSTED: dict[str, tuple[tuple[str, str], ...]] = {
    "http not allowed": (("DWS_ALLOW_HTTP_ENDPOINTS", ""),),
    "host not trusted": (("DWS_TRUSTED_DOMAINS", "trusted.example.invalid"),),
}


def _probe(ctx: GateContext, env: tuple[tuple[str, str], ...] = ()) -> Call:
    s = rt.read_probe(ctx, None, token=TOKEN)
    return Call(s.args, globals_=s.globals_, token=s.token, scenario=s.scenario, env=env)


@plans("WIRE-AUTH-TRUSTED")
def _runs(ctx: GateContext) -> Iterable[Call]:
    return [_probe(ctx), *(_probe(ctx, env) for env in UNTRUSTED.values())]


def carrying(inv: Any) -> list[str]:
    """``product/method header`` of every request whose headers carry the run's token."""
    out = []
    for r in inv.transcript:
        for name, value in (getattr(r, "headers", None) or {}).items():
            if TOKEN in str(value):
                out.append(f"{r.product or r.path}/{r.tool or r.rpc_method} {name}")
    return out


@gate("WIRE-AUTH-TRUSTED", doc="docs/wire.md §1 (trusted endpoints; no D1/D2 sentence: a credential leak)",
      access={Access.MCP})
def auth_only_to_trusted(ctx: GateContext) -> None:
    """The user's token reaches no endpoint the user does not trust (not in DWS_TRUSTED_DOMAINS, or plain http
    without DWS_ALLOW_HTTP_ENDPOINTS), in any header."""
    rt.require_profile(ctx)
    trusted = run_one(ctx, _probe(ctx))
    if not carrying(trusted):
        raise NotApplicable("the implementation sends the token in no request header even to a trusted endpoint "
                            "(nothing a leak could be judged against)",
                            wants="a token header sent to a trusted endpoint")

    def untrusted(case: str) -> None:
        inv = run_one(ctx, _probe(ctx, UNTRUSTED[case]))
        leaked = carrying(inv)
        if leaked:
            raise Finding(f"{case}: the token was sent to an untrusted endpoint in {len(leaked)} header(s): "
                          + ", ".join(sorted(set(leaked))[:6]) + f"\n{inv.describe()}",
                          headers=",".join(sorted({h.rsplit(' ', 1)[-1] for h in leaked})))

    rt.collect((case, lambda case=case: untrusted(case)) for case in UNTRUSTED)
