"""SIGTERM to `toolctl run` of a container tool, alone or in a --batch: exit 143, and every
container the call started is killed and removed (the command inside ignores SIGTERM)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import write_files
from tests.runners.container.conftest import IMAGE

REGISTRY = f"""
[[tool]]
name = "ct-term"
timeout = 60
[tool.container]
image = "{IMAGE}"
command = ["sh", "-c", "echo started; sleep 60"]
input = "none"
[[tool.arguments]]
name = "n"
required = false
"""


def start(tmp_path: Path, *args: str, name: str = "ct-term") -> subprocess.Popen[str]:
    """`toolctl run NAME` of a container tool; each test its own NAME (tests run side by
    side, and one's containers must not be taken for another's leftovers)."""
    write_files(tmp_path, {"reg/t.toml": REGISTRY.replace("ct-term", name)})
    return subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", name, *args, "-r", str(tmp_path / "reg")],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def terminate(child: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        child.send_signal(signal.SIGTERM)
        _, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    return child.returncode, stderr


def test_sigterm_removes_the_container_and_exits_143(
    podman: str, tmp_path: Path, leftovers: Callable[[str], list[str]]
) -> None:
    child = start(tmp_path)
    assert child.stdout is not None
    assert child.stdout.readline() == "started\n"
    returncode, stderr = terminate(child)
    assert returncode == 143, stderr
    assert "terminated; container toolctl-ct-term-" in stderr
    assert leftovers("toolctl-ct-term-") == []


def test_sigterm_removes_every_container_of_a_batch(
    podman: str, tmp_path: Path, leftovers: Callable[[str], list[str]]
) -> None:
    (tmp_path / "lines.jsonl").write_text('{"n": "1"}\n{"n": "2"}\n')
    child = start(tmp_path, "--batch", "lines.jsonl", "--concurrency", "2", name="ct-batch")
    deadline = time.monotonic() + 60
    running: list[str] = []
    while time.monotonic() < deadline and len(running) < 2:
        listed = subprocess.run(
            [podman, "ps", "--filter", "name=^toolctl-ct-batch-", "--format", "{{.Names}}"],
            capture_output=True,
            text=True,
        )
        running = listed.stdout.split()
        time.sleep(0.2)
    assert len(running) == 2
    returncode, stderr = terminate(child)
    assert returncode == 143, stderr
    assert leftovers("toolctl-ct-batch-") == []


def _registry(tmp_path: Path, name: str, command: str) -> Path:
    write_files(tmp_path, {"reg/t.toml": REGISTRY.replace("ct-term", name).replace(
        '["sh", "-c", "echo started; sleep 60"]', command)})  # fmt: skip
    return tmp_path / "reg"


def _first_line(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    return child.stdout.readline()


def test_a_second_signal_removes_the_container_before_toolctl_ends(
    podman: str, tmp_path: Path, leftovers: Callable[[str], list[str]]
) -> None:
    """SIGINT, then SIGTERM before the first has ended the call: toolctl ends at once, and
    its container is removed first (its engine client and conmon, SIGKILLed with the rest
    of toolctl's tree, left it running with nothing to remove it)."""
    reg = _registry(
        tmp_path, "ct-twice", '["sh", "-c", "trap \\"\\" INT TERM; echo started; sleep 60"]'
    )
    child = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", "ct-twice", "-r", str(reg)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert _first_line(child) == "started\n"
        child.send_signal(signal.SIGINT)
        time.sleep(0.05)  # while the first is removing it (another signal: not "sent twice")
        child.send_signal(signal.SIGTERM)
        child.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    assert child.returncode in (130, 143)
    assert leftovers("toolctl-ct-twice-") == []


def test_a_reader_gone_ends_the_tool_and_removes_its_container(
    podman: str, tmp_path: Path, leftovers: Callable[[str], list[str]]
) -> None:
    """`toolctl run TOOL | head -1`: the reader goes, toolctl ends 141, and the tool is
    ended with it, its container removed (it was left running)."""
    reg = _registry(tmp_path, "ct-flood", '["sh", "-c", "while :; do echo line; done"]')
    command = f"{sys.executable} -m toolctl run ct-flood -r {reg} | head -1"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command], cwd=tmp_path, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (141, "line\n"), done.stderr
    assert leftovers("toolctl-ct-flood-") == []
