"""A served call of a container tool that is cancelled leaves no container behind.

Killing the engine's client alone would leave the container running (the command inside
is PID 1 and ignores SIGTERM); the runner removes it by name, as on its own timeout.
Needs a real podman and the busybox test image (scripts/setup-podman.sh), else skips.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from tests.conftest import write_files
from tests.runners.container.conftest import IMAGE, leftovers, podman, use_podman
from tests.serve.mcp_clients import cancel_next_call, stdio_session, texts
from tests.serve.serve_support import StartServe, wait_for

__all__ = ["leftovers", "podman", "use_podman"]  # the container tests' fixtures, used here

PREFIX = "toolctl-ct-served-"
REGISTRY = f"""
[[tool]]
name = "ct-served"
timeout = 120
[tool.container]
image = "{IMAGE}"
command = ["sh", "-c", "sleep 120"]
input = "none"

[[tool]]
name = "ct-quick"
[tool.container]
image = "{IMAGE}"
command = ["echo", "quick"]
input = "none"
"""


def running(podman: str) -> bool:
    listed = subprocess.run(
        [podman, "ps", "--filter", f"name=^{PREFIX}", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
    )
    return bool(listed.stdout.split())


def test_cancelled_container_call_leaves_no_container(
    podman: str, tmp_path: Path, leftovers: Callable[[str], list[str]]
) -> None:
    registry = write_files(tmp_path / "registry", {"tools.toml": REGISTRY})

    async def main() -> None:
        async with stdio_session(registry) as session:
            await cancel_next_call(session, "ct-served", {}, lambda: running(podman))
            assert wait_for(lambda: leftovers(PREFIX) == [], seconds=30), leftovers(PREFIX)
            ok = await session.call_tool("ct-quick", {})
            assert not ok.isError and texts(ok) == ["quick"]

    started = time.monotonic()
    anyio.run(main)
    assert time.monotonic() - started < 100, "the cancelled call ran to its end"


def test_a_rest_or_mcp_client_that_disconnects_leaves_no_container(
    podman: str,
    serve: StartServe,
    tmp_path: Path,
    leftovers: Callable[[str], list[str]],
) -> None:
    """Issue #24: the container ran to its own timeout after its HTTP client had gone."""
    import json
    import socket

    from tests.serve.test_hostile_serve import mcp_session

    registry = write_files(tmp_path / "registry", {"tools.toml": REGISTRY})
    served = serve("--registry", str(registry))
    host, port = served.url.removeprefix("http://").split(":")
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ct-served"}}
    session = mcp_session(served.url)
    for path, body, headers in (
        ("/run_tool", {"tool_id": "ct-served"}, {}),
        ("/mcp", call, session),
    ):
        data = json.dumps(body).encode()
        lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        with socket.create_connection((host, int(port)), timeout=30) as connection:
            connection.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"{lines}Content-Length: {len(data)}\r\n\r\n".encode()
                + data
            )
            assert wait_for(lambda: running(podman), seconds=60)
        assert wait_for(lambda: leftovers(PREFIX) == [], seconds=30), (path, leftovers(PREFIX))
