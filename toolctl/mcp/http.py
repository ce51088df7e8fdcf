"""The streamable HTTP transport: each message a POST, answers as JSON or an SSE stream.

httpx is imported only when an HTTP server is used. Header values may hold secrets, so no
error message here ever quotes a header, and URLs are shown without userinfo or query.
"""

from __future__ import annotations

import base64
import contextlib
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from toolctl.errors import RegistryError, TimedOut, TransportUnavailable
from toolctl.imports import skip_httpx_cli
from toolctl.mcp.wire import MAX_MESSAGE, Message, ProtocolError, SseParser, decode, encode

if TYPE_CHECKING:
    import threading

    import httpx

Inbound = Callable[[Message], "Message | None"]
RECONNECTS = 5
"""How often one answer's SSE stream is resumed with Last-Event-ID before giving up."""
DEFAULT_RETRY = 1.0
REDIRECTS = 5
"""Redirects of the same origin followed for one message (httpx's default is 20)."""


def safe_url(url: str) -> str:
    """The URL without userinfo, query or fragment: what may appear in a message."""
    parts = urlsplit(url)
    # as written, not parsed: a port from a masked ${env:} value ("***") is no number
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class HttpRefused(TransportUnavailable):
    """An HTTP refusal without a JSON-RPC answer; ``challenge`` is its WWW-Authenticate."""

    def __init__(self, message: str, *, hint: str | None, status: int, challenge: str) -> None:
        super().__init__(message, hint=hint)
        self.status, self.challenge = status, challenge

    @property
    def scope(self) -> str | None:
        """The scope a 403 ``insufficient_scope`` asks for."""
        if "insufficient_scope" not in self.challenge:
            return None
        found = re.search(r'scope="([^"]*)"', self.challenge)
        return found.group(1) if found else None


class HttpTransport:
    """One MCP endpoint; ``session_id`` and ``protocol_version`` are set after the handshake."""

    remote = True
    """Closing it leaves the server running (it is not ours to stop)."""

    def __init__(
        self,
        url: str,
        *,
        inbound: Inbound,
        headers: Mapping[str, str] | None = None,
        limit: int = MAX_MESSAGE,
    ) -> None:
        skip_httpx_cli()
        import httpx

        self._httpx = httpx
        self.url, self.name = url, safe_url(url)
        self._inbound, self._limit = inbound, limit
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.modern = False
        self.on_refused: Callable[[HttpRefused], Exception] | None = None
        """What a refusal becomes once the session is open (a login's 401 and 403 step-up:
        ``mcp.service`` turns them into the login to run)."""
        self._client = httpx.Client(headers=dict(headers or {}), follow_redirects=False)

    def request(self, message: Message, timeout: float) -> Message:
        deadline = time.monotonic() + timeout
        with self._send(message, deadline) as response:
            return self._answer(response, message, deadline)

    def notify(self, message: Message, timeout: float = 5.0) -> None:
        with self._send(message, time.monotonic() + timeout) as response:
            if response.status_code >= 400:
                raise TransportUnavailable(
                    f"{self.name} refused a notification: {_status(response)}"
                )

    def _headers(self, message: Message) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if self.modern and "method" in message:
            headers["Mcp-Method"] = message["method"]
            name = (message.get("params") or {}).get("name")
            if message["method"] == "tools/call" and isinstance(name, str):
                headers["Mcp-Name"] = header_value(name)
        return headers

    @contextlib.contextmanager
    def _send(self, message: Message, deadline: float) -> Iterator[httpx.Response]:
        with self._mapped("cannot reach"):  # a URL httpx cannot send to is said, not a crash
            request = self._client.build_request(
                "POST", self.url, content=encode(message), headers=self._headers(message)
            )
        with self._open(request, deadline) as response:
            yield response

    @contextlib.contextmanager
    def _open(self, request: httpx.Request, deadline: float) -> Iterator[httpx.Response]:
        """Send with the time left as httpx's timeout; the response is closed afterwards."""
        if deadline - time.monotonic() <= 0:
            raise TimedOut(f"MCP server at {self.name} did not answer in time")
        with self._mapped("cannot reach"):
            response = self._send_timed(request, deadline)
        try:
            with self._mapped("lost the connection to"):
                yield response
        finally:
            response.close()

    def _send_timed(self, request: httpx.Request, deadline: float) -> httpx.Response:
        """Send, following a 307 or 308 to the same origin (``/mcp/`` to ``/mcp``, as a
        Starlette app answers), which later messages then go to directly."""
        for _ in range(REDIRECTS + 1):
            left = max(0.01, deadline - time.monotonic())
            request.extensions["timeout"] = self._httpx.Timeout(left).as_dict()
            response = self._client.send(request, stream=True)
            target = self._redirect(response)
            if target is None:
                return response
            response.close()
            self.url = str(target)
            request = self._client.build_request(
                request.method, target, content=request.content, headers=request.headers
            )
        raise TransportUnavailable(f"MCP server at {self.name} redirects in a loop")

    def _redirect(self, response: httpx.Response) -> httpx.URL | None:
        """Where a redirect of the same origin leads; another origin's, or one that turns
        a POST into a GET (301, 302, 303), is told, never followed: the headers (a token)
        would go to a server the registry does not name."""
        if not response.is_redirect:
            return None
        try:
            target = response.url.join(response.headers["location"])
        except (self._httpx.InvalidURL, UnicodeError, ValueError):
            response.close()
            raise TransportUnavailable(
                f"MCP server at {self.name} redirects to an address that is not a URL"
            ) from None
        status = _status(response)
        here = response.url
        if (target.scheme, target.host, target.port) != (here.scheme, here.host, here.port):
            response.close()
            raise TransportUnavailable(
                f"MCP server at {self.name} redirects ({status}) to another origin, "
                f"{safe_url(str(target.copy_with(path='/')))}: not followed",
                hint="set the url of its [service.mcp] to that address if you trust it",
            )
        if response.status_code not in (307, 308):
            response.close()
            raise TransportUnavailable(
                f"MCP server at {self.name} redirects ({status}) to {safe_url(str(target))}: "
                "not followed (it would turn the POST into a GET)",
                hint="set the url of its [service.mcp] to that address",
            )
        return target

    @contextlib.contextmanager
    def _mapped(self, what: str) -> Iterator[None]:
        """httpx's failures as toolctl's, in one place (never quoting headers or the query)."""
        try:
            yield
        except self._httpx.TimeoutException as exc:
            raise TimedOut(f"MCP server at {self.name} did not answer in time") from exc
        except self._httpx.HTTPError as exc:
            raise TransportUnavailable(
                f"{what} MCP server at {self.name}: {type(exc).__name__}",
                hint="is the server running, and is the URL right?",
            ) from exc
        except (self._httpx.InvalidURL, UnicodeError, ValueError) as exc:  # an IDNA label...
            if what != "cannot reach":  # reading an answer: not the URL's fault
                raise
            raise RegistryError(
                f"MCP server at {self.name}: its URL cannot be sent to ({type(exc).__name__})",
                hint="fix the url of its [service.mcp]",
            ) from None

    def _answer(self, response: httpx.Response, message: Message, deadline: float) -> Message:
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if message.get("method") == "initialize" and response.status_code < 400:
            given = response.headers.get("mcp-session-id") or None
            if given is not None and not all("!" <= c <= "~" for c in given):
                raise TransportUnavailable(  # (never sent back: a header cannot carry it)
                    f"MCP server at {self.name} gave a session id that is not visible ASCII, "
                    "which the protocol requires"
                )
            self.session_id = given
        if response.status_code == 404 and self.session_id:
            raise SessionExpired(f"MCP session at {self.name} expired (HTTP 404)")
        if response.status_code >= 400 or kind not in ("application/json", "text/event-stream"):
            return self._refusal(response, kind)
        if kind == "application/json":
            answer = decode(self._body(response, deadline))
            if answer.get("id") != message["id"]:
                raise ProtocolError(f"MCP server at {self.name} answered another request")
            return answer
        return self._stream(response, message["id"], deadline)

    def _refusal(self, response: httpx.Response, kind: str) -> Message:
        """A 4xx: a JSON-RPC error in the body is the answer; anything else, and a 5xx,
        unavailable (a 5xx's JSON-RPC error message told with its status)."""
        said = _status(response)
        if kind == "application/json" and response.status_code >= 400:
            with contextlib.suppress(ProtocolError, TimedOut):
                answer = decode(self._body(response, time.monotonic() + 5))
                error = answer.get("error")
                if error is not None and response.status_code < 500:
                    return answer
                if isinstance(error, dict) and isinstance(error.get("message"), str):
                    said += f": {error['message'][:_TOLD]}"
        hint = "check the headers (a token?)" if response.status_code in (401, 403) else None
        if response.status_code < 400:  # a page, not MCP: what it answered with says so
            said += f" with {kind or 'no content type'}, not JSON or an event stream"
            hint = "is this the server's MCP endpoint (often /mcp, or /sse)?"
        refused = HttpRefused(
            f"MCP server at {self.name} answered {said}",
            hint=hint,
            status=response.status_code,
            challenge=response.headers.get("www-authenticate", ""),
        )
        if self.on_refused is not None:
            raise self.on_refused(refused) from None
        raise refused

    def _body(self, response: httpx.Response, deadline: float) -> bytes:
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > self._limit:
                raise ProtocolError(f"MCP server at {self.name} sent an answer over the limit")
            if time.monotonic() > deadline:
                raise TimedOut(f"MCP server at {self.name} did not answer in time")
        return bytes(body)

    def _stream(self, response: httpx.Response, request_id: Any, deadline: float) -> Message:
        """Read SSE until our answer; resume with Last-Event-ID when the stream ends early."""
        parser = SseParser(self._limit)
        retry = DEFAULT_RETRY
        resumed: list[httpx.Response] = []
        try:
            for attempt in range(RECONNECTS + 1):
                for chunk in response.iter_bytes():
                    for event in parser.feed(chunk):
                        retry = event.retry_ms / 1000 if event.retry_ms is not None else retry
                        if event.event != "message" or not event.data.strip():
                            continue
                        answer = self._event(decode(event.data), request_id)
                        if answer is not None:
                            return answer
                    if time.monotonic() > deadline:
                        raise TimedOut(f"MCP server at {self.name} did not answer in time")
                if parser.last_event_id is None or attempt == RECONNECTS:
                    break
                time.sleep(max(0.0, min(retry, deadline - time.monotonic())))
                response = self._resume(parser.last_event_id, deadline)
                resumed.append(response)
        finally:
            for stream in resumed:
                stream.close()
        raise ProtocolError(f"MCP server at {self.name} closed the stream before answering")

    def _resume(self, last_event_id: str, deadline: float) -> httpx.Response:
        headers = self._headers({})
        headers["Accept"] = "text/event-stream"
        headers["Last-Event-ID"] = last_event_id
        del headers["Content-Type"]
        request = self._client.build_request("GET", self.url, headers=headers)
        with self._mapped("cannot resume the stream from"):
            response = self._send_timed(request, deadline)
        if response.status_code != 200:
            response.close()
            raise TransportUnavailable(f"MCP server at {self.name} refused to resume the stream")
        return response

    def listen(self, timeout: float = 5.0) -> None:
        """Open the standalone GET stream (after the handshake), where a server sends the
        requests and notifications tied to no call: answered on a thread of its own until
        the transport closes. A server without one (405) is fine.

        Returns once the server has answered the GET (or ``timeout`` passed): a request it
        sends there during the first call is otherwise lost, as a server drops what it
        would send on a stream not yet open (the TypeScript SDK does; an elicitation it
        sent that way waited out its own 60 s timeout)."""
        import threading

        answered = threading.Event()
        threading.Thread(
            target=self._listen, args=(answered,), name="mcp-get-stream", daemon=True
        ).start()
        answered.wait(max(0.0, timeout))

    def _listen(self, answered: threading.Event) -> None:
        headers = self._headers({})
        headers["Accept"] = "text/event-stream"
        del headers["Content-Type"]
        request = self._client.build_request("GET", self.url, headers=headers)
        request.extensions["timeout"] = self._httpx.Timeout(5.0, read=None).as_dict()
        parser = SseParser(self._limit)
        try:
            with (
                contextlib.suppress(Exception),  # closed, refused, garbage: the calls go on
                contextlib.closing(self._client.send(request, stream=True)) as response,
            ):
                answered.set()
                if response.status_code != 200:
                    return
                for chunk in response.iter_bytes():
                    for event in parser.feed(chunk):
                        if event.event == "message" and event.data.strip():
                            self._event(decode(event.data), None)
        finally:
            answered.set()

    def _event(self, message: Message, request_id: Any) -> Message | None:
        if "method" not in message:
            if message.get("id") == request_id:
                return message
            return None
        reply = self._inbound(message)
        if reply is not None and "id" in message:
            with contextlib.suppress(TransportUnavailable, TimedOut):
                self.notify(reply)
        return None

    def close(self) -> None:
        """End the session with DELETE (when the server gave one), then the connections."""
        if self._client.is_closed:
            return
        if self.session_id:
            headers = self._headers({})
            del headers["Content-Type"]
            with contextlib.suppress(self._httpx.HTTPError, UnicodeError):
                self._client.delete(self.url, headers=headers, timeout=2.0)
        self._client.close()

    def kill(self) -> None:
        self.close()


class SessionExpired(TransportUnavailable):
    """The server no longer knows the session (HTTP 404 to a request bearing its id: it
    restarted, or dropped it): the request was not run, and may go again in a new one."""


_TOLD = 300
"""Characters of a 5xx's JSON-RPC error message told: a server's text, not a page of it."""


def _status(response: httpx.Response) -> str:
    return f"HTTP {response.status_code} {response.reason_phrase}".strip()


def header_value(value: str) -> str:
    """A value for Mcp-Name / Mcp-Param-*: as is when plain ASCII, else the base64 sentinel."""
    plain = (
        value == value.strip()
        and all(0x20 <= ord(c) <= 0x7E or c == "\t" for c in value)
        and not (value.startswith("=?base64?") and value.endswith("?="))
    )
    if plain and value:
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="
