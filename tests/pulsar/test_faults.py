"""Faults around a running `--batch` and a running worker: the broker killed, then back.

Here on the embedded pulsar-lite broker (each test starts its own, on a port it keeps);
tests/pulsar/test_cluster.py does the same to a real Apache Pulsar standalone.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import Toolctl
from tests.pulsar.pulsar_support import (
    Project,
    StartWorker,
    broker_killed_under_a_batch,
    free_port,
)


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
    code, results, err = broker_killed_under_a_batch(
        project, tmp_path, url, lambda: os.kill(pid, signal.SIGKILL)
    )
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
