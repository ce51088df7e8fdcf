"""Fixtures for the server tests: a small registry, and `toolctl serve` as a real process."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write_files
from tests.serve.serve_support import PY, REGISTRY, Served, StartServe, wait_for
from toolctl.processes import free_port
from toolctl.processes.ready import read_report


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    write_files(tmp_path / "registry", {"tools.toml": REGISTRY})
    return tmp_path / "registry"


@pytest.fixture
def serve(tmp_path: Path, registry: Path) -> Iterator[StartServe]:
    """Start `toolctl serve` on a free port and wait until it says it listens (its ready
    file); stopped with SIGTERM at the end if still running (SIGKILL would orphan the
    processes of calls in flight), killed only if it does not stop."""
    started: list[Served] = []

    def start(*extra: str, env: dict[str, str] | None = None) -> Served:
        ready = tmp_path / f"ready-{len(started)}"
        log = tmp_path / f"serve-{len(started)}.log"
        port = free_port()
        command = [PY, "-m", "toolctl", "serve", "--port", str(port), "--ready-file", str(ready)]
        if "--registry" not in extra:
            command += ["--registry", str(registry)]
        with open(log, "wb") as output:
            child = subprocess.Popen(
                [*command, *extra],
                cwd=tmp_path,
                env={**os.environ, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        if not wait_for(lambda: read_report(ready) is not False or child.poll() is not None, 60):
            child.kill()
        if read_report(ready) is not True:
            child.kill()
            raise AssertionError(f"serve did not start: {log.read_text()}")
        served = Served(child, f"http://127.0.0.1:{port}", log)
        started.append(served)
        return served

    yield start
    for served in started:
        if served.child.poll() is None:
            served.child.terminate()
            try:
                served.child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                served.child.kill()
                served.child.wait(timeout=10)
