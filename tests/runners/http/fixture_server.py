"""A real HTTP server on 127.0.0.1 for the HTTP runtime's tests, in a thread of the test process.

It answers a few fixed paths (echo, a ToolResult-shaped answer, a 500, a slow handler,
redirects, a gzip-encoded answer, a latin-1 one) and records every request it saw, so tests can assert what reached it.
"""

from __future__ import annotations

import gzip
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    """One request the fixture server received."""

    method: str
    path: str
    headers: dict[str, str]
    peer: int
    body: bytes = b""


@dataclass
class FixtureServer:
    url: str
    port: int
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def paths(self) -> list[str]:
        return [urlsplit(s.path).path for s in self.seen]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each keep-alive answer waits for a delayed ACK
    server: _Server

    def do_GET(self) -> None:
        self._handle(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._handle(self.rfile.read(length))

    def _handle(self, body: bytes) -> None:
        fixture = self.server.fixture
        fixture.seen.append(
            Seen(self.command, self.path, dict(self.headers.items()), self.client_address[1], body)
        )
        url = urlsplit(self.path)
        route = _ROUTES.get(url.path)
        if route is None:
            self._answer(404, "text/plain", b"no such path")
            return
        route(self, url.query, body)

    def _answer(self, status: int, kind: str, payload: bytes, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, status: int, data: Any) -> None:
        self._answer(status, "application/json", json.dumps(data).encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _echo(handler: _Handler, query: str, body: bytes) -> None:
    arguments = json.loads(body) if body else {k: v[-1] for k, v in parse_qs(query).items()}
    handler._json(200, {"method": handler.command, "arguments": arguments})


def _with_output(handler: _Handler, query: str, body: bytes) -> None:
    handler._json(200, {"output": "the observation", "count": 3})


def _result(handler: _Handler, query: str, body: bytes) -> None:
    handler._json(200, {"success": False, "output": "", "error": "no such word"})


def _text(handler: _Handler, query: str, body: bytes) -> None:
    handler._answer(200, "text/plain", b"plain words\n")


def _fail(handler: _Handler, query: str, body: bytes) -> None:
    handler._answer(500, "text/plain", b"database exploded " + b"x" * 500)


def _denied(handler: _Handler, query: str, body: bytes) -> None:
    """A server that echoes the credentials it refuses, as many do."""
    told = f"invalid credentials: {handler.headers.get('Authorization')}"
    if "result" in query:  # as a ToolResult-shaped answer rather than an error status
        handler._json(200, {"success": False, "output": told, "error": told})
    elif "json" in query:  # a JSON error body: the result's data
        handler._json(401, {"error": "denied", "you_sent": handler.headers.get("Authorization")})
    else:
        handler._answer(401, "text/plain", told.encode())


def _slow(handler: _Handler, query: str, body: bytes) -> None:
    handler.server.fixture.release.wait(10)
    handler._json(200, {"late": True})


def _away(handler: _Handler, query: str, body: bytes) -> None:
    port = handler.server.fixture.port
    handler._answer(302, "text/plain", b"", Location=f"http://localhost:{port}/target")


def _home(handler: _Handler, query: str, body: bytes) -> None:
    handler._answer(302, "text/plain", b"", Location="/echo?moved=yes")


def _target(handler: _Handler, query: str, body: bytes) -> None:
    handler._json(200, {"reached": True})


def _keep(handler: _Handler, query: str, body: bytes) -> None:
    handler._answer(307, "text/plain", b"", Location="/echo")


def _loop(handler: _Handler, query: str, body: bytes) -> None:
    handler._answer(302, "text/plain", b"", Location="/loop")


def _gzip(handler: _Handler, query: str, body: bytes) -> None:
    packed = gzip.compress(json.dumps({"output": "unpacked", "size": 8}).encode())
    handler._answer(200, "application/json", packed, Content_Encoding="gzip")


def _latin(handler: _Handler, query: str, body: bytes) -> None:
    handler._answer(200, "text/plain; charset=latin-1", "café crème".encode("latin-1"))


_ROUTES = {
    "/echo": _echo,
    "/with-output": _with_output,
    "/result": _result,
    "/text": _text,
    "/fail": _fail,
    "/denied": _denied,
    "/slow": _slow,
    "/away": _away,
    "/home": _home,
    "/target": _target,
    "/keep": _keep,
    "/loop": _loop,
    "/gzip": _gzip,
    "/latin": _latin,
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
    fixture: FixtureServer


@contextmanager
def serve(tls: ssl.SSLContext | None = None) -> Iterator[FixtureServer]:
    """Serve on a free port until the block ends; a handler still sleeping is released."""
    server = _Server(("127.0.0.1", 0), _Handler)
    port = server.server_address[1]
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    scheme = "https" if tls else "http"
    server.fixture = FixtureServer(f"{scheme}://127.0.0.1:{port}", port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.fixture
    finally:
        server.fixture.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
