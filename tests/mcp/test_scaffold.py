"""`toolctl new tool --runtime mcp` runs as written against the reference server."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Toolctl


def test_an_mcp_scaffold_calls_the_servers_echo(
    tmp_path: Path, toolctl: Toolctl, everything_argv: list[str]
) -> None:
    assert toolctl("new", "tool", "hello", "--runtime", "mcp").returncode == 0
    descriptor = tmp_path / "hello.toml"
    text = descriptor.read_text()
    npx = '["npx", "-y", "@modelcontextprotocol/server-everything"]'
    assert npx in text
    # the installed copy stands in for npx (the tests never fetch a package)
    descriptor.write_text(text.replace(npx, json.dumps(everything_argv)))
    assert toolctl("register", "hello.toml").returncode == 0
    done = toolctl("run", "hello", "--arg", "message=hi")
    assert (done.returncode, done.stdout) == (0, "Echo: hi\n"), done.stderr
