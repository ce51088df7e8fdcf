"""Issue 23's nine defects, each against real servers and clients: the probe server (the
official SDK) with PROBE_DEFECT_TOOLS, `toolctl serve` and `mcp serve` as real processes,
and the official SDK 2.x client where its probe is the point."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from tests.conftest import Toolctl
from tests.mcp.conftest import PROBE, SDK2_PYTHON, free_port, require, serve_http


def probe_registry(root: Path, env: dict[str, str] | None = None, url: str | None = None) -> Path:
    section: dict[str, object]
    if url is not None:
        section = {"url": url}
    else:
        section = {"command": [sys.executable, str(PROBE)], "env": {"PROBE_DEFECT_TOOLS": "1"}}
        section["env"] = {**section["env"], **(env or {})}  # type: ignore[dict-item]
    (root / "reg").mkdir(parents=True, exist_ok=True)
    (root / "reg/services.toml").write_text(
        tomli_w.dumps({"service": [{"name": "probe", "mcp": section}]})
    )
    return root / "reg"


@pytest.fixture
def imported(toolctl: Toolctl, tmp_path: Path) -> Path:
    reg = probe_registry(tmp_path)
    done = toolctl("import", "mcp", "probe", "-r", str(reg), "--json")
    assert done.returncode == 0, done.stderr  # needs_task is skipped (defect 8)
    return reg


def test_null_in_a_schema_imports_and_runs(toolctl: Toolctl, imported: Path) -> None:
    """Defect 1: ``"default": null`` (every optional argument of a Python server)."""
    text = (imported / "tools/probe.noted.toml").read_text()
    assert '\\"default\\":null' in text  # kept as JSON text: TOML has no null
    assert toolctl("check", "-r", str(imported)).returncode == 0
    ran = toolctl("run", "probe.noted", "-r", str(imported), "--arg", "text=hi", "--arg", "note=n")
    assert (ran.returncode, ran.stdout.strip()) == (0, "hi (n)"), ran.stderr
    live = toolctl("check", "--live", "-r", str(imported))
    assert "probe.noted" not in live.stdout + live.stderr  # no drift reported for it


def test_run_rejects_sampling_as_the_protocol_says(toolctl: Toolctl, imported: Path) -> None:
    """toolctl declares sampling: a run with nobody to ask rejects it (-1, as mcp serve
    does), where it answered -32601 "method not found" (the SDK shows the message)."""
    ran = toolctl("run", "probe.ask_sampling", "-r", str(imported), "--arg", "prompt=hi")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == (
        "sampling refused: toolctl declined sampling: no model answers it here"
    )


def test_a_tool_needing_task_support_is_skipped_and_never_missed(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """Defect 8: it would import and never run. It is skipped with a warning, not refused
    (exit 3 is a registry problem, and there is none), and `check --live` does not ask for
    an import that would skip it again, even with --strict."""
    reg = probe_registry(tmp_path)
    done = toolctl("import", "mcp", "probe", "-r", str(reg), "--json")
    assert done.returncode == 0, done.stderr
    assert (
        "toolctl: warning: skipped 1 tool(s) of 'probe' that run only as tasks "
        "(execution.taskSupport = required), which toolctl does not call: 'needs_task'"
    ) in done.stderr
    assert json.loads(done.stdout)["skipped"] == ["'needs_task'"]
    assert not (reg / "tools/probe.needs_task.toml").exists()
    live = toolctl("check", "--live", "--strict", "-r", str(reg))
    assert "needs_task" not in live.stdout + live.stderr
    assert live.returncode == 0, live.stdout + live.stderr


def test_check_live_strict_makes_a_tool_not_imported_an_error(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    reg = probe_registry(tmp_path)
    assert toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "echo").returncode == 0
    plain = toolctl("check", "--live", "-r", str(reg))
    assert plain.returncode == 0, plain.stdout
    assert "warning: MCP service 'probe' offers" in plain.stdout
    strict = toolctl("check", "--live", "--strict", "-r", str(reg))
    assert strict.returncode == 3, strict.stdout
    assert "error: MCP service 'probe' offers" in strict.stdout


def test_stdio_servers_get_a_safe_environment_and_their_declared_env(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """Defect 7: as the official SDK client, only HOME, PATH and the like are inherited."""
    reg = probe_registry(tmp_path, env={"DECLARED": "yes"})
    assert toolctl("import", "mcp", "probe", "-r", str(reg)).returncode == 0
    env = {**os.environ, "CANARY": "secret-value"}
    for name, expected in (("CANARY", "(unset)"), ("DECLARED", "yes"), ("PATH", env["PATH"])):
        ran = toolctl("run", "probe.get_env", "-r", str(reg), "--arg", f"name={name}", env=env)
        assert (ran.returncode, ran.stdout.strip()) == (0, expected), ran.stderr


def test_reserved_tools_keep_title_and_annotations(toolctl: Toolctl, imported: Path) -> None:
    """Defect 3: what `mcp serve` lists is `export --format mcp`."""
    listed = json.loads(toolctl("export", "-r", str(imported), "--format", "mcp").stdout)
    tool = next(t for t in listed["tools"] if t["name"] == "probe.write_note")
    assert tool["title"] == "Write a note"
    assert tool["annotations"] == {"destructiveHint": True, "readOnlyHint": False}


def test_list_shows_the_first_line_of_a_description(toolctl: Toolctl, imported: Path) -> None:
    """Defect 9b."""
    listed = toolctl("list", "-r", str(imported))
    line = next(row for row in listed.stdout.splitlines() if "probe.get_env" in row)
    assert line.rstrip().endswith("Read one variable of the server's environment.")
    assert "(unset)" not in listed.stdout


@pytest.fixture
def probe_url() -> Iterator[str]:
    port = free_port()
    env = {"PROBE_TRANSPORT": "http", "PROBE_PORT": str(port), "PROBE_DEFECT_TOOLS": "1"}
    yield from serve_http([sys.executable, str(PROBE)], env, port)


def test_http_client_answers_requests_on_the_standalone_stream(
    toolctl: Toolctl, tmp_path: Path, probe_url: str
) -> None:
    """Defect 2: a sampling request tied to no call comes on the GET stream; it is refused
    there at once instead of hanging the call to its timeout."""
    reg = probe_registry(tmp_path, url=probe_url)
    assert toolctl("import", "mcp", "probe", "-r", str(reg)).returncode == 0
    ran = toolctl(
        "run", "probe.ask_sampling", "-r", str(reg), "--arg", "prompt=hi",
        "--arg", "related=false", "--timeout", "20",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("sampling refused")


def test_http_timeout_does_not_say_the_server_stopped(
    toolctl: Toolctl, tmp_path: Path, probe_url: str
) -> None:
    """Defect 9a: over HTTP nothing of the server is stopped."""
    reg = probe_registry(tmp_path, url=probe_url)
    assert toolctl("import", "mcp", "probe", "-r", str(reg)).returncode == 0
    ran = toolctl("run", "probe.hang", "-r", str(reg), "--timeout", "1")
    assert ran.returncode == 124
    assert "the call was cancelled and the session closed" in ran.stderr
    assert "server stopped" not in ran.stderr


def test_serve_on_a_taken_port_is_exit_5_in_one_line(toolctl: Toolctl, tmp_path: Path) -> None:
    """Defect 5."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = toolctl("serve", "-r", str(tmp_path), "--port", str(port))
    assert done.returncode == 5
    assert done.stderr.strip().splitlines() == [
        f"toolctl: error: port {port} on 127.0.0.1 is taken; pick another --port (or stop "
        "what holds it)"
    ]


SDK2_CLIENT = textwrap.dedent(
    """
    import asyncio, sys
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    async def main():
        target = sys.argv[1]
        if not target.startswith("http"):
            target = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
        async with Client(target) as client:
            tools = await client.list_tools()
            caps = client.session.initialize_result.capabilities
            print(len(tools.tools), caps.tools.list_changed)

    asyncio.run(main())
    """
)


def test_sdk2_clients_probe_is_refused_quietly_and_list_changed_is_advertised(
    tmp_path: Path, imported: Path
) -> None:
    """Defects 6 and 4: the 2.x client's ``server/discover`` gets -32601 (it falls back to
    ``initialize``) with nothing on stderr, and both doors advertise tools.listChanged."""
    require(SDK2_PYTHON, "the MCP SDK 2.x venv")
    script = tmp_path / "client.py"
    script.write_text(SDK2_CLIENT)
    toolctl_argv = [sys.executable, "-m", "toolctl", "mcp", "serve", "-r", str(imported)]
    stdio = subprocess.run(
        [str(SDK2_PYTHON), str(script), "stdio", *toolctl_argv],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert stdio.returncode == 0, stdio.stderr
    assert stdio.stdout.split()[1] == "True"
    assert "discover" not in stdio.stderr and "Traceback" not in stdio.stderr
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as output:
        served = subprocess.Popen(
            [sys.executable, "-m", "toolctl", "serve", "-r", str(imported), "--port", str(port)],
            stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        _wait_port(port)
        http = subprocess.run(
            [str(SDK2_PYTHON), str(script), f"http://127.0.0.1:{port}/mcp"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        served.terminate()
        served.wait(timeout=30)
    assert http.returncode == 0, http.stderr
    assert http.stdout.split()[1] == "True"
    assert "discover" not in log.read_text()


def _wait_port(port: int) -> None:
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def _mute_service(imported: Path, marker: str, connect_timeout: float) -> None:
    """Service 'mute', whose server never answers `initialize` (``marker`` on its command
    line, for pgrep), and its tool mute.echo, a copy of probe.echo."""
    (imported / "mute.toml").write_text(
        tomli_w.dumps({"service": [{"name": "mute", "mcp": {
            "command": [sys.executable, "-c", "import time; time.sleep(600)", marker],
            "connect_timeout": connect_timeout,
        }}]})
    )  # fmt: skip
    echo = (imported / "tools/probe.echo.toml").read_text()
    (imported / "tools/mute.echo.toml").write_text(
        echo.replace('name = "probe.echo"', 'name = "mute.echo"').replace(
            'service = "probe"', 'service = "mute"'
        )
    )


class _PipedServe:
    """`toolctl mcp serve` over pipes, initialized: JSON-RPC lines in, answers out (its
    stderr kept when ``stderr``); killed on leaving the block, whatever happened."""

    def __init__(self, registry: Path, *, stderr: bool = False) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolctl", "mcp", "serve", "-r", str(registry)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if stderr else subprocess.DEVNULL,
            text=True,
        )
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}})  # fmt: skip
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert self.answer()["id"] == 1

    def send(self, message: dict[str, object]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def call(self, request_id: int, name: str, **arguments: object) -> None:
        params = {"name": name, "arguments": arguments}
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})

    def answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        answered: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answered

    def close(self) -> str:
        """Close stdin, wait for the exit; its stderr."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        err = self.process.stderr.read() if self.process.stderr else ""
        self.process.wait(timeout=30)
        return err

    def __enter__(self) -> _PipedServe:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.process.kill()
        self.process.wait()


def test_a_server_stuck_in_its_handshake_holds_up_no_other_service(
    toolctl: Toolctl, imported: Path
) -> None:
    """`mcp serve` with a service whose server never answers `initialize`: a call to
    another service is answered at once (it waited out the stuck one's connect_timeout,
    the runner locked for every service while one connected); and stdin closing ends
    the stuck call and its server at once (the handshake could not be cancelled: the
    gateway took the whole timeout to exit, and a client that killed it left the server
    running)."""
    import time

    marker = f"h82mute{os.getpid()}"
    _mute_service(imported, marker, connect_timeout=40)
    assert toolctl("show", "mute.echo", "-r", str(imported)).returncode == 0
    with _PipedServe(imported) as server:
        server.call(2, "mute.echo", text="stuck")
        time.sleep(1)  # the stuck server is starting
        started = time.monotonic()
        server.call(3, "probe.echo", text="other")
        answered = server.answer()
        assert answered["id"] == 3, answered
        assert answered["result"]["content"][0]["text"] == "other"
        assert time.monotonic() - started < 20  # not the stuck one's 40 s
        closed = time.monotonic()
        server.close()
        assert time.monotonic() - closed < 15  # its grace, not the handshake's 40 s
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout == "", "the stuck server outlived the gateway"


def test_a_service_that_cannot_connect_is_not_waited_for_on_every_list(
    imported: Path,
) -> None:
    """resources/list and prompts/list waited out a stuck server's connect_timeout on every
    request, one after another, and logged it each time: it is left out for a while."""
    import time

    _mute_service(imported, f"h82lists{os.getpid()}", connect_timeout=3)
    with _PipedServe(imported, stderr=True) as server:
        took = []
        for number, method in enumerate(("resources/list", "resources/list", "prompts/list")):
            started = time.monotonic()
            server.send({"jsonrpc": "2.0", "id": 10 + number, "method": method})
            assert "result" in server.answer()
            took.append(time.monotonic() - started)
        assert took[0] >= 2.5 and max(took[1:]) < 2, took  # the first waits: the others not
        err = server.close()
    assert err.count("mute.echo: MCP server 'mute' did not finish the handshake") == 1, err


def test_a_server_busy_with_a_cancelled_call_is_started_afresh(imported: Path) -> None:
    """`notifications/cancelled` of a call a server cannot stop (a sync tool): the next
    call waited out its whole timeout behind it. A ping tells: the server that does not
    answer is stopped, and the next call gets a new one."""
    import time

    with _PipedServe(imported) as server:
        server.call(2, "probe.block", seconds=40)
        time.sleep(3)  # it blocks its server now
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 2}})  # fmt: skip
        time.sleep(0.5)
        started = time.monotonic()
        server.call(3, "probe.echo", text="next")
        answered = server.answer()
        assert answered["id"] == 3, answered
        assert answered["result"]["content"][0]["text"] == "next", answered
        assert time.monotonic() - started < 20  # not the blocked call's 40 s
