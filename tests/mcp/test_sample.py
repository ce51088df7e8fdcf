"""The sample registry's MCP server (plugins/textmcp) and its pinned tools: the pins match
what the server sends, and its tools run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import ROOT, Toolctl


def sample(tmp_path: Path) -> Path:
    """registry/textmcp.toml, with this interpreter (it has the SDK) and an absolute cwd."""
    text = (ROOT / "registry/textmcp.toml").read_text()
    text = text.replace('command = ["python3",', f"command = [{json.dumps(sys.executable)},")
    text = text.replace('cwd = ".."', f"cwd = {json.dumps(str(ROOT))}")
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/textmcp.toml").write_text(text)
    return tmp_path / "reg"


def test_the_sample_pins_match_the_server(toolctl: Toolctl, tmp_path: Path) -> None:
    done = toolctl("check", "--live", "--strict", "-r", str(sample(tmp_path)), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["problems"] == []


def test_the_sample_tools_run(toolctl: Toolctl, tmp_path: Path) -> None:
    reg = sample(tmp_path)
    counted = toolctl(
        "run", "text-mcp.letter_count", "-r", str(reg), "-a", "text=R2-D2 x", "--json"
    )
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout)["data"] == {"letters": 3, "digits": 2, "spaces": 1}
    reversed_ = toolctl("run", "text-mcp.reverse", "-r", str(reg), "-a", "text=stressed")
    assert reversed_.stdout.strip() == "desserts"
