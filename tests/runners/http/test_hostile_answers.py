"""HTTP servers that answer badly, over real sockets: a head that never ends, bodies their
Content-Encoding does not decode, charsets that name no text encoding, JSON nested past
recursion or holding lone surrogates. Each is a line and an exit code, never exit 70 or a
hang, and a `--batch` keeps every other line's result."""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files

TOKEN = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123"

Reply = Callable[[socket.socket, bytes], None]


def _answer(status: bytes, headers: list[bytes], body: bytes) -> Reply:
    def reply(connection: socket.socket, head: bytes) -> None:
        connection.sendall(
            b"HTTP/1.1 " + status + b"\r\n" + b"".join(h + b"\r\n" for h in headers)
            + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
        )  # fmt: skip

    return reply


def _forever(first: bytes, then: bytes) -> Reply:
    def reply(connection: socket.socket, head: bytes) -> None:
        connection.sendall(first)
        for _ in range(120):  # a minute of it, at most
            connection.sendall(then)
            time.sleep(0.5)

    return reply


def _echo(connection: socket.socket, head: bytes) -> None:
    """A 500 echoing the request's Authorization header, far enough in that the excerpt
    of the failure (its first 200 characters) cuts the token."""
    sent = next(line for line in head.split(b"\r\n") if line.lower().startswith(b"authorization"))
    _answer(b"500 Oops", [], b"x" * 150 + b" you sent " + sent)(connection, head)


ANSWERS: dict[str, Reply] = {
    "echo": _echo,
    "continue": _forever(b"", b"HTTP/1.1 100 Continue\r\n\r\n"),  # interim answers, forever
    "drip": _forever(b"HTTP/1.1 200 OK\r\n", b"X"),  # a head a byte at a time
    "badgzip": _answer(b"200 OK", [b"Content-Encoding: gzip"], b"not gzip at all"),
    "cutgzip": _answer(
        b"200 OK", [b"Content-Encoding: gzip"], gzip.compress(b"hello world " * 100)[:-20]
    ),
    "members": _answer(
        b"200 OK", [b"Content-Encoding: gzip"], gzip.compress(b"first ") + gzip.compress(b"second")
    ),
    "rot13": _answer(b"200 OK", [b"Content-Type: text/plain; charset=rot13"], b"hello"),
    "base64": _answer(b"500 Oops", [b"Content-Type: text/plain; charset=base64"], b"broken"),
    "deep": _answer(
        b"500 Oops", [b"Content-Type: application/json"], b"[" * 100_000 + b"]" * 100_000
    ),
    "surrogate": _answer(
        b"200 OK", [b"Content-Type: application/json"], b'{"result": "bad \\ud800 thing"}'
    ),
}


@pytest.fixture
def bad_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A server answering each path (``/continue``, ``/badgzip``...) as ANSWERS says; the
    tools send it ``Bearer $TOKEN``."""
    monkeypatch.setenv("TOKEN", TOKEN)
    listener = socket.create_server(("127.0.0.1", 0))
    stopping = threading.Event()

    def handle(connection: socket.socket) -> None:
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(65536) or b"\r\n\r\n"
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                (int(line.split(b":")[1]) for line in head.split(b"\r\n")
                 if line.lower().startswith(b"content-length:")), 0,
            )  # fmt: skip
            while len(body) < length:  # read whole: closing on unread bytes resets the line
                body += connection.recv(65536) or b" " * length
            path = head.split(b" ", 2)[1].decode().strip("/")
            with contextlib.suppress(OSError):  # the client went away
                ANSWERS[path](connection, head)

    def serve() -> None:
        while not stopping.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(connection,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    stopping.set()
    listener.close()


def _registry(tmp_path: Path, port: int) -> Path:
    tools = "".join(
        f'[[tool]]\nname = "{name}"\ntimeout = 3\n[tool.http]\n'
        f'url = "http://127.0.0.1:{port}/{name}"\nmethod = "POST"\n'
        'headers = { Authorization = "Bearer ${env:TOKEN}" }\n\n'
        for name in ANSWERS
    )
    return write_files(tmp_path / "reg", {"tools.toml": tools})


@pytest.mark.parametrize("path", ["continue", "drip"])
def test_a_head_that_never_ends_is_cut_at_the_timeout(
    toolctl: Toolctl, tmp_path: Path, bad_server: int, path: str
) -> None:
    """httpx's timeout bounds each read: interim `100 Continue` answers, or a head sent a
    byte at a time, held `toolctl run` (and a batch, and a server's slot) for good."""
    registry = _registry(tmp_path, bad_server)
    started = time.monotonic()
    done = toolctl("run", path, "-r", str(registry))
    assert done.returncode == 124, done.stderr
    assert done.stderr == (
        f"toolctl: error: POST http://127.0.0.1:{bad_server}/{path} got no answer within 3 s\n"
    )
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    ("path", "code", "said"),
    [
        ("badgzip", 5, "the answer cannot be read: its gzip body is not one (Error -3"),
        ("cutgzip", 5, "the answer cannot be read: its gzip body ends before its data does"),
        ("base64", 1, "the tool failed: HTTP 500 Oops from POST"),
        ("deep", 1, "the tool failed: HTTP 500 Oops from POST"),
    ],
)
def test_an_answer_that_cannot_be_read_is_a_line_not_an_internal_error(
    toolctl: Toolctl, tmp_path: Path, bad_server: int, path: str, code: int, said: str
) -> None:
    """Each was exit 70 (DecodingError, an AssertionError from a `base64` charset, a
    RecursionError), and a cut-short gzip body was the part that came, exit 0."""
    done = toolctl("run", path, "-r", str(_registry(tmp_path, bad_server)))
    assert done.returncode == code, done.stderr
    assert len(done.stderr.splitlines()) == 1 and said in done.stderr, done.stderr


def test_answers_that_are_whole_are_read_whole(
    toolctl: Toolctl, tmp_path: Path, bad_server: int
) -> None:
    """A gzip body of two members was its first; a charset naming no text encoding (rot13)
    was exit 70: read as UTF-8. A lone surrogate in a JSON answer made `--json` exit 70, and
    a batch lose every line: each is its `\\udXXX` escape, in strict JSON."""
    registry = str(_registry(tmp_path, bad_server))
    assert toolctl("run", "members", "-r", registry).stdout == "first second\n"
    assert toolctl("run", "rot13", "-r", registry).stdout == "hello\n"
    result = toolctl("run", "surrogate", "--json", "-r", registry)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["data"] == {"result": "bad \\ud800 thing"}
    result.stdout.encode("utf-8")  # strict UTF-8: no lone surrogate written
    lines = "{}\n" * 3
    batch = toolctl("run", "surrogate", "--batch", "-", "-r", registry, input=lines)
    assert batch.returncode == 0, batch.stderr
    assert [json.loads(line)["success"] for line in batch.stdout.splitlines()] == [True] * 3


def test_a_secret_an_excerpt_cuts_is_not_printed_in_part(
    toolctl: Toolctl, tmp_path: Path, bad_server: int
) -> None:
    """A failure's excerpt (its first 200 characters) was masked after the cut: a token the
    cut fell inside no longer matched, and its start was printed (19 of 40 characters)."""
    registry = str(_registry(tmp_path, bad_server))
    done = toolctl("run", "echo", "--json", "-r", registry)
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert error.endswith("you sent Authorization: Bearer ***…"), error
    assert TOKEN[:8] not in done.stdout + done.stderr


@pytest.mark.parametrize("header", ["Content-Length", "Transfer-Encoding", "Host", "connection"])
def test_a_header_that_frames_the_message_is_refused_by_check(
    toolctl: Toolctl, tmp_path: Path, header: str
) -> None:
    """`Content-Length = "5"` passed `check`, and every request then failed inside httpx
    (exit 70); `Host` sent the request where the URL does not say."""
    tool = (
        '[[tool]]\nname = "h"\n[tool.http]\nurl = "http://127.0.0.1:9/x"\nmethod = "POST"\n'
        f'headers = {{ "{header}" = "5" }}\n'
    )
    registry = str(write_files(tmp_path / "reg", {"t.toml": tool}))
    done = toolctl("check", "-r", registry)
    assert done.returncode == 3
    assert f"header '{header}' cannot be sent: it is one the HTTP client sets itself" in (
        done.stdout
    )
