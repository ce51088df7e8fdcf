"""Helpers for the server tests: the test registry, process checks, the npm clients.

The tools: ``echo`` (answers its text), ``fail`` (exits 1 with a reason on stderr),
``slow`` (sleeps past its 1 s timeout), ``hang`` (writes its pid to a file, then sleeps:
for cancellation), ``data`` (answers a JSON object), ``annotated`` (readOnlyHint), and
``missing-exe`` (an executable that does not exist). A group and two actions make the
selections testable.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

PY = sys.executable

REGISTRY = f"""
[[tool]]
name = "echo"
description = "Answer the text"
category = "text"
[tool.local]
command = ["{PY}", "-c", "import json, sys; print(json.load(sys.stdin)['text'])"]
[[tool.arguments]]
name = "text"

[[tool]]
name = "fail"
description = "Always fails"
[tool.local]
command = ["{PY}", "-c", "import sys; sys.exit('broken on purpose')"]
input = "none"

[[tool]]
name = "slow"
description = "Sleeps past its timeout"
timeout = 1
[tool.local]
command = ["{PY}", "-c", "import time; time.sleep(60)"]
input = "none"

[[tool]]
name = "hang"
description = "Writes its pid to a file, then sleeps"
timeout = 120
[tool.local]
command = ["{PY}", "-c", "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)", "{{pidfile}}"]
input = "none"
[[tool.arguments]]
name = "pidfile"

[[tool]]
name = "data"
description = "Answers JSON"
[tool.local]
command = ["{PY}", "-c", "print('{{\\"words\\": 2}}')"]
input = "none"

[[tool]]
name = "annotated"
description = "Only reads"
[tool.annotations]
readOnlyHint = true
openWorldHint = false
[tool.local]
command = ["{PY}", "-c", "print('read')"]
input = "none"

[[tool]]
name = "missing-exe"
description = "Its executable does not exist"
[tool.local]
command = ["/nonexistent/toolctl-test-binary"]
input = "none"

[[group]]
name = "texty"
description = "Text tools"
tools = ["echo", "data"]
usage_order = ["data", "echo"]

[[action]]
name = "start"
tools = [{{ tool = "echo", score = 0.9 }}]
next = [{{ action = "later", score = 0.8 }}]

[[action]]
name = "later"
tools = [{{ tool = "annotated", score = 0.7 }}, {{ tool = "fail", score = 0.2 }}]
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(condition: Callable[[], bool], seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def read_pid(pidfile: Path) -> int:
    """The pid a tool wrote, once the whole number is there (the file appears empty first)."""
    assert wait_for(lambda: pidfile.read_text().strip().isdigit() if pidfile.exists() else False)
    return int(pidfile.read_text())


class Served:
    """A running `toolctl serve`: its URL, its process and its stderr log."""

    def __init__(self, child: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.child, self.url, self.log = child, url, log

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 20) -> int:
        if self.child.poll() is None:
            self.child.send_signal(signum)
        return self.child.wait(timeout=timeout)


StartServe = Callable[..., Served]


def node_tool(name: str) -> Path | None:
    """A binary from tests/serve/node (installed by `make serve-clients`), or None."""
    path = Path(__file__).parent / "node" / "node_modules" / ".bin" / name
    return path if path.exists() else None


def require_node(name: str) -> Path:
    """Skip (or, with TOOLCTL_REQUIRE_ENGINES=1, fail) when the npm clients are absent."""
    found = node_tool(name)
    if found is None or node_tool("node") is None:
        reason = f"{name} is not installed: run `make serve-clients` (needs npm)"
        if os.environ.get("TOOLCTL_REQUIRE_ENGINES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


HANDSHAKE: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]  # fmt: skip
"""An MCP client's first two messages (request id 1)."""


def piped_mcp(
    argv: Sequence[str], *requests: dict[str, Any], cwd: str | Path | None = None
) -> dict[int, dict[str, Any]]:
    """`printf HANDSHAKE REQUESTS | ARGV`, stdin closed at once: the answers, by id (the
    command must exit 0)."""
    done = subprocess.run(
        list(argv),
        input="".join(json.dumps(r) + "\n" for r in (*HANDSHAKE, *requests)),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return {a["id"]: a for a in map(json.loads, done.stdout.splitlines()) if "id" in a}
