"""The servers stopped by every signal a terminal or supervisor sends, and `mcp serve` by
stdin closing, with calls in flight: nothing they started is left (a local tool's
``setsid`` grandchild, a container), and they end with the documented code.

`mcp serve`: SIGTERM 143, SIGINT 130, SIGHUP 129, SIGQUIT 131; stdin closed 0.
`serve`: SIGTERM drains (a call past the grace is cancelled and answered 503) and exits
0; SIGHUP ends it with 129.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import write_files
from tests.mcp.conftest import bare_registry
from tests.runners.container.conftest import IMAGE, leftovers, podman, use_podman
from tests.runners.http.test_http_stop import Silent
from tests.runners.http.test_http_stop import registry as http_stop_registry
from tests.runners.test_lifetimes import gone, markers, spawner, survivors
from tests.serve.serve_support import StartServe, wait_for

__all__ = ["leftovers", "podman", "use_podman"]  # the container tests' fixtures, used here

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


def container_registry(tmp_path: Path) -> tuple[Path, str]:
    """A registry whose one tool runs a container that ignores SIGTERM, and the tool's name:
    its own per test, so that tests running at once never see each other's containers
    (``leftovers(f"toolctl-{name}-")``)."""
    name = f"ct-signalled-{os.urandom(4).hex()}"
    tool = f"""
    [[tool]]
    name = "{name}"
    timeout = 120
    [tool.container]
    image = "{IMAGE}"
    command = ["sh", "-c", "trap '' TERM; sleep 120"]
    input = "none"
    """
    return write_files(tmp_path / "reg", {"t.toml": tool}), name


def spawning_registry(tmp_path: Path) -> tuple[Path, tuple[str, str, str]]:
    """A registry whose tool ``spawner`` leaves two grandchildren and then sleeps."""
    marks = markers()
    registry = write_files(tmp_path / "reg", {"t.toml": spawner(marks, then="sleep {last}")})
    return registry, marks


def mcp_serve(registry: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "mcp", "serve", "--registry", str(registry)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=registry.parent,
        env=dict(os.environ),
    )
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    send(child, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
    send(child, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return child


def send(child: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert child.stdin is not None
    child.stdin.write(json.dumps(message) + "\n")
    child.stdin.flush()


def call(child: subprocess.Popen[str], tool: str) -> None:
    params = {"name": tool, "arguments": {}}
    send(child, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})


def ended(child: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    return child.returncode, stderr


STOPPING = [
    pytest.param(signal.SIGTERM, 143, id="TERM"),
    pytest.param(signal.SIGINT, 130, id="INT"),
    pytest.param(signal.SIGHUP, 129, id="HUP"),
    pytest.param(signal.SIGQUIT, 131, id="QUIT"),
]


@pytest.mark.parametrize(("signum", "code"), STOPPING)
def test_mcp_serve_stopped_by_a_signal_leaves_no_grandchild(
    tmp_path: Path, signum: int, code: int
) -> None:
    registry, marks = spawning_registry(tmp_path)
    child = mcp_serve(registry)
    call(child, "spawner")
    assert started(marks)  # the tool's last sleep and both grandchildren
    child.send_signal(signum)
    returncode, stderr = ended(child)
    assert returncode == code, stderr
    assert "Traceback" not in stderr
    assert gone(marks) == []


def test_a_signal_while_mcp_serve_closes_a_slow_server_ends_it_quietly(tmp_path: Path) -> None:
    """The SDK's stdio client closes stdin, then sends SIGTERM 2 s later: the signal came
    while `mcp serve` waited for an upstream server to exit, after its event loop had
    closed, and was an internal error (70) that left that server running."""
    pid_file = tmp_path / "pid"
    registry = bare_registry(tmp_path, "slow", BARE_PID_FILE=str(pid_file), BARE_LINGER="60")
    child = mcp_serve(registry)
    call(child, "slow.t")
    assert child.stdout is not None
    answers = [json.loads(child.stdout.readline()) for _ in range(2)]
    assert answers[1]["result"]["content"][0]["text"] == "ok"
    upstream = int(pid_file.read_text())
    assert child.stdin is not None
    child.stdin.close()
    child.stdin = None
    threading.Event().wait(0.5)  # closing: the upstream server gets its grace
    child.send_signal(signal.SIGTERM)
    returncode, stderr = ended(child)
    assert returncode in (0, 143), stderr
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
    assert wait_for(lambda: not _alive(upstream), 10), "the upstream server was left running"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_cancelled_mcp_backed_call_ends_at_once(tmp_path: Path) -> None:
    """`notifications/cancelled` for a call to an upstream MCP server was passed on, but
    the call kept waiting for an answer no server sends to a cancelled request: `mcp
    serve` then took the whole drain (10 s) and more to end when its stdin closed, and the
    SDK client's SIGKILL left the upstream server running."""
    import time

    from toolctl.serve.dispatch import DRAIN_SECONDS

    child = mcp_serve(bare_registry(tmp_path, "silent", BARE_CALL="silent"))
    params = {"name": "silent.t", "arguments": {}}
    send(child, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
    assert child.stdout is not None
    assert json.loads(child.stdout.readline())["id"] == 1  # initialized: the call is sent
    threading.Event().wait(1.5)
    cancelled = {"requestId": 2, "reason": "test"}
    send(child, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancelled})
    threading.Event().wait(0.5)
    assert child.stdin is not None
    started = time.monotonic()
    child.stdin.close()
    child.stdin = None
    returncode, stderr = ended(child)
    assert returncode == 0, stderr
    assert time.monotonic() - started < DRAIN_SECONDS, "the cancelled call held the drain"


def test_mcp_serve_whose_stdin_closes_leaves_no_grandchild(tmp_path: Path) -> None:
    registry, marks = spawning_registry(tmp_path)
    child = mcp_serve(registry)
    call(child, "spawner")
    assert started(marks)
    assert child.stdin is not None
    child.stdin.close()
    child.stdin = None  # closed: communicate() has nothing more to send
    returncode, stderr = ended(child)
    assert returncode == 0, stderr
    assert gone(marks) == []


# a pipe holds 16 pages: one small answer a page (writes do not share one past its end)
@pytest.mark.parametrize(("size", "calls", "full"), [(300_000, 5, 60_000), (3_000, 60, 45_000)])
def test_mcp_serve_blocked_writing_to_a_client_that_never_reads_stops_on_sigterm(
    tmp_path: Path, size: int, calls: int, full: int
) -> None:
    """The answers fill the pipe the client never reads; the first SIGTERM still ends the
    server (143), rather than waiting for the client to read. Small answers too, which are
    written on the event loop's own thread while the pipe has room for them whole."""
    tool = f"""
    [[tool]]
    name = "big"
    [tool.local]
    command = ["python3", "-c", "print('x' * {size})"]
    input = "none"
    """
    child = mcp_serve(write_files(tmp_path / "reg", {"t.toml": tool}))
    for number in range(3, 3 + calls):  # far past a pipe's 64 KiB of answers
        params = {"name": "big", "arguments": {}}
        send(child, {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params})
    assert wait_for(lambda: _pipe_full(child, full), seconds=60), "the pipe never filled"
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(timeout=60)  # stdout still unread
    finally:
        child.kill()
        ended(child)
    assert child.returncode == 143


def _pipe_full(child: subprocess.Popen[str], full: int) -> bool:
    """Whether the server is blocked writing: its stdout pipe holds ``full`` bytes."""
    import fcntl
    import termios

    assert child.stdout is not None
    unread = bytearray(4)
    fcntl.ioctl(child.stdout.fileno(), termios.FIONREAD, unread)
    return int.from_bytes(unread, sys.byteorder) >= full


@pytest.mark.parametrize(("signum", "code"), STOPPING[:2])
def test_mcp_serve_stopped_by_a_signal_leaves_no_container(
    podman: str,
    tmp_path: Path,
    leftovers: Callable[[str], list[str]],
    signum: int,
    code: int,
) -> None:
    registry, name = container_registry(tmp_path)
    child = mcp_serve(registry)
    call(child, name)
    assert wait_for(lambda: leftovers(f"toolctl-{name}-") != [], seconds=60)
    child.send_signal(signum)
    returncode, stderr = ended(child)
    assert returncode == code, stderr
    assert leftovers(f"toolctl-{name}-") == []


def post_spawner(url: str, answers: list[httpx.Response]) -> None:
    with contextlib.suppress(httpx.HTTPError):  # a server that ends answers nothing
        answers.append(httpx.post(f"{url}/run_tool", json={"tool_id": "spawner"}, timeout=60))


def test_serve_drains_on_sigterm_answers_503_and_exits_0(serve: StartServe, tmp_path: Path) -> None:
    registry, marks = spawning_registry(tmp_path)
    served = serve("--grace", "1", "--registry", str(registry))
    answers: list[httpx.Response] = []
    caller = threading.Thread(target=post_spawner, args=(served.url, answers))
    caller.start()
    assert started(marks)
    assert served.stop(signal.SIGTERM, timeout=60) == 0, served.log.read_text()
    caller.join(timeout=30)
    assert [a.status_code for a in answers] == [503]
    assert answers[0].json()["success"] is False
    # the call was ended by the server's SIGTERM: told and recorded as terminated (143),
    # as `run` tells it (it was "cancelled", exit 130, whatever the signal)
    body = answers[0].json()
    assert (body["error"], body["error_code"], body["exit_code"]) == (
        "terminated; the call was stopped",
        "terminated",
        143,
    )
    assert body["transport"] == "local" and body["duration_ms"] > 0
    assert gone(marks) == []
    assert "Traceback" not in served.log.read_text()


def test_serve_drains_an_http_call_that_gets_no_answer(serve: StartServe, tmp_path: Path) -> None:
    """An HTTP tool's call past the grace ends then (503, 143), not when its server answers
    (here never; its timeout is minutes), and no "Exception in ASGI application"."""
    server = Silent(None)
    try:
        registry = http_stop_registry(tmp_path, server.url)
        served = serve("--grace", "1", "--registry", str(registry))
        answers: list[httpx.Response] = []

        def post() -> None:
            with contextlib.suppress(httpx.HTTPError):
                answers.append(httpx.post(f"{served.url}/run_tool", json={"tool_id": "slow"}))

        caller = threading.Thread(target=post)
        caller.start()
        server.wait_for_requests(1)
        assert served.stop(signal.SIGTERM, timeout=60) == 0, served.log.read_text()
        caller.join(timeout=30)
    finally:
        server.close()
    assert [a.status_code for a in answers] == [503]
    body = answers[0].json()
    assert (body["error_code"], body["exit_code"], body["transport"]) == ("terminated", 143, "http")
    log = served.log.read_text()
    assert "Exception in ASGI application" not in log and "Traceback" not in log


def test_serve_stopped_by_sighup_exits_129_and_leaves_nothing(
    serve: StartServe, tmp_path: Path
) -> None:
    registry, marks = spawning_registry(tmp_path)
    served = serve("--grace", "1", "--registry", str(registry))
    threading.Thread(target=post_spawner, args=(served.url, []), daemon=True).start()
    assert started(marks)
    assert served.stop(signal.SIGHUP, timeout=60) == 129, served.log.read_text()
    assert "toolctl: error: hung up" in served.log.read_text()
    assert gone(marks) == []


def started(marks: tuple[str, str, str]) -> bool:
    """Whether the tool's three sleeps (its last one and both grandchildren) run, once they
    do or a minute has passed (a server starts slowly on a loaded machine)."""

    def sleeping() -> bool:
        lines = [found.split(": ", 1)[1] for found in survivors(marks)]
        return all(any(line.startswith(f"sleep {mark}") for line in lines) for mark in marks)

    return wait_for(sleeping, seconds=60)
