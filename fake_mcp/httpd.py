"""HTTP/1.1 framing for the fake server: connection threads, request parsing, body reading, replies.

Built on the standard library's ``ThreadingHTTPServer``: fake_mcp must stay stdlib-only, and a thread
per keep-alive connection is exactly the concurrency an implementation under test produces (a few
sequential calls per process, several processes under xdist).  Three things differ from the stdlib:
the request loop answers every method (not only ``do_*`` ones) and every HTTP-level error with a
JSON-RPC body and a transcript record (via the app); headers are parsed into a plain dict instead of an
``email.message.Message`` (which costs about as much as everything else a request does); and a reply is
one ``sendall`` with no per-request logging.  Connections are tracked so that ``stop()`` can close
idle keep-alive sockets and join every thread.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

#: Bodies above the app's limit are drained up to this size (keeping the connection usable) and refused.
DRAIN_LIMIT = 64 << 20
MAX_HEADERS = 100
PHRASES = {s.value: s.phrase for s in HTTPStatus}


class App(Protocol):
    """What the HTTP layer needs from the JSON-RPC layer."""

    def serve(self, h: Handler) -> None: ...

    def http_error(self, h: Handler, status: int, message: str) -> None: ...


class Handler(BaseHTTPRequestHandler):
    """Per-connection request loop; every decision is delegated to the app."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    # No socket timeout: a timeout turns every recv/send into poll()+syscall, and an idle keep-alive
    # connection ends anyway when its client exits (EOF) or when stop() shuts the socket down.
    timeout = None
    server: HTTPServer
    hdict: dict[str, str]

    def handle_one_request(self) -> None:
        try:
            line = self.rfile.readline(65537)
            if not line:
                self.close_connection = True
                return
            self.raw_requestline = line
            if len(line) > 65536:
                self.requestline, self.request_version, self.command = "", "", ""
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if self.parse_fast():
                self.server.app.serve(self)
        except OSError:  # reset by the client, or our own shutdown of the socket during stop()
            self.close_connection = True

    def parse_fast(self) -> bool:
        """Request line and headers into ``self.hdict`` (lower-case names, last duplicate wins).

        Anything but ``METHOD PATH HTTP/1.x`` goes to the stdlib parser so that its error handling
        stays authoritative.
        """
        words = self.raw_requestline.split()
        if len(words) != 3 or words[2] not in (b"HTTP/1.1", b"HTTP/1.0"):
            if not self.parse_request():
                return False
            self.hdict = {k.lower(): v for k, v in self.headers.items()}
            return True
        self.command, self.path, self.request_version = (w.decode("iso-8859-1") for w in words)
        self.requestline = self.raw_requestline.decode("iso-8859-1").rstrip("\r\n")
        hdict: dict[str, str] = {}
        self.hdict = hdict
        readline = self.rfile.readline
        for _ in range(MAX_HEADERS + 1):
            raw = readline(65537)
            if raw in (b"\r\n", b"\n", b""):
                break
            if len(raw) > 65536:
                self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long")
                return False
            name, sep, value = raw.decode("iso-8859-1").partition(":")
            if not sep:
                self.send_error(HTTPStatus.BAD_REQUEST, "Malformed header line")
                return False
            hdict[name.strip().lower()] = value.strip()
        else:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers")
            return False
        conn = hdict.get("connection", "").lower()
        if self.request_version == "HTTP/1.1":
            self.close_connection = conn == "close"
            if hdict.get("expect", "").lower() == "100-continue":
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        else:
            self.close_connection = conn != "keep-alive"
        return True

    def read_body(self, max_body: int) -> tuple[bytes | None, str | None]:
        """Body bytes, or ``(None, why)`` when refused; sets ``close_connection`` if the stream is lost."""
        length = self.hdict.get("content-length")
        if length is None:
            if "chunked" in self.hdict.get("transfer-encoding", "").lower():
                return self._read_chunked(max_body)
            return b"", None
        try:
            n = int(length)
            if n < 0:
                raise ValueError(length)
        except ValueError:
            self.close_connection = True
            return None, "bad_length"
        if n <= max_body:
            return self.rfile.read(n), None
        if n > DRAIN_LIMIT:
            self.close_connection = True
        else:  # drain so that the connection stays in sync and the client gets to read the reply
            while n > 0:
                chunk = self.rfile.read(min(n, 1 << 16))
                if not chunk:
                    self.close_connection = True
                    break
                n -= len(chunk)
        return None, "body_too_large"

    def _read_chunked(self, max_body: int) -> tuple[bytes | None, str | None]:
        out = bytearray()
        while True:
            try:
                size = int(self.rfile.readline(1026).split(b";")[0].strip(), 16)
            except ValueError:
                self.close_connection = True
                return None, "bad_length"
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return bytes(out), None
            if len(out) + size > max_body:
                self.close_connection = True
                return None, "body_too_large"
            out += self.rfile.read(size)
            self.rfile.readline(3)

    def reply(self, status: int, body: bytes, content_type: str = "application/json",
              extra: tuple[tuple[str, str], ...] = (), close: bool = False) -> None:
        """Write status line, headers and body in one ``sendall``."""
        head = [f"HTTP/1.1 {status} {PHRASES.get(status, 'Status')}\r\n"]
        if body or status not in (202, 204):
            head.append(f"Content-Type: {content_type}\r\n")
        head.append(f"Content-Length: {len(body)}\r\n")
        for name, value in extra:
            head.append(f"{name}: {value}\r\n")
        if close or self.close_connection:
            self.close_connection = True
            head.append("Connection: close\r\n")
        head.append("\r\n")
        data = "".join(head).encode("latin-1")
        self.wfile.write(data if self.command == "HEAD" else data + body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """HTTP-level errors found by the parsers: answered by the app (JSON-RPC body, recorded)."""
        self.close_connection = True
        if not hasattr(self, "hdict"):
            self.hdict = {}
        self.server.app.http_error(self, int(code), message or PHRASES.get(int(code), "error"))

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: a line per request on stderr would dominate the hot path and clutter test output."""


class HTTPServer(ThreadingHTTPServer):
    """Threading server that tracks its connections so that they can be closed and joined."""

    daemon_threads = True
    block_on_close = False  # joining is done by close_all() with a bounded wait
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: App, family: int) -> None:
        self.address_family = family
        self.app = app
        self.conn_lock = threading.Lock()
        self.conns: dict[threading.Thread, socket.socket] = {}
        self._n = 0
        super().__init__(address, Handler)
        #: Every thread of this server is named with this prefix (tests check none survives stop()).
        self.thread_prefix = f"fake_mcp-{self.server_address[1]}-"

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.conn_lock:
            self._n += 1
            thread = threading.Thread(target=self._run, args=(request, client_address),
                                      name=f"{self.thread_prefix}conn-{self._n}", daemon=True)
            self.conns[thread] = request
        thread.start()

    def _run(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            with self.conn_lock:
                self.conns.pop(threading.current_thread(), None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            sys.stderr.write(f"fake_mcp: connection error: {exc!r}\n")

    def close_all(self, timeout: float) -> None:
        """Unblock every connection thread (idle ones sit in recv) and wait for all of them."""
        with self.conn_lock:
            items = list(self.conns.items())
        for _, sock in items:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        for thread, _ in items:
            thread.join(max(0.0, deadline - time.monotonic()))
