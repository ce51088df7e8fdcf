"""`toolctl serve`: one Starlette app with tool_agent's gateway, /recommend, and MCP at /mcp.

tool_agent's routes keep its shapes (``GET /tools``, ``POST /run_tool {tool_id, params}``
answering the ToolResult JSON), so its clients work unchanged. Status codes follow the
exit codes: 422 invalid arguments, 404 unknown tool, 409 registry refused, 200 with
``"success": false`` for a tool that failed, 503 transport unavailable or queue full, 504
timed out. In front of every route: the Host and Origin checks (a browser page on another
origin gets 403: DNS-rebinding protection), the bearer token when one is set, and the body
limit (413).
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolctl.serve.disconnects import mcp_call_id, read_body, run_watched
from toolctl.serve.dispatch import Dispatcher
from toolctl.serve.mcp_server import ToolServer

MAX_BODY = 1024 * 1024
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class GatewayOptions:
    """Where the server listens and what it lets in."""

    host: str = "127.0.0.1"
    port: int = 8001
    token: str | None = None
    max_body: int = MAX_BODY
    allow_origins: tuple[str, ...] = ()


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def build_app(dispatcher: Dispatcher, tools: ToolServer, options: GatewayOptions) -> ASGIApp:
    """The ASGI app: routes behind the Host/Origin, token and body-limit checks."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from toolctl.serve import rest

    sessions = StreamableHTTPSessionManager(app=tools.server, max_sessions=MAX_MCP_SESSIONS)

    async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        await sessions.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with sessions.run(), anyio.create_task_group() as group:
            group.start_soon(tools.watch)
            try:
                yield
            finally:
                dispatcher.cancel_all()
                group.cancel_scope.cancel()
        # the cancelled calls clean up (a container is removed), then what they left is reaped
        await anyio.to_thread.run_sync(dispatcher.close)

    async def gone(path: str, session: str | None, body: bytes) -> None:
        call_id = mcp_call_id(body) if path == "/mcp" else None
        cancelled = path != "/mcp"
        for _ in range(20):  # the session may not have started the call yet
            if call_id is None or (cancelled := tools.cancel_call(session, call_id)):
                break
            await anyio.sleep(0.05)
        dispatcher.log_line(
            {"event": "disconnect", "path": path, "during": "call", "cancelled": cancelled}
        )

    routes = [*rest.routes(dispatcher), Route("/mcp", _Endpoint(mcp_endpoint))]
    app = Starlette(routes=routes, lifespan=lifespan)
    return _Guard(app, options, gone, dispatcher.log_line)


class _Endpoint:
    """A plain ASGI callable Starlette mounts as-is at an exact path (no redirect)."""

    def __init__(self, handler: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(scope, receive, send)


class _Guard:
    """Host/Origin (421/403), bearer token (401) and body size (413) before any route."""

    def __init__(
        self,
        app: ASGIApp,
        options: GatewayOptions,
        gone: Callable[[str, str | None, bytes], Awaitable[None]],
        log: Callable[[dict[str, Any]], None],
    ) -> None:
        self.app = app
        self.options = options
        self.gone, self.log = gone, log
        self.hosts = set(LOOPBACK_NAMES) | {options.host.strip("[]")}
        self.local = is_loopback(options.host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get("origin")
        if origin is not None and origin in self.options.allow_origins:
            if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
                await _preflight(origin)(scope, receive, send)  # never carries a token
                return
            send = _with_cors(send, origin)  # the page at that origin may read the answer
        refusals = None
        if scope["path"] == "/mcp":
            send = refusals = _JsonRpcRefusals(send, body=scope["method"] != "HEAD")
        refusal = self._refusal(scope, headers)
        if refusal is not None:  # before its token is checked: its body is never read
            if scope["method"] in _BODIES:
                refusal.headers["Connection"] = "close"  # else the body is the next request
            await refusal(scope, receive, send)
            return
        limit = self.options.max_body
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            await _too_large(limit, scope["path"])(scope, receive, send)
            return
        path = scope["path"]
        if scope["method"] not in _BODIES or (path == "/mcp" and scope["method"] != "POST"):
            await self.app(scope, receive, send)  # /mcp: the SDK answers PUT 405, as HEAD
            return
        body = TOO_SLOW
        with anyio.move_on_after(BODY_SECONDS):  # a body dripped a byte at a time holds a slot
            body = await read_body(receive, limit)
        if body is TOO_SLOW:
            self.log({"event": "slow body", "path": path})
            slow = f"the request body did not arrive within {BODY_SECONDS:g} s"
            refusal = _error(408, slow, path)
            refusal.headers["Connection"] = "close"  # the rest of the body is never read
            await refusal(scope, receive, send)
            return
        if body is None:
            await _too_large(limit, scope["path"])(scope, receive, send)
            return
        if not isinstance(body, bytes):  # the client went away mid-body: nothing to run
            self.log({"event": "disconnect", "path": path, "during": "body"})
            return
        if refusals is not None:
            refusals.request = body  # its id is read only if the SDK refuses it
        if path == "/mcp" and (refusal := _bad_message(body)) is not None:
            await refusal(scope, receive, send)
            return
        session = headers.get("mcp-session-id")

        async def gone(body: bytes) -> None:
            await self.gone(path, session, body)

        await run_watched(self.app, scope, body, receive, send, gone)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> Response | None:
        host = headers.get("host", "")
        if self.local and not self._host_allowed(scope):
            return _error(421, f"requests for host {host!r} are not served here", scope["path"])
        origin = headers.get("origin")
        if origin and not self._origin_allowed(origin, scope):
            return _error(403, f"origin {origin!r} is not allowed", scope["path"])
        token = self.options.token
        if token is not None and scope["path"] != "/health":
            given = headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                value.strip().encode(), token.encode()
            ):
                response = _error(401, "missing or wrong bearer token", scope["path"])
                response.headers["WWW-Authenticate"] = "Bearer"
                return response
        return None

    def _host_allowed(self, scope: Scope) -> bool:
        """One Host header, naming a loopback host (or the one bound) and at most a port
        (DNS rebinding): ``127.0.0.1:8001.evil.com`` or a second Host is refused, as the
        last of two would be read here and the first by a proxy in front."""
        given = [value for key, value in scope["headers"] if key == b"host"]
        if len(given) != 1:
            return False
        host = given[0].decode("latin-1")
        try:
            parts = urlsplit(f"//{host}")
            parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
        except ValueError:
            return False
        if parts.netloc != host or parts.path or parts.query or "@" in host:
            return False
        return (parts.hostname or "").strip("[]") in self.hosts

    def _origin_allowed(self, origin: str, scope: Scope) -> bool:
        """Same origin is scheme, host and port alike (RFC 6454): a page from
        ``http://localhost:9999`` is another site than this server on localhost:8001."""
        if origin in self.options.allow_origins:
            return True
        try:
            parts = urlsplit(origin)
            port = parts.port or 80
        except ValueError:
            return False
        server = scope.get("server") or (None, self.options.port)
        return parts.scheme == "http" and _hostname(origin) in self.hosts and port == server[1]


_BODIES = ("POST", "PUT", "PATCH")

CORS_HEADERS = "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"
"""What a page on an ``--allow-origin`` origin may send (MCP's, and the token's)."""


def _preflight(origin: str) -> Response:
    """A browser's CORS preflight from an ``--allow-origin`` origin: what it may send."""
    return Response(
        status_code=204,
        headers={
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Methods": "GET, POST, DELETE",
            "Access-Control-Allow-Headers": CORS_HEADERS,
            "Access-Control-Max-Age": "600",
            "Vary": "Origin",
        },
    )


def _with_cors(send: Send, origin: str) -> Send:
    """``send`` that lets the page at ``origin`` read the answer and its session id."""
    added = [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", b"Mcp-Session-Id, WWW-Authenticate"),
        (b"vary", b"Origin"),
    ]

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *added]}
        await send(message)

    return sending


class _JsonRpcRefusals:
    """``send`` for /mcp that makes every refusal (toolctl's and the SDK's) a JSON-RPC
    error answering the id of the request, ``request``, once its body has been read (null
    before, or when it holds none: JSON-RPC 2.0 wants the id echoed whenever it can be
    determined).
    The SDK's ``"id": "server-error"`` (a string a client may take for a request's id) is
    never sent, a plain-text body (``Invalid Content-Type header``) is wrapped in an error,
    and the ``Mcp-Session-Id`` of a refused opening request (a session discarded at once:
    using it is a 404) is not sent. ``body`` False (HEAD): the headers only. The SDK's
    answer to a request the client cancelled (code 0, "Request cancelled") is not sent:
    MCP says a cancelled request gets none, and the stdio door sends none."""

    def __init__(self, send: Send, *, body: bool = True) -> None:
        self.send = send
        self.body = body
        self.request = b""
        self.held: Message | None = None
        self.stream = False  # an event stream, whose events can be left out (no length)

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            kind = dict(message.get("headers", [])).get(b"content-type", b"")
            self.stream = kind.startswith(b"text/event-stream")
            if message["status"] >= 400:
                self.held = message
                return
        body = message["type"] == "http.response.body"
        if self.stream and body and _cancelled_answer(message):
            message = {**message, "body": b""}
        if self.held is None or not body:
            await self.send(message)
            return
        start, self.held = self.held, None
        kept = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"mcp-session-id"]
        if message.get("more_body", False) or not self.body:  # a stream, or HEAD: as they are
            await self.send({**start, "headers": kept})
            await self.send(message)
            return
        mended = _as_jsonrpc_error(message.get("body", b""), _read_request_id(self.request))
        kept = [(k, v) for k, v in kept if k.lower() not in (b"content-length", b"content-type")]
        kept += [(b"content-type", b"application/json")]
        kept += [(b"content-length", str(len(mended)).encode())]
        await self.send({**start, "headers": kept})
        await self.send({**message, "body": mended})


def _read_request_id(body: bytes) -> str | int | None:
    """The id of the one JSON-RPC request in ``body``; None when there is none to read
    (not JSON, a batch, a notification, an id that is neither a string nor an integer)."""
    from toolctl.serve.stdio_wire import usable_id

    try:
        message: Any = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return usable_id(message.get("id")) if isinstance(message, dict) else None


def _cancelled_answer(message: Message) -> bool:
    """Whether a body chunk is the SDK's answer to a cancelled request: an SSE event (or a
    JSON body) whose message is a JSON-RPC error of code 0, "Request cancelled"."""
    chunk = message.get("body", b"")
    if b"Request cancelled" not in chunk:
        return False
    for line in chunk.splitlines():
        data = line.removeprefix(b"data:").strip()
        with contextlib.suppress(ValueError):
            answer = json.loads(data)
            error = answer.get("error") if isinstance(answer, dict) else None
            if isinstance(error, dict) and error.get("code") == 0:
                return error.get("message") == "Request cancelled"
    return False


def _as_jsonrpc_error(body: bytes, request_id: str | int | None) -> bytes:
    """A refusal's body as a JSON-RPC error answering ``request_id``; an error that names
    an id of its own (an answer to the request, never the SDK's "server-error") keeps it."""
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and "error" in answer:
        if answer.get("id") in (None, "server-error"):
            answer["id"] = request_id
        return json.dumps(answer).encode()
    text = body.decode("utf-8", "replace").strip() or "refused"
    error = {"code": -32600, "message": text[:500]}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


MAX_MCP_SESSIONS = 1000
"""MCP sessions open at once on /mcp (each holds ~65 KiB; an idle one ends after 30 min):
past it a new one is refused 503 (the SDK's 10,000 let clients take ~650 MiB)."""
BODY_SECONDS = 10.0
"""The longest a request's body may take to arrive once its headers have (1 MiB at most)."""
TOO_SLOW = object()


def _bad_message(body: bytes) -> Response | None:
    """A body the stdio door would not pass on (``stdio_wire.triage``), refused as it is
    there, with status 400: not JSON (-32700; the SDK would answer 500), a batch, not a
    JSON-RPC message, a number that is not finite (the SDK reads NaN as null, and the tool
    would run with it) or text that is not Unicode (-32600, with its id). A bad
    notification is accepted (202) and dropped, as a notification is never answered. A
    request of a method no client sends (``server/discover``, a typo) is answered -32601
    Method not found (status 200), as the stdio door does."""
    from mcp import types

    from toolctl.serve.stdio_wire import (
        DISCOVER_REFUSAL,
        INVALID_PARAMS,
        Line,
        params_problem,
        triage,
        unknown_method,
    )

    if not body.strip():
        answer: dict[str, Any] | None = {"code": -32700, "message": "Parse error: no body"}
        answer = {"jsonrpc": "2.0", "id": None, "error": answer}
    else:
        message, answer = triage(Line(body))
        if message is not None:
            probe = message.root
            if isinstance(probe, types.JSONRPCRequest) and unknown_method(probe.method):
                return JSONResponse({"jsonrpc": "2.0", "id": probe.id, "error": DISCOVER_REFUSAL})
            if isinstance(probe, types.JSONRPCRequest) and (
                problem := params_problem(probe.method, probe.params)
            ):
                error = {"code": INVALID_PARAMS, "message": problem}
                return JSONResponse({"jsonrpc": "2.0", "id": probe.id, "error": error})
            return None
    if answer is None:
        return Response(status_code=202)
    return JSONResponse(answer, status_code=400)


def _hostname(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").strip("[]")
    except ValueError:
        return ""


def _error(status: int, message: str, path: str = "") -> JSONResponse:
    """A refusal before the request reaches its route: REST's shape, or on ``/mcp`` a
    JSON-RPC error (id null here; ``_JsonRpcRefusals`` puts in the request's once its body
    was read), which an MCP client can read."""
    if path == "/mcp":
        error = {"code": -32600, "message": message}  # Invalid Request
        return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=status)
    return JSONResponse({"success": False, "error": message}, status_code=status)


def _too_large(limit: int, path: str) -> JSONResponse:
    return _error(413, f"request body over {limit} bytes", path)
