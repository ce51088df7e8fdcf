"""The one lifetime of a long-running command: every stopping signal (TERM, INT, HUP, QUIT)
ends `run` cleanly, with 128 + its number, and leaves nothing it started.

Real processes throughout: a local tool that leaves grandchildren in sessions of their
own (``setsid``, ``nohup``), found in /proc afterwards, and a container under podman
whose command ignores SIGTERM. The servers' signals are in tests/serve/test_signals.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import write_files
from tests.runners.container.conftest import IMAGE, leftovers, podman, use_podman
from tests.runners.test_lifetimes import finish, gone, markers, spawner, start, survivors
from tests.serve.serve_support import wait_for
from toolctl.processes import free_port

__all__ = ["leftovers", "podman", "use_podman"]  # the container tests' fixtures, used here

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

STOPPING = [
    pytest.param(signal.SIGHUP, 129, "hung up", id="HUP"),
    pytest.param(signal.SIGQUIT, 131, "quit", id="QUIT"),
    pytest.param(signal.SIGTERM, 143, "terminated", id="TERM"),
    pytest.param(signal.SIGINT, 130, "interrupted", id="INT"),
]


@pytest.mark.parametrize(("signum", "code", "word"), STOPPING[:2])
def test_hup_and_quit_end_a_run_and_every_process_it_started(
    tmp_path: Path, signum: int, code: int, word: str
) -> None:
    marks = markers()
    write_files(tmp_path, {"reg/t.toml": spawner(marks, then="echo started; sleep {last}")})
    child = start(tmp_path, "spawner")
    assert child.stdout is not None
    assert child.stdout.readline() == "started\n"
    assert started(marks)  # the tool's last sleep and both grandchildren
    returncode, stderr = finish(child, signum)
    assert returncode == code, stderr
    assert f"toolctl: error: {word}; the tool's processes were killed" in stderr
    assert gone(marks) == []


CONTAINER = f"""
[[tool]]
name = "ct-life"
timeout = 60
[tool.container]
image = "{IMAGE}"
command = ["sh", "-c", "trap '' TERM; echo started; sleep 60"]
input = "none"
"""


@pytest.mark.parametrize(("signum", "code", "word"), STOPPING[:2])
def test_hup_and_quit_remove_the_container_of_a_run(
    podman: str,
    tmp_path: Path,
    leftovers: Callable[[str], list[str]],
    signum: int,
    code: int,
    word: str,
) -> None:
    write_files(tmp_path, {"reg/t.toml": CONTAINER})
    child = start(tmp_path, "ct-life")
    assert child.stdout is not None
    assert child.stdout.readline() == "started\n"
    returncode, stderr = finish(child, signum)
    assert returncode == code, stderr
    assert f"{word}; container toolctl-ct-life-" in stderr
    assert leftovers("toolctl-ct-life-") == []


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGHUP, 129), (signal.SIGQUIT, 131)])
def test_a_foreground_broker_stops_on_hup_and_quit(
    tmp_path: Path, isolated_env: dict[str, str], signum: int, code: int
) -> None:
    def toolctl(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "toolctl", *args]
        return subprocess.run(
            argv, capture_output=True, text=True, cwd=tmp_path, env=isolated_env, timeout=60
        )

    port = free_port()
    command = [sys.executable, "-m", "toolctl", "broker", "start", "--port", str(port)]
    command += ["--data", str(tmp_path / "data")]
    broker = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=isolated_env,
    )
    try:
        assert broker.stdout is not None
        assert broker.stdout.readline() == f"pulsar://127.0.0.1:{port}\n"
        broker.send_signal(signum)
        _, err = broker.communicate(timeout=30)
        status = toolctl("broker", "status")
    finally:
        broker.kill()
        toolctl("broker", "stop")  # whatever happened above, no broker outlives the test
    assert broker.returncode == code, err
    assert "toolctl: broker stopped" in err and "Traceback" not in err
    assert status.returncode == 5, status.stderr


def started(marks: tuple[str, str, str]) -> bool:
    """Whether the tool's three sleeps (its last one and both grandchildren) run, once they
    do or a minute has passed (a server starts slowly on a loaded machine)."""

    def sleeping() -> bool:
        lines = [found.split(": ", 1)[1] for found in survivors(marks)]
        return all(any(line.startswith(f"sleep {mark}") for line in lines) for mark in marks)

    return wait_for(sleeping, seconds=60)


def _reading_stdin(pid: int) -> bool:
    """Whether ``pid`` handles SIGTERM itself (its lifetime is in force) and is blocked in
    a read of its stdin: the moment a user's Ctrl-C finds `run --args -` waiting."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        syscall = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:"))[7:], 16)
    return bool(caught >> (signal.SIGTERM - 1) & 1) and syscall[:2] == ["0", "0x0"]


@pytest.mark.parametrize(("signum", "code", "word"), STOPPING[2:])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_signal_before_any_tool_runs_is_told_with_its_own_exit_code(
    tmp_path: Path, signum: int, code: int, word: str, as_json: bool
) -> None:
    # `run --args -` waits on stdin before a tool is called: nothing below the command
    # catches the signal there (typer 0.28 made it a silent 130, SIGTERM included)
    write_files(
        tmp_path, {"reg/t.toml": '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\n'}
    )
    command = [sys.executable, "-m", "toolctl", "run", "t", "--args", "-", "--registry", "reg"]
    child = subprocess.Popen(
        command + ["--json"] * as_json,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for(lambda: _reading_stdin(child.pid), seconds=60)
        child.send_signal(signum)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert (child.returncode, err) == (code, f"toolctl: error: {word}\n")
    if as_json:
        assert json.loads(out)["exit_code"] == code
    else:
        assert out == ""
