"""Faults around a running `--batch` and a running worker: the broker killed, then back.

Here on the embedded pulsar-lite broker (each test starts its own, on a port it keeps);
tests/pulsar/test_cluster.py does the same to a real Apache Pulsar standalone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Toolctl
from tests.pulsar.pulsar_support import Project, StartWorker, free_port


def batch_in_background(
    project: Project, tmp_path: Path, service: str, url: str, calls: int, seconds: float
) -> subprocess.Popen[str]:
    """`toolctl run SERVICE --batch` of ``calls`` calls of ``seconds`` s, each timing out
    only after 300 s: a call that waits for its timeout makes the test fail, not pass."""
    lines = tmp_path / "calls.jsonl"
    lines.write_text("".join(json.dumps({"seconds": seconds}) + "\n" for _ in range(calls)))
    command = [sys.executable, "-m", "toolctl", "run", service, "--batch", str(lines)]
    command += ["--concurrency", "8", "--timeout", "300", "--pulsar-url", url]
    command += ["--registry", str(project.registry)]
    with open(tmp_path / "batch.out", "wb") as out:  # the results, read as they come
        return subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, text=True)


def lost_batch(
    batch: subprocess.Popen[str], url: str, tmp_path: Path
) -> tuple[int, list[dict[str, object]], str]:
    """The batch's exit code, results and stderr, once the broker was killed under it."""
    _, err = batch.communicate(timeout=90)  # far less than one call's timeout
    out = (tmp_path / "batch.out").read_text()
    results = [json.loads(line) for line in out.splitlines()]
    failed = [r for r in results if not r["success"]]
    assert failed, (out, err)
    assert all(f"lost the Pulsar broker at {url}" in str(r["error"]) for r in failed), failed
    return batch.returncode, results, err


def first_line(batch: subprocess.Popen[str], tmp_path: Path) -> None:
    """Wait until the batch printed its first result (the broker is serving it)."""
    deadline = time.monotonic() + 60
    while not (tmp_path / "batch.out").read_bytes().count(b"\n"):
        assert batch.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)


@pytest.mark.embedded_only  # its own pulsar-lite broker, killed and started again
def test_a_killed_broker_fails_a_batch_at_once_and_the_worker_comes_back(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    port = free_port()
    url = f"pulsar://127.0.0.1:{port}"
    data = ("--port", str(port), "--data", str(tmp_path / "data"))
    assert toolctl("broker", "start", "--detach", *data).returncode == 0
    pid = int(json.loads(toolctl("broker", "status", "--json").stdout)["pid"])
    worker = workers("whoami", "--concurrency", "8", "--pulsar-url", url)
    batch = batch_in_background(project, tmp_path, "whoami", url, calls=400, seconds=0.2)
    try:
        first_line(batch, tmp_path)
        os.kill(pid, signal.SIGKILL)
        code, results, err = lost_batch(batch, url, tmp_path)
    finally:
        batch.kill()
    assert code == 5
    assert len(results) == 400  # every line has its result line
    assert err.count("\n") == 1 and f"lost the Pulsar broker at {url}" in err  # one line

    assert toolctl("broker", "start", "--detach", *data).returncode == 0
    call = (
        "run",
        "whoami",
        "--pulsar-url",
        url,
        "--timeout",
        "2",
        "--registry",
        str(project.registry),
    )
    deadline = time.monotonic() + 60
    while (done := toolctl(*call)).returncode != 0:  # the worker resubscribes by itself
        assert done.returncode in (5, 124), done.stderr
        assert time.monotonic() < deadline, "the worker never came back"
    assert worker.poll() is None  # the same worker process, never restarted
    assert done.stdout.strip().isdigit()
