"""`toolctl mcp serve` on stdio against hostile lines (issue #24 items 6 and 12): every line
that is not a message is answered with a JSON-RPC error, lines are bounded, a lone surrogate
gets an answer, and the server goes on serving."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import write_files
from toolctl.serve.stdio_wire import MAX_LINE, Line, read_line, triage

HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


def send(pipe: IO[bytes], data: bytes) -> None:
    pipe.write(data)
    pipe.flush()


def answer(pipe: IO[bytes]) -> Any:
    line = pipe.readline()
    assert line, "the server closed stdout"
    return json.loads(line)


@pytest.fixture
def stdio_server(registry: Path) -> Any:
    child = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "mcp", "serve", "--registry", str(registry)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdin is not None and child.stdout is not None
    send(child.stdin, json.dumps(HELLO).encode() + b"\n")
    assert answer(child.stdout)["id"] == 1
    send(child.stdin, b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    yield child
    child.stdin.close()
    child.wait(timeout=30)


def test_bad_lines_are_answered_and_the_server_goes_on(stdio_server: Any) -> None:
    stdin, stdout = stdio_server.stdin, stdio_server.stdout
    cases = [
        (b"garbage\n", -32700, None),
        (b"\xff\xfe\n", -32700, None),
        (b"[" * 100_000 + b"\n", -32700, None),
        (b'[{"jsonrpc": "2.0", "id": 5, "method": "ping"}]\n', -32600, None),
        (b"[]\n", -32600, None),
        (b'{"jsonrpc": "2.0", "id": 6, "method": 7}\n', -32600, 6),
        (
            b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", '
            b'"params": {"name": "ec\\ud800ho", "arguments": {}}}\n',
            -32600,
            8,
        ),
        (b"x" * (MAX_LINE + 10) + b"\n", -32600, None),
    ]
    for line, code, request_id in cases:
        send(stdin, line)
        got = answer(stdout)
        assert got["error"]["code"] == code and got["id"] == request_id, (line[:60], got)
    send(stdin, b'{"jsonrpc": "2.0", "id": 9, "method": "ping"}\n')
    assert answer(stdout) == {"jsonrpc": "2.0", "id": 9, "result": {}}


def test_a_line_that_is_not_utf8_is_said_so(stdio_server: Any) -> None:
    """JSON of bytes was read as UTF-16 from its first two bytes (`'utf-16-le' codec can't
    decode ...`): MCP's stdio is UTF-8."""
    send(stdio_server.stdin, b"\xff\xfe\n")
    got = answer(stdio_server.stdout)
    assert got["error"] == {
        "code": -32700,
        "message": "Parse error: the line is not UTF-8 (byte 0xff at 0)",
    }


def test_a_cursor_never_handed_out_is_invalid_params(stdio_server: Any) -> None:
    """MCP: an invalid cursor SHOULD be -32602; the whole list came back as a page."""
    stdin, stdout = stdio_server.stdin, stdio_server.stdout
    send(stdin, b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "x"}}\n')
    got = answer(stdout)
    assert (got["id"], got["error"]["code"]) == (3, -32602), got
    send(stdin, b'{"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}\n')
    assert "tools" in answer(stdout)["result"]


def test_an_answer_to_nothing_the_server_asked_is_ignored(stdio_server: Any) -> None:
    """A client's response with an id the server never asked (a stray, a replay): the SDK
    sent the client an error-level "Internal Server Error" log message, and warned on
    stderr. MCP says it is ignored; the next answer is the next request's."""
    stdin, stdout = stdio_server.stdin, stdio_server.stdout
    send(stdin, b'{"jsonrpc": "2.0", "id": 77, "result": {}}\n')
    send(stdin, b'{"jsonrpc": "2.0", "id": 78, "error": {"code": 1, "message": "x"}}\n')
    send(stdin, b'{"jsonrpc": "2.0", "id": 9, "method": "ping"}\n')
    assert answer(stdout) == {"jsonrpc": "2.0", "id": 9, "result": {}}


def test_a_request_whose_id_is_not_a_string_or_an_integer_is_answered(
    stdio_server: Any,
) -> None:
    """MCP requests carry a string or integer id: one with null, an object, a boolean or a
    fraction is -32600 (id null), not taken for a notification and dropped; a
    notification no client sends, or with params not its own, is ignored without an
    answer (MCP), and the server goes on."""
    stdin, stdout = stdio_server.stdin, stdio_server.stdout
    for request_id in ("null", '{"a": 1}', "true", "1.5", "[1]"):
        send(stdin, f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "ping"}}\n'.encode())
        got = answer(stdout)
        assert (got["id"], got["error"]["code"]) == (None, -32600), (request_id, got)
        assert "neither a string nor an integer" in got["error"]["message"]
    send(stdin, b'{"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}}\n')
    send(stdin, b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 3}\n')
    send(stdin, b'{"jsonrpc": "2.0", "id": 9, "method": "ping"}\n')
    assert answer(stdout) == {"jsonrpc": "2.0", "id": 9, "result": {}}


def test_a_long_line_is_read_in_bounded_pieces(tmp_path: Path) -> None:
    path = tmp_path / "lines"
    path.write_bytes(b"a" * 100 + b"\n" + b"ok\n" + b"b" * 10)
    with open(path, "rb") as stdin:
        first = read_line(stdin, limit=8)
        assert first is not None and first.data is None
        second = read_line(stdin, limit=8)
        assert second is not None and second.data == b"ok\n"
        third = read_line(stdin, limit=8)
        assert third is not None and third.data is None  # 10 bytes, no newline: over 8
        assert read_line(stdin, limit=8) is None


@settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    data=st.binary(max_size=64)
    | st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass"))
    | st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params"]), inner)
        ),
        max_leaves=8,
    ).map(lambda v: json.dumps(v).encode())
)
def test_any_line_is_a_message_an_answer_or_nothing(data: bytes) -> None:
    message, error = triage(Line(data + b"\n"))
    assert message is None or error is None
    if error is not None:
        assert error["error"]["code"] in (-32700, -32600)
        json.dumps(error, allow_nan=False).encode("utf-8")  # always sendable


def test_a_key_given_twice_is_answered_with_the_requests_id(tmp_path: Path) -> None:
    """Refused (-32600), and with its id: a client waits for the answer to its request."""

    registry = write_files(
        tmp_path / "reg", {"t.toml": '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\n'}
    )
    argv = [sys.executable, "-m", "toolctl", "mcp", "serve", "-r", str(registry)]
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    done = subprocess.run(
        argv,
        input=json.dumps(call)[:-1] + ', "id": 6}\n',
        capture_output=True,
        text=True,
        timeout=60,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers == [
        {
            "jsonrpc": "2.0",
            "id": 6,
            "error": {"code": -32600, "message": "Invalid Request: it gives 'id' twice"},
        }
    ]
