"""A loopback proxy that refuses every connection and records where it was meant to go.

Why: the implementation under test runs with ``HTTP(S)_PROXY`` pointing here, so anything that tries to
leave the machine (a default endpoint, an OAuth host, a lookup outside the product URLs) reaches this socket
instead of the network. A dead proxy (``127.0.0.1:1``) gave the same safety but left only an opaque exit code;
this recorder tells the gate WHICH host:port the implementation tried, per invocation, so the verdict can say
"the dry run tried to reach api.example:443" by name.

Each invocation gets its own proxy URL with a tag as user name (``http://<tag>:x@127.0.0.1:PORT``): HTTP clients
send it as ``Proxy-Authorization`` on the CONNECT (HTTPS) or on the absolute-URI request (HTTP), which is how a
record is tied to its invocation. The reply is always ``403`` and the connection is closed: nothing is
forwarded, nothing leaves the machine. Stdlib only; no pytest.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

_REFUSAL = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_HEAD_LIMIT = 16 * 1024


#: JSON-RPC methods by which an MCP client discovers a service's surface at runtime (D2 §7 forbids it).
DISCOVERY_METHODS = frozenset({"initialize", "tools/list", "resources/list", "prompts/list",
                               "resources/templates/list"})


@dataclass(frozen=True)
class Attempt:
    """One refused attempt to leave the machine. ``rpc``: the JSON-RPC method of a plain-HTTP request whose body
    the proxy saw (an HTTPS CONNECT shows only where it goes, never what)."""

    tag: str
    method: str
    host: str
    port: int
    rpc: str = ""

    @property
    def seen_kind(self) -> str:
        """What the request itself shows: ``mcp-discovery``, ``mcp`` (another JSON-RPC call) or "" (unseen)."""
        if self.rpc in DISCOVERY_METHODS:
            return "mcp-discovery"
        return "mcp" if self.rpc else ""

    @property
    def target(self) -> str:
        return f"{self.host}:{self.port}"


class EgressRecorder:
    """Listens on 127.0.0.1 (ephemeral port); :meth:`proxy_url` per invocation, :meth:`take` its attempts."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self._lock = threading.Lock()
        self._attempts: dict[str, list[Attempt]] = {}
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="dws-egress", daemon=True)
        self._thread.start()

    def proxy_url(self, tag: str) -> str:
        """The proxy URL of one invocation (``tag``: letters, digits, ``-``)."""
        return f"http://{tag}:x@127.0.0.1:{self.port}"

    def take(self, tag: str) -> list[Attempt]:
        """The attempts recorded for ``tag`` (and forget them)."""
        with self._lock:
            return self._attempts.pop(tag, [])

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (a bare close does not, on Linux)
        with contextlib.suppress(OSError):
            self._sock.close()
        self._thread.join(timeout=2)

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), name="dws-egress-conn", daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2.0)
            head = b""
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in head and len(head) < _HEAD_LIMIT:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    head += chunk
                want = _content_length(head)
                while want and len(head.partition(b"\r\n\r\n")[2]) < min(want, _HEAD_LIMIT):
                    chunk = conn.recv(4096)  # a plain-HTTP body: what it asks for (tools/list?) is visible
                    if not chunk:
                        break
                    head += chunk
            attempt = parse_request(head)
            if attempt is not None:
                with self._lock:
                    self._attempts.setdefault(attempt.tag, []).append(attempt)
            with contextlib.suppress(OSError):
                conn.sendall(_REFUSAL)


def parse_request(head: bytes) -> Attempt | None:
    """The attempt a proxy request head describes (``CONNECT host:port`` or ``GET http://host/...``)."""
    lines = head.decode("latin-1", "replace").split("\r\n")
    parts = lines[0].split() if lines else []
    if len(parts) < 2:
        return None
    method, target = parts[0].upper(), parts[1]
    tag = ""
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "proxy-authorization" and value.strip().lower().startswith("basic "):
            with contextlib.suppress(ValueError):
                tag = base64.b64decode(value.strip()[6:]).decode("utf-8", "replace").split(":", 1)[0]
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        return Attempt(tag, method, host.strip("[]"), int(port) if port.isdigit() else 443)
    url = urlsplit(target)
    if not url.hostname:
        return None
    return Attempt(tag, method, url.hostname, url.port or (443 if url.scheme == "https" else 80),
                   _rpc_method(head.partition(b"\r\n\r\n")[2]))


def _content_length(head: bytes) -> int:
    for line in head.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return int(value.strip())
    return 0


def _rpc_method(body: bytes) -> str:
    """The JSON-RPC ``method`` of a request body (the first of a batch), or ""."""
    try:
        doc = json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return ""
    if isinstance(doc, list) and doc:
        doc = doc[0]
    method = doc.get("method") if isinstance(doc, dict) else None
    return method if isinstance(method, str) else ""
