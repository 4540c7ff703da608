"""Environment that points an implementation at the fake server and cuts it off from the world.

Kept apart from the server so that callers (the pytest fixture, ``python -m fake_mcp serve``) can build
the same isolation environment without starting anything.  The variable names are the ones the real
``dws`` binary reads (docs/wire.md §1); they are part of the contract, not a choice of ours.
"""

from __future__ import annotations

from pathlib import Path

#: Every product id the e81 binary knows statically (docs/wire.md §1, in the order listed there).
#: An endpoint variable is exported for each one so that no product can fall back to a real URL.
PRODUCTS: tuple[str, ...] = (
    "agoal", "aisearch", "aitable", "aitable-helper", "attendance", "attendance-wukong", "bot",
    "calendar", "chat", "contact", "devdoc", "ding", "doc", "doc-comment", "drive", "hrbrain",
    "hrmregister", "im", "live", "mail", "minutes", "oa", "pat", "report", "sheet", "todo", "wiki",
    "devapp",
)

#: The PATH an implementation runs with: the system's binaries, nothing of the caller's (no toolchain, no venv).
MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"

#: The dead proxy every non-loopback request runs into.
DEAD_PROXY = "http://127.0.0.1:1"
LOOPBACK_NAMES = "127.0.0.1,localhost,::1"


def endpoint_var(product: str) -> str:
    """Name of the per-product endpoint override variable (``runner.go: productEndpointOverride``)."""
    return "DINGTALK_" + product.upper().replace("-", "_") + "_MCP_URL"


def endpoint_env(base_url: str, products: tuple[str, ...] = PRODUCTS) -> dict[str, str]:
    """Endpoint variables for ``products`` plus the two variables that make loopback trusted.

    Without ``DWS_ALLOW_HTTP_ENDPOINTS`` and ``DWS_TRUSTED_DOMAINS`` the binary still sends requests but
    silently drops the auth headers, which would make header gates pass or fail for the wrong reason.
    """
    env = {endpoint_var(p): f"{base_url}/mcp/{p}" for p in products}
    env["DWS_ALLOW_HTTP_ENDPOINTS"] = "1"
    env["DWS_TRUSTED_DOMAINS"] = LOOPBACK_NAMES
    return env


def isolation_env(tmp_dir: Path | str) -> dict[str, str]:
    """Variables that give an implementation a private HOME/config/keychain/TMPDIR and a dead proxy.

    The same recipe as the upstream harness (``isolatedCLIEnv``): anything that tries to leave the
    machine hits ``http://127.0.0.1:1``.  The config and keychain directories are created because some
    implementations refuse to start when they are missing.
    """
    root = Path(tmp_dir)
    config = root / "config"
    keychain = root / "keychain"
    tmp = root / "tmp"  # its own TMPDIR: what it writes to "/tmp" stays in the run's tree and goes with it
    for folder in (config, keychain, tmp):
        folder.mkdir(parents=True, exist_ok=True)
    env = {
        "TMPDIR": str(tmp),
        "TMP": str(tmp),
        "TEMP": str(tmp),
        "HOME": str(root),
        "USERPROFILE": str(root),
        "DWS_CONFIG_DIR": str(config),
        "DWS_KEYCHAIN_DIR": str(keychain),
        "DWS_DISABLE_KEYCHAIN": "1",
        "NO_PROXY": LOOPBACK_NAMES,
        "no_proxy": LOOPBACK_NAMES,
    }
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env[name] = DEAD_PROXY
    return env
