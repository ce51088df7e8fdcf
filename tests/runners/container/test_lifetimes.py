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


def start(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    write_files(tmp_path, {"reg/t.toml": REGISTRY})
    return subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", "ct-term", *args, "-r", str(tmp_path / "reg")],
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
    child = start(tmp_path, "--batch", "lines.jsonl", "--concurrency", "2")
    deadline = time.monotonic() + 60
    running: list[str] = []
    while time.monotonic() < deadline and len(running) < 2:
        listed = subprocess.run(
            [podman, "ps", "--filter", "name=^toolctl-ct-term-", "--format", "{{.Names}}"],
            capture_output=True,
            text=True,
        )
        running = listed.stdout.split()
        time.sleep(0.2)
    assert len(running) == 2
    returncode, stderr = terminate(child)
    assert returncode == 143, stderr
    assert leftovers("toolctl-ct-term-") == []
