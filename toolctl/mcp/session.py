"""An MCP client session: the handshake, ``tools/list``, ``tools/call``, and the server's asks.

Era: ``initialize`` at 2025-11-25 first (one round trip for the servers that exist today),
accepting 2025-06-18, 2025-03-26 or 2024-11-05 when the server answers with one. A server
that refuses ``initialize`` with a JSON-RPC error (or an HTTP 4xx carrying one) is asked
``server/discover`` at the stateless 2026-07-28 revision; when it lists that revision, every
later request carries the per-request ``_meta`` (protocol version, client capabilities and
info) instead of a session. ``prefer_modern=True`` probes ``server/discover`` first, as the
2026-07-28 stdio binding suggests, falling back to ``initialize`` on any other answer.

The client declares sampling and elicitation: a server's sampling, elicitation and roots
requests during a call go to that call's ``on_request`` (an MCP door forwards them to its
client); without one an elicitation is declined and the rest get JSON-RPC error -32601.
``ping`` gets an empty result, progress notifications and log messages go to the callbacks
of the call they belong to, other notifications are ignored. A timed-out
call sends ``notifications/cancelled`` and then ends the server (its whole process tree).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

from toolctl import __version__
from toolctl.errors import TimedOut, ToolFailed, TransportUnavailable
from toolctl.mcp.asks import (
    ASKED,
    INTERNAL_ERROR,
    OnLog,
    OnProgress,
    OnRequest,
    Refused,
    forward_log,
    refusal,
    report_progress,
)
from toolctl.mcp.http import HttpTransport
from toolctl.mcp.wire import (
    Message,
    ProtocolError,
    ServerError,
    error_response,
    notification,
    request,
)
from toolctl.processes.cancelling import on_cancel

LATEST = "2025-11-25"
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MODERN = "2026-07-28"
UNSUPPORTED_VERSION = -32022
CLIENT_INFO = {"name": "toolctl", "version": __version__}
MAX_PAGES = 1000
_CLIENT_REQUESTS = frozenset({"initialize", "server/discover", "tools/list", "tools/call"})
"""Requests only a client sends: one coming from the server is toolctl's own, echoed."""


class Transport(Protocol):
    name: str

    def request(self, message: Message, timeout: float) -> Message: ...

    def notify(self, message: Message) -> None: ...

    def close(self) -> None: ...

    def kill(self) -> None: ...


class CallTimedOut(TimedOut):
    """A call that timed out on a session other calls run on: the server was told to
    cancel it, and the session lives on (it is pinged before the next call)."""


class Session:
    """One connection to one server, after the handshake; safe to use from several threads."""

    transport: Transport

    def __init__(self) -> None:
        self.protocol_version = ""
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.modern = False
        self._ids = itertools.count(1)
        self._id_lock = threading.Lock()
        self._calls = 0
        """Tool calls in flight: a timeout stops the server only when it runs no other
        (one thread's timeout failed every other thread's call on it)."""
        self._progress: dict[str, OnProgress] = {}
        self._logs: dict[str, OnLog | None] = {}
        self._asks: dict[str, OnRequest | None] = {}
        self.echoes = False
        self.tools_changed = False
        self.abandoned = False
        """A call on it was cancelled: a server that cannot stop it may still be busy with
        it (MCP lets a server ignore a cancel), and hold up every call after it."""
        self.not_tools: list[str] = []
        """What the last ``list_tools`` left out, each said: an entry that is no tool."""
        """The server said its tool list changed (``notifications/tools/list_changed``)
        since the session listed it: a runner lists it again before its next call."""
        """The server sent a request only a client sends (``initialize``): it echoes."""

    # -- handshake -------------------------------------------------------------------------

    def handshake(self, timeout: float, *, prefer_modern: bool = False) -> None:
        """Agree on a revision; every step shares the one ``timeout`` (seconds)."""
        deadline = time.monotonic() + timeout

        def left() -> float:
            return deadline - time.monotonic()

        if prefer_modern and self._discover(left()):
            return
        answer = self._send("initialize", _initialize_params(), left())
        if "error" in answer:
            if self.echoes:  # `cat`: our initialize came back, then our refusal of it
                raise ProtocolError(
                    f"MCP server '{self.transport.name}' sent toolctl's own requests back "
                    "instead of answering them: it echoes its input, and is not an MCP server",
                    hint="check the server's command",
                )
            if not prefer_modern and self._discover(left()):
                return
            raise TransportUnavailable(
                f"MCP server '{self.transport.name}' refused initialize: {_text(answer)}"
            )
        result = answer["result"]
        version = result.get("protocolVersion")
        if version not in LEGACY_VERSIONS:
            raise ProtocolError(
                f"MCP server '{self.transport.name}' answered protocol version {version!r};"
                f" toolctl speaks {', '.join((MODERN, *LEGACY_VERSIONS))}"
            )
        self._adopt(version, result)
        self.transport.notify(notification("notifications/initialized"))
        if isinstance(self.transport, HttpTransport):
            self.transport.listen(min(5.0, left()))

    def _discover(self, timeout: float) -> bool:
        """Try the stateless revision; True when the server speaks it (and it is adopted)."""
        self._set_modern(True)
        try:
            answer = self._send("server/discover", {}, timeout)
        except TransportUnavailable:  # garbage, or an HTTP refusal without a JSON-RPC body
            answer = {"error": {}}
        result = answer.get("result")
        if isinstance(result, dict) and MODERN in (result.get("supportedVersions") or ()):
            self._adopt(MODERN, result)
            meta = result.get("_meta")
            if not self.server_info and isinstance(meta, dict):
                self.server_info = meta.get("io.modelcontextprotocol/serverInfo") or {}
            return True
        self._set_modern(False)
        return False

    def _set_modern(self, modern: bool) -> None:
        self.modern = modern
        if isinstance(self.transport, HttpTransport):
            self.transport.modern = modern
            self.transport.protocol_version = MODERN if modern else None

    def _adopt(self, version: str, result: Mapping[str, Any]) -> None:
        self.protocol_version = version
        info, capabilities = result.get("serverInfo"), result.get("capabilities")
        self.server_info = dict(info) if isinstance(info, dict) else {}
        self.capabilities = dict(capabilities) if isinstance(capabilities, dict) else {}
        if isinstance(self.transport, HttpTransport):
            self.transport.protocol_version = version

    # -- requests --------------------------------------------------------------------------

    def _send(self, method: str, params: dict[str, Any] | None, timeout: float) -> Message:
        """One request; returns the whole answer (result or error)."""
        with self._id_lock:
            request_id = next(self._ids)
        if self.modern:
            params = {**(params or {}), "_meta": {**(params or {}).get("_meta", {}), **_META}}
        return self.transport.request(request(request_id, method, params), timeout)

    def _result(self, method: str, answer: Message) -> dict[str, Any]:
        if "error" in answer:
            error = answer["error"]
            raise ServerError(
                method, error["code"], str(error.get("message", "")), error.get("data")
            )
        result: dict[str, Any] = answer["result"]
        kind = result.get("resultType", "complete")
        if kind == "input_required":
            asked = ", ".join(sorted(_input_methods(result))) or "input"
            raise ToolFailed(f"MCP server asked for {asked}, which toolctl does not provide")
        if kind != "complete":
            raise ProtocolError(f"MCP server answered {method} with resultType {kind!r}")
        return result

    def list_tools(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Every tool the server offers, following ``nextCursor`` page by page."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        self.not_tools = []
        for _ in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            result = self._result("tools/list", self._send("tools/list", params, timeout))
            page = result.get("tools")
            if not isinstance(page, list):
                raise ProtocolError(
                    f"MCP server '{self.transport.name}' sent a malformed tool list"
                )
            # an entry that is no tool is left out, and said; the others stand (one
            # `{"name": 5}` refused the whole list, every well-formed tool with it)
            tools += [tool for tool in page if _is_tool(tool)]
            self.not_tools += [_not_a_tool(len(tools), item) for item in page if not _is_tool(item)]
            cursor = result.get("nextCursor")
            if cursor is None or cursor == "":
                return tools
            if not isinstance(cursor, str) or cursor in seen:
                raise ProtocolError(f"MCP server '{self.transport.name}' repeats a page cursor")
            seen.add(cursor)
        raise ProtocolError(f"MCP server '{self.transport.name}' sent over {MAX_PAGES} pages")

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        timeout: float,
        *,
        on_progress: OnProgress | None = None,
        meta: Mapping[str, str] | None = None,
        on_log: OnLog | None = None,
        on_request: OnRequest | None = None,
    ) -> dict[str, Any]:
        """The raw ``tools/call`` result. On timeout: cancelled sent, server ended, TimedOut.

        ``meta`` goes into the request's ``_meta`` (the caller's ``traceparent``).
        ``on_log`` gets the server's log messages while this is the only call in flight
        (a log message names no call; with several, nobody gets it rather than the wrong
        one). ``on_request`` answers the server's requests (sampling, elicitation, roots)
        the same way; without one they are refused."""
        with self._id_lock:
            request_id = next(self._ids)
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments)}
        if meta:
            params["_meta"] = dict(meta)
        token = f"toolctl-{request_id}"
        if on_progress is not None:
            params["_meta"] = {**params.get("_meta", {}), "progressToken": token}
            self._progress[token] = on_progress
        if self.modern:
            params["_meta"] = {**params.get("_meta", {}), **_META}
        self._logs[token] = on_log
        self._asks[token] = on_request
        abandon = functools.partial(self._abandon, token, request_id)
        with self._id_lock:
            self._calls += 1
        try:
            with on_cancel(abandon):
                answer = self.transport.request(request(request_id, "tools/call", params), timeout)
        except TimedOut as exc:
            with self._id_lock:
                shared = self._calls > 1
            if shared:  # other calls run on it: told to stop this one, pinged before the next
                self._abandon(token, request_id)
                ended = "the server was told"
            else:
                self._cancel(request_id, f"timed out after {timeout:g} s")
                ended = "the server stopped" if self.local else "the session closed"
            kind = CallTimedOut if shared else TimedOut
            raise kind(
                f"MCP tool '{name}' ran past its {timeout:g} s timeout;"
                f" the call was cancelled and {ended}"
            ) from exc
        finally:
            with self._id_lock:
                self._calls -= 1
            self._progress.pop(token, None)
            self._logs.pop(token, None)
            self._asks.pop(token, None)
        return self._result("tools/call", answer)

    @property
    def local(self) -> bool:
        """Whether ending the transport ends the server (stdio); over HTTP it goes on."""
        return not getattr(self.transport, "remote", False)

    def _abandon(self, token: str, request_id: int) -> None:
        """The caller of ``tools/call`` ``request_id`` went away (``calls.cancel``): the
        server is told, and its requests and messages no longer go to that call (another
        call in flight gets them). The session stays: other calls may share it."""
        self._progress.pop(token, None)
        self._logs.pop(token, None)
        self._asks.pop(token, None)
        self.abandoned = True  # the next call asks first whether the server still answers
        abandon = getattr(self.transport, "abandon", None)
        if abandon is not None:  # no answer comes to a cancelled request: stop waiting
            abandon(request_id)
        params = {"requestId": request_id, "reason": "the caller went away"}
        told = notification("notifications/cancelled", params)
        if self.local:  # queued for the server's stdin: never waits
            with contextlib.suppress(TransportUnavailable, TimedOut):
                self.transport.notify(told)
            return
        # over HTTP a POST, up to 5 s: the caller (a server's event loop) never waits for it
        threading.Thread(target=self._tell, args=(told,), daemon=True).start()

    def _tell(self, message: Message) -> None:
        """A notification told on a thread of its own, best effort: the session may have
        closed meanwhile (httpx then raises RuntimeError), and nothing may surface from it
        (a thread's exception is a traceback on stderr)."""
        with contextlib.suppress(Exception):
            self.transport.notify(message)

    def _cancel(self, request_id: int, reason: str) -> None:
        """Tell the server to stop (not on modern HTTP: there closing the stream says it)."""
        try:
            if not (self.modern and isinstance(self.transport, HttpTransport)):
                params = {"requestId": request_id, "reason": reason}
                self.transport.notify(notification("notifications/cancelled", params))
        except (TransportUnavailable, TimedOut):
            pass
        finally:
            self.transport.kill()

    # -- what the server asks of us ----------------------------------------------------------

    def inbound(self, message: Message) -> Message | None:
        """Answer a server request, or take a notification; called by the transport."""
        method, params = message["method"], message.get("params")
        if "id" in message:
            if method == "ping":
                return {"jsonrpc": "2.0", "id": message["id"], "result": {}}
            asks = list(self._asks.values())
            if method in ASKED and len(asks) == 1 and asks[0] is not None:
                # answered on a thread of its own: the reader goes on reading meanwhile
                threading.Thread(target=self._answer, args=(asks[0], message), daemon=True).start()
                return None
            if method in _CLIENT_REQUESTS:  # a server never sends these: ours came back
                self.echoes = True
            return refusal(message)
        if method == "notifications/progress" and isinstance(params, dict):
            callback = self._progress.get(str(params.get("progressToken")))
            if callback is not None:
                report_progress(callback, params)
        elif method == "notifications/tools/list_changed":
            self.tools_changed = True
        elif method == "notifications/message" and isinstance(params, dict):
            listeners = list(self._logs.values())
            if len(listeners) == 1 and listeners[0] is not None:
                forward_log(listeners[0], params)
        return None

    def _answer(self, ask: OnRequest, message: Message) -> None:
        params = message.get("params")
        try:
            result = ask(message["method"], params if isinstance(params, dict) else {})
        except Refused as refused:
            reply = error_response(message["id"], refused.code, str(refused))
        except Exception as exc:  # whatever went wrong, the server gets an answer
            reply = error_response(message["id"], INTERNAL_ERROR, f"toolctl: {exc}")
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        with contextlib.suppress(TransportUnavailable, TimedOut):
            self.transport.notify(reply)

    def request(self, method: str, params: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
        """Any other request (``resources/read``, ``prompts/get``...): its result; ServerError
        when the server answers with an error."""
        return self._result(method, self._send(method, params, timeout))

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """End the session (HTTP: DELETE) and the server (stdio: its whole process tree)."""
        self.transport.close()

    def kill(self) -> None:
        """End the server now, without the graceful wait (Ctrl-C, a failed call)."""
        self.transport.kill()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


CAPABILITIES: dict[str, Any] = {"sampling": {}, "elicitation": {}}
"""What toolctl says it can do for a server: a sampling or elicitation request during a call
goes to whoever made the call (an MCP door's client), else gets the service's declared
answers (elicitation) or a clean refusal, never a hang."""

_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
}


def _initialize_params() -> dict[str, Any]:
    return {"protocolVersion": LATEST, "capabilities": CAPABILITIES, "clientInfo": CLIENT_INFO}


def _text(answer: Message) -> str:
    error = answer.get("error")
    return str(error.get("message", "")) if isinstance(error, dict) else "no reason given"


def _is_tool(tool: Any) -> bool:
    return isinstance(tool, dict) and isinstance(tool.get("name"), str)


def _not_a_tool(before: int, item: Any) -> str:
    """An entry of a tool list that is no tool, said without quoting it."""
    if isinstance(item, dict):
        what = f"its name is {type(item.get('name')).__name__}, not text"
    else:
        what = f"it is a {type(item).__name__}, not an object"
    return f"an entry of its tool list (after {before} tool(s)) is not a tool: {what}"


def _input_methods(result: Mapping[str, Any]) -> set[str]:
    requests = result.get("inputRequests")
    values = requests.values() if isinstance(requests, dict) else []
    return {str(item.get("method")) for item in values if isinstance(item, dict)}
