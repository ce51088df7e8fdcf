"""MCP servers for the tests: our probe under the official SDK 1.x and 2.x, the reference
time server (PyPI) and the TypeScript "everything" server (npm), all installed by
`make mcp-servers`. Absent ones skip, or fail under TOOLCTL_REQUIRE_ENGINES=1 (CI)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomli_w

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "tests/mcp/servers/probe_server.py"
BARE = ROOT / "tests/mcp/servers/bare_server.py"
SDK2_PYTHON = ROOT / ".venv-mcp2/bin/python"
TIME_SERVER = ROOT / ".venv-mcp2/bin/mcp-server-time"
EVERYTHING = (
    ROOT / "tests/mcp/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)


def require(path: Path, what: str) -> None:
    """Skip when ``path`` is missing, or fail when CI requires every server."""
    if path.exists():
        return
    message = f"{what} not installed ({path.relative_to(ROOT)}); run `make mcp-servers`"
    if os.environ.get("TOOLCTL_REQUIRE_ENGINES") == "1":
        pytest.fail(message)
    pytest.skip(message)


def node() -> str:
    found = subprocess.run(["sh", "-c", "command -v node"], capture_output=True, text=True)
    if found.returncode != 0:
        if os.environ.get("TOOLCTL_REQUIRE_ENGINES") == "1":
            pytest.fail("node not found")
        pytest.skip("node not found")
    return found.stdout.strip()


@pytest.fixture(params=["sdk1", "sdk2"])
def probe_argv(request: pytest.FixtureRequest) -> list[str]:
    """The probe server's command under SDK 1.x (the dev venv) and under SDK 2.x."""
    if request.param == "sdk2":
        require(SDK2_PYTHON, "the MCP SDK 2.x venv")
        return [str(SDK2_PYTHON), str(PROBE)]
    return [sys.executable, str(PROBE)]


@pytest.fixture
def everything_argv() -> list[str]:
    require(EVERYTHING, "@modelcontextprotocol/server-everything")
    return [node(), str(EVERYTHING), "stdio"]


@pytest.fixture
def time_argv() -> list[str]:
    require(TIME_SERVER, "mcp-server-time")
    return [str(TIME_SERVER)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve_http(argv: list[str], env: dict[str, str], port: int) -> Iterator[str]:
    """Run an HTTP MCP server on 127.0.0.1:port until the test ends; yields its URL."""
    server = subprocess.Popen(
        argv,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if server.poll() is not None:
                assert server.stderr is not None
                pytest.fail(f"HTTP MCP server exited: {server.stderr.read().decode()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(server.pid, 9)
        server.wait()


@pytest.fixture
def everything_url() -> Iterator[str]:
    require(EVERYTHING, "@modelcontextprotocol/server-everything")
    port = free_port()
    yield from serve_http([node(), str(EVERYTHING), "streamableHttp"], {"PORT": str(port)}, port)


@pytest.fixture
def probe_url(probe_argv: list[str]) -> Iterator[str]:
    port = free_port()
    env = {"PROBE_TRANSPORT": "http", "PROBE_PORT": str(port)}
    yield from serve_http(probe_argv, env, port)


@pytest.fixture
def probe_sse_url(probe_argv: list[str]) -> Iterator[str]:
    """The probe over the old HTTP+SSE transport (SDK 1.x and 2.x): its /sse endpoint."""
    port = free_port()
    env = {"PROBE_TRANSPORT": "sse", "PROBE_PORT": str(port)}
    for url in serve_http(probe_argv, env, port):
        yield url.removesuffix("/mcp") + "/sse"


@pytest.fixture
def everything_sse_url() -> Iterator[str]:
    """The TypeScript reference server over the old HTTP+SSE transport."""
    require(EVERYTHING, "@modelcontextprotocol/server-everything")
    port = free_port()
    for url in serve_http([node(), str(EVERYTHING), "sse"], {"PORT": str(port)}, port):
        yield url.removesuffix("/mcp") + "/sse"


def bare_registry(root: Path, name: str, **env: str) -> Path:
    """``root/reg``, whose service ``name`` is the bare server (``BARE_*`` settings in
    ``env``: see tests/mcp/servers/bare_server.py), its tools imported as ``name.*``."""
    service = {"name": name, "mcp": {"command": [sys.executable, str(BARE)], "env": env}}
    registry = root / "reg"
    registry.mkdir(parents=True, exist_ok=True)
    (registry / f"{name}.toml").write_text(tomli_w.dumps({"service": [service]}))
    imported = subprocess.run(
        [sys.executable, "-m", "toolctl", "import", "mcp", name, "-r", str(registry)],
        capture_output=True, text=True, timeout=60, cwd=root,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    return registry
