"""MCP server processes leave nothing behind (issue #24 item 11): a server that starts
helpers in sessions of their own (``setsid``, ``nohup sh -c '... &'``) has them ended with
it after `check --live`, `import mcp`, and `service down` of a kept session, whether its
server or its keeper was killed first."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
import tomli_w

from tests.conftest import Toolctl
from tests.mcp.conftest import PROBE
from tests.runners.test_lifetimes import gone, markers, survivors
from tests.serve.serve_support import wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


def spawning_service(root: Path, marks: tuple[str, str, str]) -> Path:
    """A registry whose MCP service ``probe`` leaves two helpers in sessions of their own."""
    first, second, _ = marks
    script = (
        f"setsid sleep {first} & nohup sh -c 'sleep {second} &' >/dev/null 2>&1; "
        f'exec "{sys.executable}" "{PROBE}"'
    )
    service = {"name": "probe", "mcp": {"command": ["sh", "-c", script]}}
    (root / "reg").mkdir(parents=True, exist_ok=True)
    (root / "reg/s.toml").write_text(tomli_w.dumps({"service": [service]}))
    return root / "reg"


def helpers_run(marks: tuple[str, str, str]) -> bool:
    return wait_for(lambda: len(survivors(marks)) >= 2, 30)


def test_check_live_and_import_mcp_leave_no_helper(
    toolctl_process: Toolctl, tmp_path: Path
) -> None:
    marks = markers()
    reg = spawning_service(tmp_path, marks)
    imported = toolctl_process("import", "mcp", "probe", "-r", str(reg), "--tool", "echo")
    assert imported.returncode == 0, imported.stderr
    assert gone(marks) == []
    live = toolctl_process("check", "--live", "-r", str(reg))
    assert live.returncode in (0, 3), live.stderr
    assert gone(marks) == []


@pytest.mark.parametrize("killed", ["keeper", "server"])
def test_service_down_ends_the_helpers_of_a_killed_keeper_or_server(
    toolctl_process: Toolctl, tmp_path: Path, killed: str
) -> None:
    marks = markers()
    reg = spawning_service(tmp_path, marks)
    try:
        up = toolctl_process("service", "up", "probe", "-r", str(reg))
        assert up.returncode == 0, up.stderr
        assert helpers_run(marks)
        status = toolctl_process("service", "status", "-r", str(reg), "--json")
        [row] = json.loads(status.stdout)
        keeper = int(row["pid"])
        if killed == "keeper":
            os.kill(keeper, signal.SIGKILL)
        else:
            server = next(
                int(line.split(":", 1)[0]) for line in _children(keeper) if "probe_server" in line
            )
            os.kill(server, signal.SIGKILL)
    finally:
        down = toolctl_process("service", "down", "probe", "-r", str(reg))
    assert down.returncode in (0, 5), down.stderr
    assert gone(marks) == []


def _children(pid: int) -> list[str]:
    """``pid: cmdline`` of each process whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                line = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid:
            found.append(f"{entry}: {line}")
    return found


@pytest.mark.parametrize(
    ("signum", "code", "word"),
    [(signal.SIGTERM, 143, "terminated"), (signal.SIGHUP, 129, "hung up")],
)
def test_a_signal_under_import_mcp_ends_it_as_ctrl_c_does(
    tmp_path: Path, signum: int, code: int, word: str
) -> None:
    """SIGTERM or SIGHUP while `import mcp` waited on a slow server killed toolctl
    silently (Python's default) and left the server and its helpers running: it ends as
    Ctrl-C does, its clean-up run, in one line with the signal's code."""
    import subprocess

    marks = markers()
    first, second, last = marks
    script = f"setsid sleep {first} & nohup sh -c 'sleep {second} &' >/dev/null 2>&1; sleep {last}"
    service = {"name": "slow", "mcp": {"command": ["sh", "-c", script], "connect_timeout": 60}}
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/s.toml").write_text(tomli_w.dumps({"service": [service]}))
    child = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "import", "mcp", "slow", "-r", str(tmp_path / "reg")],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for(lambda: len(survivors(marks)) >= 3, 30)
        child.send_signal(signum)
        _, err = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait()
    assert (child.returncode, err) == (code, f"toolctl: error: {word}\n")
    assert gone(marks) == []
