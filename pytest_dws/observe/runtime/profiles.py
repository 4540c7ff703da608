"""How a release configures several profiles: the expectations file's ``[profiles]`` table, installed in one run's own
HOME. Shared by every run that selects a profile: the multi-profile aggregate of ERR-JSON-CONSISTENT (D1 §11.1,
:mod:`pytest_dws.observe.runtime.classification`) and the cross-profile holdout of DS-SAFETY-HOLDOUT (D1 §9.2,
:mod:`pytest_dws.observe.runtime.datasets`), so both judge the release on the same profiles."""

from __future__ import annotations

from typing import Any

from pytest_dws.core.errors import DwsInputError, NotApplicable
from pytest_dws.core.protocols import GateContext


def profiles_setup(ctx: GateContext, use: str = "multi-profile aggregation (D1 §11.1)") -> dict[str, Any]:
    """How this implementation configures several profiles: the expectations file's ``[profiles]`` table
    (``env``: the variable naming the configuration folder; ``files``: {relative name: text}; ``selector``: two
    profiles, comma-separated; ``token``: true when the run's global ``--token`` serves every profile, as on
    81f67c8d, whose profile records hold no credential; default false: each profile's own, from its files).
    Without it the target's profiles cannot be set up: not applicable."""
    spec = ctx.expect.section("profiles")
    where = f"{ctx.expect.path or 'expectations'}: $.profiles"
    if not spec:
        raise NotApplicable("the release's expectations say not how to configure profiles ([profiles] env, files, "
                            f"selector): {use} is not exercised",
                            wants="[profiles] in the expectations file")
    for key, kind in (("env", str), ("selector", str), ("files", dict)):
        if not isinstance(spec.get(key), kind):
            raise DwsInputError(where, f".{key}", f"expected a {kind.__name__}")
    if not isinstance(spec.get("token", False), bool):
        raise DwsInputError(where, ".token", "expected a boolean")
    return spec


#: The profiles' configuration folder, in the own HOME of each invocation that selects profiles (its working
#: folder, so the relative path names it): the target writes there (81f67c8d takes a lock file beside
#: profiles.json), and a folder shared by the session's invocations would be read-only to a jailed target and carry
#: one run's state to the next.
PROFILES_DIR = "profiles-config"


def profiles_home(spec: dict[str, Any]) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """(environment, files) that install the profiles of ``[profiles]`` (:func:`profiles_setup`) in one run's own
    HOME: its files in :data:`PROFILES_DIR`, named by its ``env``. Shared by every run that selects a profile
    (the multi-profile aggregate, the cross-profile holdout)."""
    return ((spec["env"], PROFILES_DIR),), tuple((f"{PROFILES_DIR}/{rel}", str(text))
                                                  for rel, text in sorted(spec["files"].items()))


def configured_profiles(spec: dict[str, Any]) -> list[str]:
    """The profile names of ``[profiles] selector``, in order (the first is the release's own, the next others)."""
    return [p.strip() for p in spec["selector"].split(",") if p.strip()]
