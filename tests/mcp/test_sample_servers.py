"""The MCP servers the README and the tutorial show run on the SDK a new user gets: the
tutorial's `pip install mcp` gives 2.x today, while toolctl's own environment has 1.x, and
the servers failed on 2.x ("No module named 'mcp.server.fastmcp'", "'Server' object has no
attribute 'list_tools'")."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import Toolctl
from tests.mcp.conftest import ROOT, SDK2_PYTHON, require
from toolctl.errors import TransportUnavailable
from toolctl.mcp import connect_stdio

TUTORIAL = ROOT / "docs/tutorials/mcp-server.md"


@pytest.fixture(params=["sdk1", "sdk2"])
def python(request: pytest.FixtureRequest) -> Path:
    """The Python the servers run on: toolctl's own (SDK 1.x), or the SDK 2.x venv."""
    if request.param == "sdk2":
        require(SDK2_PYTHON, "the MCP SDK 2.x venv")
        return SDK2_PYTHON
    return Path(sys.executable)


def test_the_readme_sample_server_answers_alike_on_both_sdk_majors(
    toolctl: Toolctl, python: Path
) -> None:
    """`toolctl run text-mcp...` of the README's tour, with the `python3` on PATH being
    either SDK's: the pins the sample registry holds match, and the results are the same."""
    env = {"PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}"}
    registry = str(ROOT / "registry")
    reverse = toolctl("run", "text-mcp.reverse", "--arg", "text=stressed", "-r", registry,
                      env=env, cwd=ROOT)  # fmt: skip
    assert (reverse.returncode, reverse.stdout) == (0, "desserts\n"), reverse.stderr
    counted = toolctl("run", "text-mcp.letter_count", "--arg", "text=R2 D2", "--json",
                      "-r", registry, env=env, cwd=ROOT)  # fmt: skip
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout)["mcp"] == {
        "content": [{"type": "text", "text": '{\n  "letters": 2,\n  "digits": 2,\n  "spaces": 1\n}'}],
        "isError": False,
        "structuredContent": {"letters": 2, "digits": 2, "spaces": 1},
    }  # fmt: skip


def test_the_tutorials_server_runs_on_both_sdk_majors(python: Path, tmp_path: Path) -> None:
    """Each version of the tutorial's server.py (the first, and the rug pull's)."""
    blocks = re.findall(
        r"<!-- doctest: file=server.py -->\n```python\n(.*?)```", TUTORIAL.read_text(), re.S
    )
    assert len(blocks) == 2
    for n, code in enumerate(blocks):
        server = tmp_path / f"server{n}.py"
        server.write_text(code)
        session = connect_stdio([str(python), str(server)], timeout=60, name="text")
        try:
            tools = {tool["name"]: tool for tool in session.list_tools(60)}
        finally:
            session.close()
        assert sorted(tools) == ["count_words", "shout"]
        assert (
            "~/.ssh" in tools["shout"]["description"]
            if n
            else "Say" in tools["shout"]["description"]
        )


def test_a_server_for_sdk_1_on_sdk_2_is_told_as_a_version_not_a_missing_module(
    tmp_path: Path,
) -> None:
    """The hint "cannot import 'mcp.server.fastmcp': install it for that Python" sent a user who
    had just installed mcp to install it again: the SDK is there, in another major."""
    require(SDK2_PYTHON, "the MCP SDK 2.x venv")
    server = tmp_path / "server.py"
    server.write_text("from mcp.server.fastmcp import FastMCP\n")
    with pytest.raises(TransportUnavailable) as caught:
        connect_stdio([str(SDK2_PYTHON), str(server)], timeout=60, name="text")
    assert caught.value.hint == (
        f"'{SDK2_PYTHON}' has the MCP SDK 2.x and the server is written for 1.x: install "
        "'mcp<2' for that Python, or port the server to 2.x"
    )
