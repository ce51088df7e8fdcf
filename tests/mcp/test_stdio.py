"""The stdio transport when servers misbehave: timeouts end the whole process tree, a
server that dies or floods is one clear error, and secrets never reach error text."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from toolctl.errors import TimedOut, TransportUnavailable
from toolctl.mcp import ProtocolError, connect_stdio, map_result
from toolctl.mcp.stdio import STDERR_TAIL

SECRET = "s3cret-token-value"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is gone for our purposes
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def wait_gone(pids: list[int], seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


def test_timeout_sends_cancelled_and_ends_the_process_tree(
    probe_argv: list[str], tmp_path: Path
) -> None:
    pid_file = tmp_path / "pids"
    env = {**os.environ, "PROBE_PID_FILE": str(pid_file)}
    session = connect_stdio(probe_argv, env=env, timeout=30)
    pids = [int(pid) for pid in pid_file.read_text().split()]
    assert all(alive(pid) for pid in pids)
    sent: list[dict[str, object]] = []
    notify = session.transport.notify

    def record(message: dict[str, object]) -> None:
        sent.append(message)
        notify(message)

    session.transport.notify = record  # type: ignore[method-assign]
    with pytest.raises(TimedOut, match="ran past its 1 s timeout") as caught:
        session.call_tool("hang", {"seconds": 600}, 1)
    assert caught.value.exit_code == 124
    assert sent[0]["method"] == "notifications/cancelled"
    assert sent[0]["params"] == {"requestId": 2, "reason": "timed out after 1 s"}
    assert wait_gone(pids) == []
    session.close()  # closing again is harmless


def test_close_ends_the_process_tree(probe_argv: list[str], tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    with connect_stdio(probe_argv, env={**os.environ, "PROBE_PID_FILE": str(pid_file)}) as session:
        session.list_tools()
        pids = [int(pid) for pid in pid_file.read_text().split()]
    assert wait_gone(pids) == []


def test_exit_mid_call_is_a_clear_error_with_the_stderr_tail(probe_argv: list[str]) -> None:
    with (
        connect_stdio(probe_argv, timeout=30) as session,
        pytest.raises(TransportUnavailable) as caught,
    ):
        session.call_tool("exit_now", {"code": 3}, 30)
    assert caught.value.exit_code == 5
    assert "exited with code 3" in str(caught.value)
    assert "probe: exiting mid-call" in str(caught.value)


def test_flooding_stdout_is_a_bounded_error(probe_argv: list[str]) -> None:
    """64 MiB without a newline: an error after 16 MiB. SDK 2.x points fd 1 at stderr while
    it serves (its protocol stream is a private copy), so there the flood lands in the
    stderr tail, which stays bounded too."""
    with connect_stdio(probe_argv, timeout=30) as session:
        if "mcp2" in probe_argv[0]:
            assert map_result(session.call_tool("flood", {"megabytes": 64}, 60)).output == "flooded"
            assert len(session.transport.stderr_tail()) <= STDERR_TAIL  # type: ignore[attr-defined]
            return
        with pytest.raises(ProtocolError, match="over 16 MiB"):
            session.call_tool("flood", {"megabytes": 64}, 60)


def test_a_server_that_cannot_start_shows_its_stderr_with_secrets_masked(
    probe_argv: list[str],
) -> None:
    env = {**os.environ, "PROBE_EXIT": "2", "PROBE_STDERR": f"using token {SECRET}"}
    with pytest.raises(TransportUnavailable) as caught:
        connect_stdio(probe_argv, env=env, secrets=[SECRET], timeout=30)
    message = str(caught.value)
    assert "exited with code 2" in message and "probe: refusing to start" in message
    assert "using token ***" in message
    assert SECRET not in message + "\n".join(caught.value.details)


def test_a_padded_stderr_tail_is_quoted_without_its_padding() -> None:
    """The Python SDK's servers log through rich, padded to the terminal's width: the
    tail quoted in the error was hundreds of spaces between a few words."""
    script = (
        "import sys; sys.stderr.write('INFO     Processing request of type' + ' ' * 40 + "
        "'server.py:733\\n\\n' + ' ' * 60 + 'CallToolRequest\\n'); sys.exit(3)"
    )
    with pytest.raises(TransportUnavailable) as caught:
        connect_stdio([sys.executable, "-c", script], timeout=30)
    message = str(caught.value)
    assert message.endswith(
        "its stderr ends: INFO Processing request of type server.py:733 | CallToolRequest"
    ), message


def test_a_missing_executable_is_transport_unavailable(tmp_path: Path) -> None:
    with pytest.raises(TransportUnavailable, match="not found") as caught:
        connect_stdio([str(tmp_path / "no-such-server"), "--token", SECRET])
    assert SECRET not in str(caught.value)


def test_a_server_that_never_answers_the_handshake_times_out(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import time; time.sleep(600)"]
    started = time.monotonic()
    with pytest.raises(TimedOut, match=r"did not finish the handshake in 1\.2 s;") as caught:
        connect_stdio(argv, timeout=1.23456)  # said as people read it (not "1.23456 s")
    assert time.monotonic() - started < 30
    assert "give it longer with connect_timeout = SECONDS in the service's [service.mcp]" in str(
        caught.value.hint
    )


def test_a_server_that_writes_garbage_is_a_protocol_error() -> None:
    argv = [sys.executable, "-c", "print('Server listening...'); import time; time.sleep(30)"]
    with pytest.raises(ProtocolError, match=r"not JSON: 'Server listening\.\.\.'"):
        connect_stdio(argv, timeout=30)


def test_ping_from_the_server_is_answered() -> None:
    script = (
        "import json, sys\n"
        "sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': 'p1', 'method': 'ping'}) + '\\n')\n"
        "sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': 'r1', 'method': 'roots/list'}) + '\\n')\n"
        "sys.stdout.flush()\n"
        "answers = [json.loads(sys.stdin.readline()) for _ in range(3)]\n"
        "by_id = {a.get('id'): a for a in answers}\n"
        "init = by_id[1]\n"
        "result = {'protocolVersion': '2025-11-25', 'capabilities': {}, 'serverInfo': {'name': 'raw',"
        " 'version': json.dumps([by_id['p1'], by_id['r1']])}}\n"
        "sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': 1, 'result': result}) + '\\n')\n"
        "sys.stdout.flush()\n"
        "sys.stdin.readline()\n"
    )
    with connect_stdio([sys.executable, "-c", script], timeout=30) as session:
        ping, roots = __import__("json").loads(session.server_info["version"])
    assert ping == {"jsonrpc": "2.0", "id": "p1", "result": {}}
    assert roots["error"]["code"] == -32601


def test_everything_server_over_stdio_ends_cleanly(everything_argv: list[str]) -> None:
    with connect_stdio(everything_argv, timeout=60) as session:
        assert map_result(session.call_tool("echo", {"message": "x"}, 30)).output == "Echo: x"
        pid = session.transport.pid  # type: ignore[attr-defined]
    assert wait_gone([pid]) == []


def test_a_python_server_missing_a_module_toolctl_has_names_toolctls_python(
    tmp_path: Path,
) -> None:
    """The README's `uv tool install .` puts toolctl (and the MCP SDK) in an environment of
    its own, so a server started as `python3 server.py` by another Python dies on its import:
    the error says which Python lacks what, and that toolctl's own Python has it."""
    import venv

    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    python = bare / "bin" / "python"
    server = tmp_path / "server.py"
    server.write_text("import mcp\n")
    with pytest.raises(TransportUnavailable) as caught:
        connect_stdio([str(python), str(server)], timeout=30, name="text")
    message = str(caught.value)
    assert message.startswith("MCP server 'text' exited with code 1"), message
    assert caught.value.hint == (
        f"'{python}' cannot import 'mcp': install it for that Python, or run the server "
        f"with the Python toolctl runs on, {sys.executable}"
    )


def test_a_module_toolctl_lacks_too_is_only_to_be_installed(tmp_path: Path) -> None:
    server = tmp_path / "server.py"
    server.write_text("import toolctl_no_such_module.sub\n")
    with pytest.raises(TransportUnavailable) as caught:
        connect_stdio([sys.executable, str(server)], timeout=30)
    assert caught.value.hint == (
        f"'{sys.executable}' cannot import 'toolctl_no_such_module': install it for that Python"
    )


def test_a_command_that_echoes_its_input_is_told_so() -> None:
    """`cat` sends toolctl's initialize back, then its refusal of that: it was told as the
    server refusing initialize ("toolctl does not support initialize")."""
    with pytest.raises(ProtocolError, match="echoes its input, and is not an MCP server") as caught:
        connect_stdio(["cat"], timeout=10)
    assert "does not support" not in str(caught.value)


def test_a_request_not_answered_says_its_time_as_people_read_it(probe_argv: list[str]) -> None:
    """A request's time left is what the caller had (2.98421 s, the rest of 3): said to a
    tenth of a second, and of the name the server goes by."""
    session = connect_stdio(probe_argv, timeout=30, name="svc")
    try:
        message = {"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                   "params": {"name": "hang", "arguments": {"seconds": 600}}}  # fmt: skip
        with pytest.raises(TimedOut) as caught:
            session.transport.request(message, 0.23456)
        assert str(caught.value) == "MCP server 'svc' did not answer within 0.2 s"
    finally:
        session.close()


def test_a_signal_while_the_server_starts_leaves_no_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C (or SIGTERM and SIGHUP, told as it is) after the server started and before
    its transport was made: nobody held the server to end it, and sweeps spared it (it was
    kept for later calls), so it outlived toolctl. It is ended there."""
    import signal
    import threading
    import types

    from toolctl.processes.reaper import is_kept

    started: list[int] = []

    class Interrupting(threading.Thread):
        def start(self) -> None:  # the signal lands as the transport starts its readers
            started.append(self._target.__self__.process.pid)  # type: ignore[attr-defined]
            raise KeyboardInterrupt

    fake = types.SimpleNamespace(Thread=Interrupting, Lock=threading.Lock)
    monkeypatch.setattr("toolctl.mcp.stdio.threading", fake)
    try:
        with pytest.raises(KeyboardInterrupt):
            connect_stdio([sys.executable, "-c", "import time; time.sleep(600)"])
        [pid] = started
        assert not alive(pid) and not is_kept(pid)
    finally:
        for pid in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


DEAF = """
import json, sys, time
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "deaf", "version": "1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    elif message.get("method") == "notifications/initialized":
        time.sleep(600)  # and never reads its stdin again
"""


def test_a_server_that_stops_reading_its_stdin_never_blocks_a_caller(tmp_path: Path) -> None:
    """A request larger than the pipe's 64 KiB to a server that no longer reads (hung, or
    busy with another call): its caller was blocked writing it, past the call's timeout
    (`run --timeout 3` ran until killed), and telling the server a call was cancelled
    blocked too: on a server's event loop, every client stalled. The call times out as
    any other, and a notification is queued, never waited for."""
    import threading

    server = tmp_path / "deaf.py"
    server.write_text(DEAF)
    big = {"text": "a" * 1_000_000}

    def in_thread(work: Any) -> threading.Thread:
        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        return thread

    ended: list[BaseException] = []

    def call(session: Any, timeout: float) -> None:
        try:
            session.call_tool("echo", big, timeout)
        except BaseException as exc:
            ended.append(exc)

    waiting = connect_stdio([sys.executable, str(server)], timeout=30, name="deaf")
    blocked = in_thread(lambda: call(waiting, 600))
    time.sleep(1)  # its request is being written, and the server reads no more
    message = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}
    told = in_thread(lambda: waiting.transport.notify(message))
    told.join(timeout=30)
    assert not told.is_alive(), "a notification waited for the server to read"
    waiting.close()
    blocked.join(timeout=30)
    assert not blocked.is_alive() and len(ended) == 1

    timed = connect_stdio([sys.executable, str(server)], timeout=30, name="deaf")
    caller = in_thread(lambda: call(timed, 2))
    caller.join(timeout=60)
    assert not caller.is_alive(), "the call never ended"
    assert type(ended[1]) is TimedOut and "ran past its 2 s timeout" in str(ended[1])
