"""Issue #24 against a real `toolctl serve`: non-finite numbers, hostile bodies and names,
Origin, disconnects mid-body and mid-call, and argument validation that cannot freeze it."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import write_files
from tests.serve.serve_support import REGISTRY, StartServe, alive, read_pid, wait_for

NAN = f"""
[[tool]]
name = "nan"
description = "Answers numbers JSON has not"
[tool.local]
command = ["{sys.executable}", "-c", "print('{{\\"a\\": NaN, \\"b\\": [Infinity, -Infinity]}}')"]
input = "none"
"""
MAPPED = {"a": "NaN", "b": ["Infinity", "-Infinity"]}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def hostile_registry(tmp_path: Path, extra: str) -> Path:
    return write_files(tmp_path / "hostile", {"tools.toml": REGISTRY + extra})


def mcp_message(text: str) -> Any:
    """The JSON-RPC message of an answer sent as JSON or as one SSE event."""
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            return strict_json(line[5:])
    return strict_json(text)


def mcp_session(url: str) -> dict[str, str]:
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    answer = httpx.post(f"{url}/mcp", json=hello, headers=MCP_HEADERS)
    assert answer.status_code == 200, answer.text
    session = {**MCP_HEADERS, "Mcp-Session-Id": answer.headers["mcp-session-id"]}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    httpx.post(f"{url}/mcp", json=initialized, headers=session)
    return session


def mcp_call(url: str, session: dict[str, str], name: str, arguments: Any = None) -> Any:
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments or {}},
    }
    answer = httpx.post(f"{url}/mcp", json=call, headers=session, timeout=60)
    return mcp_message(answer.text)


def test_rest_and_mcp_bodies_never_carry_nan(serve: StartServe, tmp_path: Path) -> None:
    url = serve("--registry", str(hostile_registry(tmp_path, NAN))).url
    ran = httpx.post(f"{url}/run_tool", json={"tool_id": "nan"}, timeout=60)
    assert ran.status_code == 200
    assert strict_json(ran.text)["data"] == MAPPED
    answer = mcp_call(url, mcp_session(url), "nan")
    assert answer["result"]["structuredContent"] == MAPPED, answer


def raw_request(url: str, request: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(request)
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_host_header_naming_anything_but_loopback_is_refused(serve: StartServe) -> None:
    """DNS rebinding: one Host, a loopback name and at most a port; a host that starts like
    127.0.0.1 but is not it, a user part, or two Host headers (a proxy in front reads the
    first, this server the last) is 421."""
    served = serve()
    port = served.url.rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}.evil.com", f"evil@127.0.0.1:{port}", "127.0.0.1:x"):
        assert httpx.get(f"{served.url}/tools", headers={"Host": host}).status_code == 421, host
    for first, second in ((f"127.0.0.1:{port}", "evil.com"), ("evil.com", f"127.0.0.1:{port}")):
        request = f"GET /tools HTTP/1.1\r\nHost: {first}\r\nHost: {second}\r\n"
        answer = raw_request(served.url, f"{request}Connection: close\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 421 "), answer[:80]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST"):
        assert httpx.get(f"{served.url}/tools", headers={"Host": host}).status_code == 200


DEEP = b'{"tool_id": "echo", "params": {"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"


def test_deeply_nested_bodies_are_400(serve: StartServe) -> None:
    served = serve()
    url = served.url
    ran = httpx.post(f"{url}/run_tool", content=DEEP, headers={"Content-Type": "application/json"})
    assert ran.status_code == 400, ran.text
    session = mcp_session(url)
    deep_call = (
        b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", '
        b'"arguments": {"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}}"
    )
    answer = httpx.post(
        f"{url}/mcp", content=deep_call, headers={**session, "Content-Type": "application/json"}
    )
    assert 400 <= answer.status_code < 500, answer.text
    assert httpx.get(f"{url}/health").status_code == 200
    assert "Traceback" not in served.log.read_text()


def test_a_lone_surrogate_name_is_400_and_a_json_rpc_error(serve: StartServe) -> None:
    served = serve()
    url = served.url
    body = b'{"tool_id": "ec\\ud800ho", "params": {}}'
    ran = httpx.post(f"{url}/run_tool", content=body, headers={"Content-Type": "application/json"})
    assert ran.status_code == 400, ran.text
    strict_json(ran.text)
    session = mcp_session(url)
    call = (
        b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", '
        b'"params": {"name": "ec\\ud800ho", "arguments": {"t\\udc00": "\\ud800"}}}'
    )
    answer = httpx.post(
        f"{url}/mcp", content=call, headers={**session, "Content-Type": "application/json"}
    )
    message = mcp_message(answer.text)
    assert message["error"]["code"] in (-32602, -32600, -32700), message
    # a method no client sends: -32601, as on stdio (the SDK answered -32602, params)
    unknown = b'{"jsonrpc": "2.0", "id": 10, "method": "nope/x"}'
    refused = httpx.post(
        f"{url}/mcp", content=unknown, headers={**session, "Content-Type": "application/json"}
    )
    assert refused.status_code == 200
    assert mcp_message(refused.text) == {
        "jsonrpc": "2.0", "id": 10, "error": {"code": -32601, "message": "Method not found"}
    }  # fmt: skip
    assert "Traceback" not in served.log.read_text()


BACKTRACK = """
[[tool]]
name = "picky"
description = "Takes a word the pattern likes"
timeout = 5
[tool.local]
command = ["true"]
input = "none"
[tool.parameters]
type = "object"
properties = { word = { type = "string", pattern = "^(a+)+$" } }
"""


def test_mcp_refusals_are_json_rpc_errors_without_a_session(serve: StartServe) -> None:
    """The SDK's own refusals on /mcp: `"id": "server-error"` (a string a client may take
    for its request's id) is the request's id (null where it has none), a plain-text body
    a JSON-RPC error, a PUT 405, and a refused opening request no longer hands out the id
    of a session already discarded."""
    url = serve().url + "/mcp"
    accept = {"Accept": "application/json, text/event-stream"}
    listing = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
    cases = [
        ("POST", {**accept, "Content-Type": "application/json"}, json.dumps(listing), 400),
        ("POST", {"Accept": "application/json", "Content-Type": "application/json"},
         json.dumps(listing), 406),
        ("POST", {**accept, "Content-Type": "text/plain"}, json.dumps(listing), 400),
        ("POST", {**accept, "Content-Type": "application/json", "Mcp-Session-Id": "nope"},
         json.dumps(listing), 404),
        ("PUT", {**accept, "Content-Type": "application/json"}, "{}", 405),
    ]  # fmt: skip
    for method, headers, body, status in cases:
        answer = httpx.request(method, url, headers=headers, content=body)
        assert answer.status_code == status, (method, headers, answer.text)
        assert "mcp-session-id" not in answer.headers, (method, headers)
        refused = strict_json(answer.text)
        assert refused["jsonrpc"] == "2.0", refused
        assert refused["id"] == json.loads(body).get("id"), (method, headers, refused)
        assert isinstance(refused["error"]["message"], str), refused
    head = httpx.head(url, headers=accept)
    assert head.status_code == 405 and "mcp-session-id" not in head.headers


def test_mcp_refusals_answer_the_request_id(serve: StartServe) -> None:
    """A refusal of a request on /mcp after its token is checked (a protocol version not
    spoken, an unknown session) answers the request's id, as JSON-RPC 2.0 asks wherever
    the id can be read; one before (a foreign Host or Origin, a wrong token) has id null:
    the body of a client that may not send one is never read, only to find its id."""
    url = serve("--token-env", "SERVE_TOKEN", env={"SERVE_TOKEN": "s3cret"}).url + "/mcp"
    token = {"Authorization": "Bearer s3cret"}
    session = {**mcp_session_with(url, token), **token}
    listing = {"jsonrpc": "2.0", "id": "list-1", "method": "tools/list"}
    refusals = [
        ({**MCP_HEADERS, "Authorization": "Bearer nope"}, 401),
        ({**MCP_HEADERS}, 401),
        ({**session, "Origin": "http://evil.example"}, 403),
        ({**session, "Host": "evil.example"}, 421),
        ({**session, "MCP-Protocol-Version": "1999-01-01"}, 400),
        ({**session, "Mcp-Session-Id": "gone"}, 404),
        ({**MCP_HEADERS, **token}, 400),  # a request but initialize without a session
    ]
    for headers, status in refusals:
        for request_id in ("list-1", 42, 0):
            body = {**listing, "id": request_id}
            answer = httpx.post(url, json=body, headers=headers)
            assert answer.status_code == status, (headers, answer.text)
            refused = strict_json(answer.text)
            before_token = status in (401, 403, 421)
            assert refused["id"] == (None if before_token else request_id), (headers, refused)
            assert refused["jsonrpc"] == "2.0" and refused["error"]["message"], refused
    unreadable = [b"{not json", b'[{"jsonrpc": "2.0", "id": 3, "method": "ping"}]',
                  b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
                  b'{"jsonrpc": "2.0", "id": true, "method": "ping"}']  # fmt: skip
    for content in unreadable:
        answer = httpx.post(
            url, content=content, headers={**session, "Origin": "http://evil.example"}
        )
        assert answer.status_code == 403 and strict_json(answer.text)["id"] is None, content
    oversized = b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "x": "' + b"a" * (1 << 20) + b'"}'
    answer = httpx.post(
        url, content=oversized, headers={**MCP_HEADERS, "Origin": "http://evil.example"}
    )
    assert answer.status_code == 403 and strict_json(answer.text)["id"] is None


def mcp_session_with(url: str, headers: dict[str, str]) -> dict[str, str]:
    """An initialized session's headers on the /mcp at ``url``, sent with ``headers``."""
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
    answer = httpx.post(url, json=hello, headers={**MCP_HEADERS, **headers})
    assert answer.status_code == 200, answer.text
    session = {**MCP_HEADERS, "Mcp-Session-Id": answer.headers["mcp-session-id"]}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    httpx.post(url, json=initialized, headers={**session, **headers})
    return session


def test_a_cancelled_request_gets_no_answer_on_mcp(serve: StartServe, tmp_path: Path) -> None:
    """notifications/cancelled for a call in flight: its process is killed and the call's
    stream ends without an answer, as on stdio (MCP: a cancelled request gets none; the
    SDK sent an error of code 0, "Request cancelled")."""
    url = serve().url
    session = mcp_session(url)
    pidfile = tmp_path / "cancelled.pid"
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "hang", "arguments": {"pidfile": str(pidfile)}}}  # fmt: skip
    answers: list[str] = []
    thread = threading.Thread(
        target=lambda: answers.append(
            httpx.post(f"{url}/mcp", json=call, headers=session, timeout=60).text
        )
    )
    thread.start()
    pid = read_pid(pidfile)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": 2, "reason": "test"}}  # fmt: skip
    assert httpx.post(f"{url}/mcp", json=cancel, headers=session).status_code == 202
    thread.join(timeout=30)
    assert not thread.is_alive() and wait_for(lambda: not alive(pid))
    assert '"id":2' not in answers[0].replace(" ", ""), answers[0]


def test_a_backtracking_pattern_cannot_freeze_the_server(serve: StartServe, tmp_path: Path) -> None:
    import threading
    import time

    url = serve("--registry", str(hostile_registry(tmp_path, BACKTRACK))).url
    answers: list[httpx.Response] = []

    def hostile() -> None:
        body = {"tool_id": "picky", "params": {"word": "a" * 40 + "!"}}
        answers.append(httpx.post(f"{url}/run_tool", json=body, timeout=60))

    started = time.monotonic()
    thread = threading.Thread(target=hostile)
    thread.start()
    health = httpx.get(f"{url}/health", timeout=60)
    thread.join(60)
    assert health.status_code == 200
    assert answers and answers[0].status_code == 422, answers
    assert "must match pattern" in answers[0].json()["error"]
    assert time.monotonic() - started < 10  # backtracking: 2**40 steps, hours


def test_origin_is_scheme_host_and_port(serve: StartServe) -> None:
    url = serve("--allow-origin", "http://localhost:6274").url
    port = url.rsplit(":", 1)[1]
    for origin, status in (
        (f"http://127.0.0.1:{port}", 200),
        (f"http://localhost:{port}", 200),
        ("http://localhost:9999", 403),
        ("http://localhost", 403),
        (f"https://127.0.0.1:{port}", 403),
        ("http://localhost:6274", 200),  # let in by --allow-origin
        ("http://localhost:99999", 403),
    ):
        got = httpx.get(f"{url}/tools", headers={"Origin": origin}).status_code
        assert got == status, origin


def test_a_disconnect_mid_body_logs_one_line(serve: StartServe) -> None:
    served = serve()
    host, port = served.url.removeprefix("http://").split(":")
    for path in ("/run_tool", "/mcp", "/run_tool"):
        with socket.create_connection((host, int(port)), timeout=10) as connection:
            connection.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                'Content-Length: 1000\r\n\r\n{"tool_id": '.encode()
            )
    assert httpx.get(f"{served.url}/health").status_code == 200
    served.stop()
    log = served.log.read_text()
    assert "Traceback" not in log, log[-3000:]


def _post_and_leave(
    url: str, path: str, body: bytes, headers: dict[str, str], pidfile: Path
) -> int:
    """POST ``body`` on a raw connection, wait for the tool's pid, then hang up."""
    host, port = url.removeprefix("http://").split(":")
    lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"{lines}Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        pid = read_pid(pidfile)
        connection.shutdown(socket.SHUT_RDWR)
    return pid


def test_a_client_that_disconnects_cancels_its_call(serve: StartServe, tmp_path: Path) -> None:
    served = serve()
    pidfile = tmp_path / "rest.pid"
    body = json.dumps({"tool_id": "hang", "params": {"pidfile": str(pidfile)}}).encode()
    pid = _post_and_leave(served.url, "/run_tool", body, {}, pidfile)
    assert wait_for(lambda: not alive(pid), 15), "the REST call outlived its client"
    session = mcp_session(served.url)
    pidfile = tmp_path / "mcp.pid"
    call = {
        "jsonrpc": "2.0",
        "id": 41,
        "method": "tools/call",
        "params": {"name": "hang", "arguments": {"pidfile": str(pidfile)}},
    }
    pid = _post_and_leave(served.url, "/mcp", json.dumps(call).encode(), session, pidfile)
    assert wait_for(lambda: not alive(pid), 15), "the MCP call outlived its client"
    assert httpx.get(f"{served.url}/health").json()["status"] == "ok"
    served.stop()
    log = served.log.read_text()
    assert log.count('"event": "disconnect"') + log.count('"event":"disconnect"') == 2, log
    assert "Traceback" not in log


def test_many_disconnects_do_not_fill_the_server(serve: StartServe, tmp_path: Path) -> None:
    served = serve()
    pids = []
    for n in range(12):
        pidfile = tmp_path / f"{n}.pid"
        body = json.dumps({"tool_id": "hang", "params": {"pidfile": str(pidfile)}}).encode()
        pids.append(_post_and_leave(served.url, "/run_tool", body, {}, pidfile))
    assert wait_for(lambda: not any(alive(p) for p in pids), 20)
    ran = httpx.post(f"{served.url}/run_tool", json={"tool_id": "echo", "params": {"text": "x"}})
    assert ran.status_code == 200 and ran.json()["output"] == "x"


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["\ud800", "a\udc00b", "echo", "data", "nan", "fail"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["tool_id", "params", "text", "name", "arguments", "\ud800"]), inner
        )
    ),
    max_leaves=10,
)
NAMES = st.text(max_size=12) | st.sampled_from(["echo", "ec\ud800ho", "\udfff", "data", "nan"])


def _body(value: Any) -> bytes:
    return json.dumps(value).encode()  # ensure_ascii: a lone surrogate goes as its escape


BODIES = (
    st.binary(max_size=64)
    | JSON_VALUES.map(_body)
    | st.builds(lambda n, v: _body({"tool_id": n, "params": v}), NAMES, JSON_VALUES)
    | st.integers(1, 50_000).map(lambda depth: b"[" * depth + b"]" * depth)
)


@settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=BODIES, name=NAMES, arguments=JSON_VALUES)
def test_serve_bodies_and_names_never_5xx(
    body: bytes, name: str, arguments: Any, hostile_server: tuple[str, dict[str, str]]
) -> None:
    url, session = hostile_server
    headers = {"Content-Type": "application/json"}
    ran = httpx.post(f"{url}/run_tool", content=body, headers=headers, timeout=60)
    assert ran.status_code < 500, (body[:80], ran.text[:200])
    strict_json(ran.text)
    posted = httpx.post(f"{url}/mcp", content=body, headers={**session, **headers}, timeout=60)
    assert posted.status_code < 500, (body[:80], posted.text[:200])
    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    answer = httpx.post(
        f"{url}/mcp", content=_body(call), headers={**session, **headers}, timeout=60
    )
    assert answer.status_code < 500, (name, answer.text[:200])
    if answer.text.strip():
        mcp_message(answer.text)  # strict JSON: no NaN, no bytes that are not UTF-8


@pytest.fixture
def hostile_server(serve: StartServe, tmp_path: Path) -> tuple[str, dict[str, str]]:
    url = serve("--registry", str(hostile_registry(tmp_path, NAN))).url
    return url, mcp_session(url)


def test_a_request_the_sdk_cannot_validate_is_one_line_in_the_log(serve: StartServe) -> None:
    """The MCP SDK logs a request it cannot validate with pydantic's whole report (some 70
    lines) on the root logger, and uvicorn a bad HTTP request in its own format: the
    server's log keeps one `toolctl: ...` line each, so a client cannot garble it."""
    served = serve()
    session = mcp_session(served.url)
    bad = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "x", "arguments": []},
    }
    answer = httpx.post(f"{served.url}/mcp", json=bad, headers=session)
    assert answer.status_code == 200
    assert mcp_message(answer.text)["error"] == {  # refused before the SDK, the field named
        "code": -32602, "message": "Invalid params: params.arguments: Input should be a valid dictionary"
    }  # fmt: skip
    raw_request(served.url, b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n")
    served.stop()
    lines = served.log.read_text().splitlines()
    odd = [line for line in lines if not line.startswith(("{", "toolctl: "))]
    assert odd == [], odd  # JSON events and one-line warnings only


def test_mcp_bodies_the_stdio_door_refuses_are_400_json_rpc_errors(serve: StartServe) -> None:
    """Over /mcp as over stdio: a number that is not finite (the SDK would read it as null
    and run the tool with it), a batch, JSON that is no JSON-RPC message; a bad
    notification is accepted and dropped."""
    served = serve()
    session = {**mcp_session(served.url), "Content-Type": "application/json"}
    for body, request_id, said in [
        (
            b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call",'
            b' "params": {"name": "echo", "arguments": {"text": NaN}}}',
            4,
            "Invalid Request: a number that is not finite (nan)",
        ),
        (b'[{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}]', None, "batches"),
        (b'{"hello": 1, "id": 6}', 6, "Invalid Request: not a JSON-RPC message"),
        (b"", None, "Parse error: no body"),
        (b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', None, "neither a string"),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', None, "nor an integer"),
    ]:
        answer = httpx.post(f"{served.url}/mcp", content=body, headers=session)
        assert answer.status_code == 400, answer.text
        error = answer.json()
        assert error["id"] == request_id and said in error["error"]["message"], error
    notification = b'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"v": NaN}}'
    dropped = httpx.post(f"{served.url}/mcp", content=notification, headers=session)
    assert (dropped.status_code, dropped.content) == (202, b"")
    assert mcp_call(served.url, session, "echo", {"text": "still"})["result"]["content"]


def _connect(url: str, first: bytes = b"") -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=60)
    if first:
        connection.sendall(first)
    return connection


def _closed_or_answered(connection: socket.socket) -> bytes:
    """What the server sends before it closes (b"" when it just closes); a test whose
    server never closes fails on the 60 s timeout."""
    with connection:
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_slow_clients_are_cut_off(serve: StartServe) -> None:
    """Slowloris: a connection that sends nothing, headers that never end and a body that
    drips are each ended (the first two closed, the body 408), so clients cannot hold a
    server's connections for as long as they like before any token is read."""
    served = serve()
    idle = _connect(served.url)
    headers = _connect(served.url, b"GET /tools HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: ")
    post = b"POST /run_tool HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    body = _connect(served.url, post + b"Content-Length: 100\r\n\r\n{")

    def drip() -> None:  # a byte a second: the 408 must end the connection, not only answer
        with contextlib.suppress(OSError):
            for _ in range(90):
                time.sleep(1)
                body.send(b" ")

    threading.Thread(target=drip, daemon=True).start()
    assert _closed_or_answered(idle) == b""
    assert _closed_or_answered(headers) == b""
    answered = _closed_or_answered(body)
    assert answered.startswith(b"HTTP/1.1 408 "), answered
    assert b"the request body did not arrive within" in answered
    assert httpx.get(f"{served.url}/health").status_code == 200


def test_connections_past_the_servers_share_of_files_are_closed_as_they_come(
    serve: StartServe,
) -> None:
    """With 256 file descriptors, clients holding 300 connections never leave the server
    without one to accept with: past half of them each is closed at once, and the idle
    ones are cut off, so /health answers while the clients still hold theirs."""
    import resource

    served = serve()
    resource.prlimit(served.child.pid, resource.RLIMIT_NOFILE, (256, 256))
    held = [_connect(served.url) for _ in range(300)]
    try:
        assert wait_for(lambda: _health(served.url), 60), "the server never answered again"
    finally:
        for connection in held:
            connection.close()


def _health(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_key_given_twice_is_refused_not_read_last_wins(serve: StartServe) -> None:
    """`{"tool_id": "echo", "tool_id": "fail"}` ran the second: a proxy or audit log that
    reads the first sees another tool than the one run. Refused, REST and /mcp alike."""
    served = serve()
    json_type = {"Content-Type": "application/json"}
    twice = b'{"tool_id": "echo", "tool_id": "fail", "params": {}}'
    ran = httpx.post(f"{served.url}/run_tool", content=twice, headers=json_type)
    assert ran.status_code == 400 and "the body gives 'tool_id' twice" in ran.text, ran.text
    huge = b'{"tool_id": "echo", "params": {"text": ' + b"9" * 5000 + b"}}"
    ran = httpx.post(f"{served.url}/run_tool", content=huge, headers=json_type)
    assert ran.status_code == 400 and "sys.set_int_max_str_digits" not in ran.text, ran.text
    session = {**mcp_session(served.url), **json_type}
    call = (
        b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call",'
        b' "params": {"name": "echo", "name": "fail", "arguments": {}}}'
    )
    answer = httpx.post(f"{served.url}/mcp", content=call, headers=session)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == {
        "code": -32600,
        "message": "Invalid Request: it gives 'name' twice",
    }


def test_mcp_sessions_past_the_limit_are_refused(serve: StartServe) -> None:
    """Each MCP session holds memory for 30 min: past 1,000 open, a new one is 503 (the
    SDK's own limit was 10,000, some 650 MiB), and the sessions open go on."""
    from toolctl.serve.gateway import MAX_MCP_SESSIONS

    served = serve()
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    with httpx.Client(headers=MCP_HEADERS, timeout=30) as client:
        opened = [client.post(f"{served.url}/mcp", json=hello) for _ in range(MAX_MCP_SESSIONS)]
        assert {answer.status_code for answer in opened} == {200}
        assert client.post(f"{served.url}/mcp", json=hello).status_code == 503
        first = {**MCP_HEADERS, "Mcp-Session-Id": opened[0].headers["mcp-session-id"]}
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        assert client.post(f"{served.url}/mcp", json=listing, headers=first).status_code == 200
