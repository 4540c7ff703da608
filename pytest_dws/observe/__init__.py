"""The machinery the gates share to observe an implementation: the one call planner (``calls``), the D1 runs
and judges (``runtime/``), the binary's views of itself (``binary/``), the source tree, regeneration, Skills,
the agent contract and its snapshot. No gate lives here.

May import verdict, launch, inputs, core and the public assertions; never a gate module.
"""
