"""The streamable HTTP transport against real servers: sessions, SSE answers, resumed
streams, the stateless revision, timeouts, and secrets kept out of every error."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx
import pytest

from tests.conftest import Toolctl
from toolctl.calls.cancel import Cancel
from toolctl.errors import Interrupted, TimedOut, TransportUnavailable
from toolctl.mcp import MODERN, Progress, connect_http, map_result

from .conftest import free_port

SECRET = "s3cret-token-value"


class _Handler(BaseHTTPRequestHandler):
    """A hand-written server's handler: quiet, with ``reply`` for a whole answer."""

    def reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def _served(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` serving on 127.0.0.1 for the block: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_everything_over_http(everything_url: str) -> None:
    with connect_http(everything_url, timeout=30) as session:
        session_id = session.transport.session_id  # type: ignore[attr-defined]
        assert session_id and session.protocol_version == "2025-11-25"
        assert "echo" in {tool["name"] for tool in session.list_tools()}
        assert map_result(session.call_tool("echo", {"message": "hi"}, 30)).output == "Echo: hi"
        seen: list[Progress] = []
        session.call_tool(
            "trigger-long-running-operation",
            {"duration": 1, "steps": 2},
            30,
            on_progress=seen.append,
        )
        assert len(seen) == 2
    # the session was ended with DELETE: the server no longer knows it
    headers = {
        "Mcp-Session-Id": session_id,
        "MCP-Protocol-Version": "2025-11-25",
        "Accept": "application/json, text/event-stream",
    }
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
    assert httpx.post(everything_url, json=body, headers=headers).status_code in (400, 404)


def test_probe_over_http(probe_url: str) -> None:
    with connect_http(probe_url, timeout=30) as session:
        assert session.transport.session_id  # type: ignore[attr-defined]
        assert map_result(session.call_tool("echo", {"text": "hé"}, 30)).output == "hé"
        sampled = map_result(session.call_tool("ask_sampling", {"prompt": "x"}, 30))
        assert (
            sampled.output
            == "sampling refused: toolctl declined sampling: no model answers it here"
        )
        assert map_result(session.call_tool("fail", {"message": "boom"}, 30)).is_error


def test_a_redirect_of_the_same_origin_is_followed(probe_url: str) -> None:
    """A URL written with a trailing slash ("/mcp/"), which the SDK's Starlette app
    answers with a 307 to "/mcp": followed, as the SDK's own client does, and the session's
    later messages go to "/mcp" directly. (It was "answered HTTP 307 Temporary Redirect".)"""
    with connect_http(probe_url + "/", timeout=30) as session:
        assert map_result(session.call_tool("echo", {"text": "hé"}, 30)).output == "hé"
        assert session.transport.url == probe_url  # type: ignore[attr-defined]


def test_a_redirect_elsewhere_is_told_and_not_followed() -> None:
    """A redirect to another origin would carry the headers (a token) to a server the
    registry does not name; one that turns the POST into a GET would never work: each told
    in a line, with where it leads (no query), and never followed."""
    reached: list[str] = []

    class Elsewhere(_Handler):
        def do_POST(self) -> None:
            reached.append(self.path)
            self.reply(200, b"{}", {"Content-Type": "application/json"})

    with _served(Elsewhere) as other:

        class Redirecting(_Handler):
            def do_POST(self) -> None:
                status, _, where = self.path.strip("/").partition("/")
                targets = {"away": f"{other}/mcp?key={SECRET}", "here": "/mcp"}
                target = targets.get(where.partition("?")[0], self.path)  # else: a loop
                self.reply(int(status), b"", {"Location": target})

        with _served(Redirecting) as base:
            with pytest.raises(TransportUnavailable) as away:
                connect_http(f"{base}/307/away", headers={"X-Api-Key": SECRET}, timeout=10)
            with pytest.raises(TransportUnavailable) as changed:
                connect_http(f"{base}/302/here", timeout=10)
            with pytest.raises(TransportUnavailable) as loop:
                connect_http(f"{base}/308/self?token={SECRET}", timeout=10)
    assert f"redirects (HTTP 307 Temporary Redirect) to another origin, {other}/: not " \
        "followed" in str(away.value)  # fmt: skip
    assert SECRET not in str(away.value) + str(away.value.hint) and not reached
    assert f"redirects (HTTP 302 Found) to {base}/mcp: not followed (it would turn the POST " \
        "into a GET)" in str(changed.value)  # fmt: skip
    assert str(loop.value) == f"MCP server at {base}/308/self redirects in a loop"


def test_a_stream_closed_before_the_answer_is_resumed(probe_url: str) -> None:
    seen: list[Progress] = []
    with connect_http(probe_url, timeout=30) as session:
        answer = map_result(session.call_tool("drop_stream", {}, 30, on_progress=seen.append))
    assert answer.output == "answered after the stream was resumed"
    assert [p.message for p in seen] == ["before the stream closes"]


def test_the_stateless_revision_over_http(probe_url: str, probe_argv: list[str]) -> None:
    with connect_http(probe_url, timeout=30, prefer_modern=True) as session:
        modern = "mcp2" in probe_argv[0]
        assert session.modern is modern
        assert session.protocol_version == (MODERN if modern else "2025-11-25")
        assert map_result(session.call_tool("echo", {"text": "x"}, 30)).output == "x"


def test_timeout_over_http(probe_url: str) -> None:
    with (
        connect_http(probe_url, timeout=30) as session,
        pytest.raises(TimedOut, match="ran past its 1 s timeout"),
    ):
        session.call_tool("hang", {"seconds": 600}, 1)


def test_an_unreachable_server_never_shows_headers_or_query_secrets() -> None:
    url = f"http://user:{SECRET}@127.0.0.1:{free_port()}/mcp?token={SECRET}"
    with pytest.raises(TransportUnavailable) as caught:
        connect_http(url, headers={"Authorization": f"Bearer {SECRET}"}, timeout=5)
    assert caught.value.exit_code == 5
    assert SECRET not in str(caught.value)
    assert "127.0.0.1" in str(caught.value)


def test_a_server_that_is_not_mcp_is_transport_unavailable(everything_url: str) -> None:
    url = everything_url.replace("/mcp", "/not-mcp")
    with pytest.raises(TransportUnavailable, match="answered HTTP 404") as caught:
        connect_http(url, headers={"X-Api-Key": SECRET}, timeout=10)
    assert SECRET not in str(caught.value)


def test_a_web_page_is_told_as_not_mcp(tmp_path: Any) -> None:
    """A URL that answers 200 with a web page was "answered HTTP 200 OK", as if that were
    a failure of its own: what it answered with, and where MCP usually is, say it."""

    class Page(_Handler):
        def do_POST(self) -> None:
            self.reply(200, b"<html>hello</html>", {"Content-Type": "text/html; charset=utf-8"})

    with _served(Page) as base, pytest.raises(TransportUnavailable) as caught:
        connect_http(f"{base}/html", timeout=10)
    told = str(caught.value)
    assert "answered HTTP 200 OK with text/html, not JSON or an event stream" in told, told
    assert "is this the server's MCP endpoint" in told


def test_a_cancelled_call_hands_the_servers_requests_to_the_call_still_waiting(
    probe_url: str,
) -> None:
    """Two calls share a session (as the gateway's do); the first's caller goes away
    (``calls.cancel``): the server is told, and a request the server sends on its own
    (no related call) goes to the call still waiting, not declined as ambiguous."""

    def never(method: str, params: dict[str, object]) -> dict[str, object]:
        raise AssertionError(f"the abandoned call was asked {method}")

    def sample(method: str, params: dict[str, object]) -> dict[str, object]:
        reply = {"type": "text", "text": "ok"}
        return {"role": "assistant", "content": reply, "model": "test"}

    cancel, ended = Cancel(), threading.Event()
    with connect_http(probe_url, timeout=30) as session:

        def abandoned() -> None:
            try:
                with cancel.running():
                    session.call_tool("hang", {"seconds": 3}, 30, on_request=never)
            except Interrupted:
                ended.set()

        first = threading.Thread(target=abandoned)
        first.start()
        time.sleep(0.5)  # the hang is in flight
        cancel.cancel()
        asked = {"prompt": "x", "related": False}
        answer = map_result(session.call_tool("ask_sampling", asked, 30, on_request=sample))
        assert answer.output == "sampling answered"
        first.join(timeout=30)
    assert ended.is_set()


def test_a_cancel_told_after_the_session_closed_says_nothing(
    probe_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cancellation goes on a thread of its own; the session may be closed before it
    is sent (a server stopping after cancelling its calls): httpx's RuntimeError was a
    thread's traceback on stderr."""
    raised: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    release = threading.Event()
    session = connect_http(probe_url, timeout=30)
    notify = session.transport.notify

    def late(message: dict[str, Any], *args: Any) -> None:
        release.wait(30)
        notify(message, *args)

    session.transport.notify = late  # type: ignore[method-assign]
    before = set(threading.enumerate())
    session._abandon("token", 99)
    (teller,) = [t for t in threading.enumerate() if t not in before and "_tell" in t.name]
    session.close()
    release.set()
    teller.join(timeout=30)
    assert not teller.is_alive() and raised == []


def test_a_5xx_with_a_json_rpc_error_keeps_the_servers_message() -> None:
    """A 500 whose body is a JSON-RPC error ("database is down") was told as "answered
    HTTP 500 Internal Server Error", the server's own words dropped. Still unavailable
    (exit 5), with them; a message of a page is cut."""

    class Failing(_Handler):
        message = "database is down"

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            error = {"code": -32603, "message": self.message}
            body = json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "error": error})
            self.reply(500, body.encode(), {"Content-Type": "application/json"})

    class Long(Failing):
        message = "x" * 5000

    with _served(Failing) as base, pytest.raises(TransportUnavailable) as caught:
        connect_http(f"{base}/mcp", timeout=10)
    assert str(caught.value).endswith("answered HTTP 500 Internal Server Error: database is down")
    with _served(Long) as base, pytest.raises(TransportUnavailable) as caught:
        connect_http(f"{base}/mcp", timeout=10)
    assert "x" * 300 in str(caught.value) and "x" * 301 not in str(caught.value)


def test_a_session_id_that_is_not_visible_ascii_is_refused_in_a_line() -> None:
    """A server gave `Mcp-Session-Id: sessé`: `run` crashed (exit 70) sending it back in
    the DELETE that ends the session. The protocol allows visible ASCII only."""

    class Odd(_Handler):
        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            result = {"protocolVersion": "2025-06-18", "capabilities": {},
                      "serverInfo": {"name": "odd", "version": "1"}}  # fmt: skip
            body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
            headers = {"Content-Type": "application/json", "Mcp-Session-Id": "sess\u00e9"}
            self.reply(200, body, headers)

    with _served(Odd) as base, pytest.raises(TransportUnavailable, match="not visible ASCII"):
        connect_http(f"{base}/mcp", timeout=10)


def test_cancelling_a_call_never_waits_for_the_servers_notification(probe_url: str) -> None:
    """Telling an HTTP server a call was cancelled is a POST of up to 5 s, made by whoever
    cancels: `serve`'s event loop, when a client went away, so every client stalled until
    the server took it. The call ends at once, and the server is told on the side."""
    release, told = threading.Event(), []
    cancel, ended = Cancel(), threading.Event()
    with connect_http(probe_url, timeout=30) as session:
        notify = session.transport.notify

        def slow(message: dict[str, Any], *args: Any) -> None:  # a server slow to take it
            release.wait(30)
            notify(message, *args)
            told.append(message["method"])

        session.transport.notify = slow  # type: ignore[method-assign]

        def abandoned() -> None:
            try:
                with cancel.running():
                    session.call_tool("hang", {"seconds": 3}, 30)
            except Interrupted:
                ended.set()

        first = threading.Thread(target=abandoned)
        first.start()
        time.sleep(0.5)  # the hang is in flight
        cancelling = threading.Thread(target=cancel.cancel)
        cancelling.start()
        cancelling.join(timeout=10)
        assert not cancelling.is_alive(), "the canceller waited for the server"
        first.join(timeout=10)
        assert ended.is_set()
        release.set()
        deadline = time.monotonic() + 30
        while not told and time.monotonic() < deadline:
            time.sleep(0.05)
        assert told == ["notifications/cancelled"]


class _SlowStreamServer(BaseHTTPRequestHandler):
    """A streamable HTTP server as the TypeScript SDK behaves when a tool asks with
    ``server.request`` (no related call): the elicitation goes on the standalone GET
    stream, or nowhere when that stream is not open yet. Its GET answers 0.5 s late."""

    protocol_version = "HTTP/1.1"
    stream: Any = None
    opening = threading.Lock()
    answered = threading.Event()
    answer: ClassVar[dict[str, Any]] = {}

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, body: dict[str, Any] | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", "slow-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        cls = type(self)
        if message.get("method") == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "slow-stream", "version": "1"}}  # fmt: skip
            return self._json(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        if message.get("method") != "tools/call":
            if "method" not in message:  # our answer to the elicitation
                cls.answer = message
                cls.answered.set()
            return self._json(202)
        with cls.opening:
            stream = cls.stream
        if stream is None:
            text = "dropped: no stream open"
        else:
            ask = {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create",
                   "params": {"message": "name?", "requestedSchema": {"type": "object",
                   "properties": {"name": {"type": "string", "default": "Ada"}}}}}  # fmt: skip
            stream.write(f"event: message\ndata: {json.dumps(ask)}\n\n".encode())
            stream.flush()
            text = cls.answer["result"]["action"] if cls.answered.wait(10) else "no answer"
        called: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        return self._json(200, {"jsonrpc": "2.0", "id": message["id"], "result": called})

    def do_GET(self) -> None:
        time.sleep(0.5)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        # The stream is the server's before its headers reach the client, as in the
        # TypeScript SDK (it maps the response, then flushes the headers).
        with type(self).opening:
            self.end_headers()
            self.wfile.flush()
            type(self).stream = self.wfile
        while not self.server.done:  # type: ignore[attr-defined]
            time.sleep(0.05)

    def do_DELETE(self) -> None:
        self._json(200)


def test_the_get_stream_is_open_before_the_first_call() -> None:
    """A server that sends a call's elicitation on the standalone stream (the TypeScript
    SDK's ``server.request``) and drops it while that stream is not yet open: the session
    waits for the GET's answer before its first call, so the elicitation is answered
    (it was lost, and the server waited out its 60 s, when the call won the race)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowStreamServer)
    server.done = False  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/mcp"

    def accept(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    try:
        with connect_http(url, timeout=10) as session:
            answer = map_result(session.call_tool("ask", {}, 10, on_request=accept))
        assert answer.output == "accept"
    finally:
        server.done = True  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()


class _ForgetfulServer(_Handler):
    """An MCP server over HTTP that forgets a session once it answered a call in it (as a
    restarted server has forgotten every session): the next request in it is HTTP 404."""

    used: ClassVar[set[str]] = set()
    sessions: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        session = self.headers.get("Mcp-Session-Id")
        if session in self.used:
            return self.reply(404, b"")
        method, headers = message.get("method"), {}
        if method == "initialize":
            session = f"s{len(self.sessions)}"
            self.sessions.append(session)
            headers["Mcp-Session-Id"] = session
            result: dict[str, Any] = {"protocolVersion": "2025-06-18",
                                      "capabilities": {"tools": {}},
                                      "serverInfo": {"name": "forgetful", "version": "1"}}  # fmt: skip
        elif "id" not in message:
            return self.reply(202, b"")
        elif method == "tools/list":
            schema = {"type": "object", "properties": {"text": {"type": "string"}}}
            result = {"tools": [{"name": "echo", "description": "e", "inputSchema": schema}]}
        else:
            self.used.add(str(session))
            text = message["params"]["arguments"]["text"]
            result = {"content": [{"type": "text", "text": text}]}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        self.reply(200, body, {"Content-Type": "application/json", **headers})

    def do_DELETE(self) -> None:
        self.reply(200, b"")

    def do_GET(self) -> None:
        self.reply(405, b"")


def test_a_session_the_server_forgot_is_started_again(tmp_path: Any, toolctl: Toolctl) -> None:
    """A server that restarted answers the old session's next request 404: the protocol
    says a client then starts a new session, and the request, which never ran, goes
    again. The call was an error ("session ... expired"), and only the one after worked."""
    (tmp_path / "reg").mkdir()
    with _served(_ForgetfulServer) as base:
        added = toolctl("mcp", "add", "fg", "--url", f"{base}/mcp", "-r", "reg")
        assert added.returncode == 0, added.stderr
        lines = '{"text": "one"}\n{"text": "two"}\n'
        done = toolctl("run", "fg.echo", "--batch", "-", "-r", "reg", input=lines)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["output"] for line in done.stdout.splitlines()] == ["one", "two"]
