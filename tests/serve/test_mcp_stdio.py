"""`toolctl mcp serve` driven by the official MCP SDK client over stdio."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import McpError
from pydantic import BaseModel

from tests.conftest import Toolctl, write_files
from tests.serve.mcp_clients import Changes, cancel_next_call, stdio_session, texts
from tests.serve.serve_support import alive, piped_mcp, read_pid, wait_for


def listed(result: BaseModel) -> Any:
    return json.loads(result.model_dump_json(by_alias=True, exclude_none=True))


def test_tools_list_is_export_mcp(registry: Path, toolctl: Toolctl) -> None:
    exported = json.loads(toolctl("export", "--format", "mcp", "--registry", str(registry)).stdout)

    async def main() -> None:
        async with stdio_session(registry) as session:
            assert listed(await session.list_tools()) == exported

    anyio.run(main)
    annotated = next(t for t in exported["tools"] if t["name"] == "annotated")
    assert annotated["annotations"] == {"readOnlyHint": True, "openWorldHint": False}


STATES = (
    "".join(
        f'[[tool]]\nname = "{name}"\ndescription = "{state}"\nstate = "{state}"\n'
        '[tool.local]\ncommand = ["true"]\n\n'
        for name, state in [
            ("live", "active"),
            ("trial", "staging"),
            ("off", "disabled"),
            ("old", "deprecated"),
        ]
    )
    + '[[group]]\nname = "all"\ntools = ["live", "trial", "off", "old", "parked"]\n'
    + '[[service]]\nname = "shut"\nstate = "disabled"\n[service.http]\nurl = "http://127.0.0.1:9"\n'
    + '[[tool]]\nname = "parked"\ndescription = "on a disabled service"\nservice = "shut"\n'
    + '[tool.http]\npath = "/x"\n'
)


@pytest.mark.parametrize("options", [[], ["--group", "all"]])
def test_tools_list_leaves_out_the_tools_run_refuses(
    tmp_path: Path, toolctl: Toolctl, options: list[str]
) -> None:
    """A tool whose state (or its service's) is not active is not listed, and a call of it
    is refused as `run` refuses it without --allow-staging; the listing is export's of the
    tools that run (export streams without --group and builds the document whole with
    one)."""
    registry = write_files(tmp_path / "registry", {"tools.toml": STATES})
    exported = toolctl("export", "--format", "mcp", "--registry", str(registry), *options)
    assert exported.returncode == 0, exported.stderr
    runs = [t for t in json.loads(exported.stdout)["tools"] if t["name"] == "live"]

    async def main() -> Any:
        async with stdio_session(registry, *options) as session:
            refusals = {}
            for name in ("trial", "off", "old", "parked"):
                refused = await session.call_tool(name, {})
                assert refused.isError, name
                refusals[name] = texts(refused)[0]
            assert not (await session.call_tool("live", {})).isError
            return listed(await session.list_tools()), refusals

    listing, refusals = anyio.run(main)
    assert listing == {"tools": runs}
    for name, state in (("trial", "staging"), ("off", "disabled"), ("old", "deprecated")):
        ran = toolctl("run", name, "--registry", str(registry))
        assert ran.returncode == 2 and f"tool '{name}' is {state}, not active" in ran.stderr
        assert refusals[name].startswith(f"tool '{name}' is {state}, not active"), refusals
    assert refusals["parked"].startswith("tool 'parked' runs on service 'shut', which is disabled")


def test_a_tool_named_that_does_not_run_is_a_warning(tmp_path: Path) -> None:
    registry = write_files(tmp_path / "registry", {"tools.toml": STATES})
    log = tmp_path / "stderr.log"

    async def main() -> Any:
        async with stdio_session(
            registry, "--tool", "live", "--tool", "old", stderr=log
        ) as session:
            return [t.name for t in (await session.list_tools()).tools]

    assert anyio.run(main) == ["live"]
    assert "tool 'old' is deprecated, not active" in log.read_text()


@pytest.mark.parametrize(
    ("options", "names"),
    [
        (["--group", "texty"], ["data", "echo"]),
        (["--tool", "fail", "--tool", "echo"], ["echo", "fail"]),
        (["--action", "start"], ["echo"]),
        (["--action", "start", "--hops", "1"], ["annotated", "echo"]),
        (["--action", "start", "--hops", "1", "--threshold", "0.1"], ["annotated", "echo", "fail"]),
    ],
)
def test_selection(registry: Path, toolctl: Toolctl, options: list[str], names: list[str]) -> None:
    async def main() -> list[str]:
        async with stdio_session(registry, *options) as session:
            return [t.name for t in (await session.list_tools()).tools]

    assert anyio.run(main) == names
    if options[0] == "--group":
        exported = toolctl("export", "--format", "mcp", "--registry", str(registry), *options)
        assert [t["name"] for t in json.loads(exported.stdout)["tools"]] == names


def test_calls_and_errors(registry: Path) -> None:
    async def main() -> None:
        async with stdio_session(registry) as session:
            ok = await session.call_tool("echo", {"text": "hello"})
            assert not ok.isError and texts(ok) == ["hello"]
            data = await session.call_tool("data", {})
            assert data.structuredContent == {"words": 2}
            failed = await session.call_tool("fail", {})
            assert failed.isError
            assert texts(failed)[0] == "the tool failed: exit status 1: broken on purpose"
            invalid = await session.call_tool("echo", {"txt": "x"})
            assert (
                invalid.isError
                and "unknown argument 'txt' (did you mean 'text'?)" in texts(invalid)[0]
            )
            unreachable = await session.call_tool("missing-exe", {})
            assert unreachable.isError and "not found" in texts(unreachable)[0]
            with pytest.raises(McpError) as unknown:
                await session.call_tool("ecko", {"text": "x"})
            assert unknown.value.error.code == -32602
            assert "did you mean: echo" in unknown.value.error.message

    anyio.run(main)


def test_timeout_is_enforced(registry: Path) -> None:
    async def main() -> None:
        async with stdio_session(registry) as session:
            result = await session.call_tool("slow", {})
            assert result.isError and "timeout" in texts(result)[0]

    anyio.run(main)


def test_cancellation_kills_the_call(registry: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "hang.pid"

    async def main() -> None:
        async with stdio_session(registry) as session:
            await cancel_next_call(session, "hang", {"pidfile": str(pidfile)}, pidfile.exists)
            pid = int(pidfile.read_text())
            assert wait_for(lambda: not alive(pid)), "the cancelled call's process survived"
            ok = await session.call_tool("echo", {"text": "still here"})
            assert texts(ok) == ["still here"]

    anyio.run(main)


def test_list_changed_after_register(
    registry: Path, toolctl_process: Toolctl, tmp_path: Path
) -> None:
    changes = Changes()
    descriptor = write_files(
        tmp_path / "new",
        {
            "new.toml": """
            [[tool]]
            name = "brand-new"
            description = "Registered while serving"
            [tool.local]
            command = ["true"]
            input = "none"
            """
        },
    )

    async def main() -> None:
        async with stdio_session(registry, changes=changes) as session:
            before = [t.name for t in (await session.list_tools()).tools]
            assert "brand-new" not in before
            done = await anyio.to_thread.run_sync(
                lambda: toolctl_process(
                    "register", str(descriptor / "new.toml"), "--registry", str(registry)
                )
            )
            assert done.returncode == 0, done.stderr
            with anyio.fail_after(30):
                await changes.seen.wait()
            after = [t.name for t in (await session.list_tools()).tools]
            assert "brand-new" in after

    anyio.run(main)


def test_stdout_carries_only_protocol(registry: Path) -> None:
    """Garbage, a bad message and a call whose tool prints to stderr: stdout stays JSON-RPC."""
    lines = [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        ),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        "this is not json",
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":"x"}}',
        '{"jsonrpc":"2.0","id":3,"method":"no/such/method"}',
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fail"}}',
        '{"jsonrpc":"2.0","id":5,"method":"ping"}',
    ]
    child = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "mcp", "serve", "--registry", str(registry)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("\n".join(lines) + "\n")
    child.stdin.flush()
    answers: list[dict[str, Any]] = []
    while {1, 2, 3, 4, 5} - {a.get("id") for a in answers}:
        line = child.stdout.readline()
        assert line, "the server closed stdout early"
        answers.append(json.loads(line))
    child.stdin.close()
    assert child.wait(timeout=30) == 0
    stderr = child.stderr.read() if child.stderr else ""
    assert child.stdout.read() == ""
    assert all(a["jsonrpc"] == "2.0" for a in answers)
    by_id = {a.get("id"): a for a in answers}
    assert by_id[1]["result"]["protocolVersion"] == "2025-11-25"  # lenient: newest revision
    assert by_id[2]["error"] == {  # the field named (the SDK said "Invalid request parameters")
        "code": -32602, "message": "Invalid params: params.arguments: Input should be a valid dictionary"
    }  # fmt: skip
    assert by_id[3]["error"] == {"code": -32601, "message": "Method not found"}  # SDK: -32602
    assert by_id[4]["result"]["isError"] is True
    assert by_id[5]["result"] == {}
    logged = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert any(e.get("tool") == "fail" and e["status"] == "failed" for e in logged)
    assert all("arguments" not in e for e in logged)


def test_requests_written_before_stdin_closes_are_all_answered(registry: Path) -> None:
    """`printf REQUESTS | toolctl mcp serve`: stdin closes at once, and still every request
    read is answered (the SDK alone cancels what runs when its input ends)."""
    call = {"name": "echo", "arguments": {"text": "hi"}}
    by_id = piped_mcp(
        [sys.executable, "-m", "toolctl", "mcp", "serve", "--registry", str(registry)],
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
    )
    assert sorted(by_id) == [1, 2, 3]
    assert "echo" in [t["name"] for t in by_id[2]["result"]["tools"]]
    assert by_id[3]["result"]["isError"] is False


def test_unknown_selection_exits_4(registry: Path, toolctl: Toolctl) -> None:
    done = toolctl("mcp", "serve", "--registry", str(registry), "--group", "nope", input="")
    assert done.returncode == 4 and "group 'nope' not found" in done.stderr
    done = toolctl("mcp", "serve", "--registry", str(registry), "--hops", "2", input="")
    assert done.returncode == 2 and "--action" in done.stderr


def test_sigterm_kills_the_calls_processes(registry: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "hang.pid"
    child = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "mcp", "serve", "--registry", str(registry)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ),
    )
    assert child.stdin is not None and child.stdout is not None
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "hang", "arguments": {"pidfile": str(pidfile)}},
        },
    ):
        child.stdin.write(json.dumps(message) + "\n")
        child.stdin.flush()
    pid = read_pid(pidfile)
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=30) == 143
    assert wait_for(lambda: not alive(pid)), "the call's process outlived the server"


def test_a_result_cut_at_max_output_says_so(tmp_path: Path) -> None:
    """The model is told the output it got is not the whole of it, as `run` tells it."""
    tool = """
    [[tool]]
    name = "long"
    max_output = 10
    [tool.local]
    command = ["python3", "-c", "print('x' * 100)"]
    input = "none"
    """
    registry = write_files(tmp_path / "reg", {"t.toml": tool})
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "long"}}
    argv = [sys.executable, "-m", "toolctl", "mcp", "serve", "-r", str(registry)]
    content = piped_mcp(argv, call)[2]["result"]["content"]
    assert [block["text"] for block in content] == [
        "x" * 10,
        "toolctl: output truncated: 91 bytes past the tool's max_output were dropped",
    ]


def test_a_cancelled_request_gets_no_answer(tmp_path: Path) -> None:
    """MCP: the receiver of notifications/cancelled SHOULD NOT answer the request; the SDK
    answered it an error of code 0 (which JSON-RPC does not define)."""
    tool = '[[tool]]\nname = "nap"\n[tool.local]\ncommand = ["sleep", "30"]\ninput = "none"\n'
    registry = write_files(tmp_path / "reg", {"t.toml": tool})
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nap"}}
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the user went away"},
    }
    listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    argv = [sys.executable, "-m", "toolctl", "mcp", "serve", "-r", str(registry)]
    answers = piped_mcp(argv, call, cancel, listing)
    assert sorted(answers) == [1, 3], answers


FORKER = """
[[tool]]
name = "forker"
description = "Leaves a process in a session of its own, then waits"
timeout = 60
[tool.local]
command = ["sh", "-c", "setsid sleep 300 & echo $! > {pidfile}; sleep 60"]
input = "none"
"""


def test_a_client_that_leaves_mid_call_leaves_nothing_running(tmp_path: Path) -> None:
    """The official SDK's stdio client leaving during a call: it closes stdin, waits 2 s,
    sends SIGTERM, and SIGKILL 2 s later. toolctl took ~4 s to end the call (its pipes,
    held open by what the tool left in a session of its own, were waited on first), so
    the SIGKILL came first and that process ran on, re-parented to init, for good."""
    pidfile = tmp_path / "left.pid"
    write_files(tmp_path / "reg", {"t.toml": FORKER.format(pidfile=pidfile)})

    async def main() -> None:
        async with stdio_session(tmp_path / "reg") as session, anyio.create_task_group() as group:
            group.start_soon(session.call_tool, "forker", {})
            while not (pidfile.exists() and pidfile.read_text().strip()):
                await anyio.sleep(0.05)
            group.cancel_scope.cancel()

    anyio.run(main)
    pid = read_pid(pidfile)
    try:
        assert wait_for(lambda: not alive(pid), 5), "what the tool left outlived the server"
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


BUSY_UPSTREAM = """
import os, pathlib, sys, time
from mcp.server.fastmcp import FastMCP

pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))
server = FastMCP("busy")


@server.tool()
def busy(seconds: float) -> str:
    \"\"\"Blocks the server for that long (a synchronous tool).\"\"\"
    time.sleep(seconds)
    return "done"


server.run()
"""


def test_a_client_that_gives_up_leaves_no_busy_upstream_server(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """The SDK client gives up on a call and shuts down: it closes `mcp serve`'s stdin,
    waits 2 s, SIGTERMs it, and SIGKILLs it 2 s later. toolctl gave the upstream server,
    busy in that call, 2 s to exit on its own stdin closing, then 1 s after SIGTERM: it was
    SIGKILLed while it waited, and the upstream ran on (every time, with the SDK 1.x)."""
    pidfile = tmp_path / "upstream.pid"
    (tmp_path / "busy.py").write_text(BUSY_UPSTREAM)
    (tmp_path / "reg").mkdir()
    command = ["mcp", "add", "up", "-r", "reg", "--", sys.executable, str(tmp_path / "busy.py")]
    assert toolctl(*command, str(pidfile)).returncode == 0
    registry = tmp_path / "reg"

    upstream_pids: list[int] = []

    async def driven() -> None:
        async with stdio_session(registry, "--tool", "up.busy", stderr=tmp_path / "err") as session:
            with anyio.move_on_after(3):  # the user gives up; the client shuts down
                await session.call_tool("up.busy", {"seconds": 60})
            upstream_pids.append(read_pid(pidfile))

    anyio.run(driven)
    [pid] = upstream_pids
    try:
        assert wait_for(lambda: not alive(pid), 10), "the busy upstream outlived the client"
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
