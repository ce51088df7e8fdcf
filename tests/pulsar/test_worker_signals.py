"""`toolctl worker --tool` stopped by every signal a terminal or supervisor sends, with a
call in flight whose tool left grandchildren in sessions of their own (issue #24): nothing
is left, and it ends with the documented code (SIGTERM drains, then exits 0)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_files
from tests.pulsar.pulsar_support import Project, StartWorker
from tests.runners.test_lifetimes import gone, markers, spawner
from tests.serve.test_signals import started

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

CODES = [
    pytest.param(signal.SIGTERM, 0, id="TERM"),
    pytest.param(signal.SIGINT, 130, id="INT"),
    pytest.param(signal.SIGHUP, 129, id="HUP"),
    pytest.param(signal.SIGQUIT, 131, id="QUIT"),
]


@pytest.mark.parametrize(("signum", "code"), CODES)
def test_a_worker_stopped_by_a_signal_leaves_no_grandchild(
    project: Project, workers: StartWorker, tmp_path: Path, signum: int, code: int
) -> None:
    marks = markers()
    suffix = project.suffix
    local = spawner(marks, then="sleep {last}").replace('"spawner"', f'"spawner-{suffix}"')
    write_files(
        project.registry,
        {
            "spawner.toml": local
            + f"""
[[service]]
name = "spawner-on-pulsar"
[service.pulsar]
request_queue = "non-persistent://tg/request/spawner-{suffix}"
response_queue = "non-persistent://tg/response/spawner-{suffix}"

[[tool]]
name = "remote-spawner"
service = "spawner-on-pulsar"
timeout = 60
parameters = {{ type = "object" }}
"""
        },
    )
    worker = workers("--tool", f"spawner-{suffix}")
    command = [sys.executable, "-m", "toolctl", "run", "remote-spawner"]
    call = subprocess.Popen(
        [*command, "--registry", str(project.registry)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert started(marks)
        worker.send_signal(signum)
        assert worker.wait(timeout=60) == code
    finally:
        call.kill()
        call.wait()
    assert gone(marks) == []
