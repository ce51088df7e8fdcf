"""At-least-once delivery, request deadlines and answers over the broker's size limit.

A service with ``delivery = "at-least-once"`` (persistent queues) has its worker
acknowledge a request only after the answer is sent: a worker killed mid-call has its
request given to another worker, and the caller still gets its answer. Every test runs on
pulsar-lite and on a real Apache Pulsar broker (see conftest.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import Toolctl
from tests.pulsar.pulsar_support import Project, StartWorker


def run(toolctl: Toolctl, project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return toolctl("run", *args, "--registry", str(project.registry), timeout=120)


def lines_of(path: Path, count: int, seconds: float = 30) -> list[str]:
    """The first ``count`` lines of ``path``, once it has them."""
    deadline = time.monotonic() + seconds
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return lines
        assert time.monotonic() < deadline, f"{path} has {lines}"
        time.sleep(0.01)


def call_in_background(project: Project, *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "toolctl", "run", *args]
    command += ["--registry", str(project.registry)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_worker_killed_mid_call_has_its_request_answered_by_another(
    project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    marker = tmp_path / "takers"
    first = workers("sure", env={"WORKER_NAME": "first", "STALL": "1"})
    call = call_in_background(project, "sure", "--arg", f"marker={marker}", "--timeout", "60")
    try:
        assert lines_of(marker, 1) == ["first"]  # the first worker took it, and hangs
        os.killpg(first.pid, signal.SIGKILL)
        # pulsar-lite takes one worker process per service: the second starts after
        workers("sure", env={"WORKER_NAME": "second"})
        out, err = call.communicate(timeout=90)
    finally:
        call.kill()
    assert (call.returncode, out) == (0, "second\n"), err
    assert lines_of(marker, 2) == ["first", "second"]  # handled twice: be idempotent


def test_a_request_whose_caller_gave_up_is_skipped(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    # a persistent queue keeps requests while no worker runs, once the subscription exists
    worker = workers("sure")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    late = tmp_path / "late"
    gone = run(toolctl, project, "sure", "--arg", f"marker={late}", "--timeout", "0.5")
    assert gone.returncode == 124, gone.stderr
    workers("sure", "--verbose", env={"WORKER_NAME": "back"})
    fresh = tmp_path / "fresh"
    done = run(toolctl, project, "sure", "--arg", f"marker={fresh}", "--timeout", "30")
    assert (done.returncode, done.stdout) == (0, "back\n"), done.stderr
    assert lines_of(fresh, 1) == ["back"]
    assert not late.exists()  # the request that outlived its caller was never handled


def test_at_most_once_is_the_default_and_stays_non_persistent(
    toolctl: Toolctl, project: Project
) -> None:
    shown = toolctl(
        "show", "hello", "--kind", "service", "--json", "--registry", str(project.registry)
    )
    assert shown.returncode == 0, shown.stderr
    assert '"delivery": "at-most-once"' in shown.stdout.replace("\n", "")


def test_at_least_once_needs_persistent_queues(toolctl: Toolctl, tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    registry.mkdir()
    cases = {
        "non-persistent": (
            'request_queue = "non-persistent://tg/request/x"\n'
            'response_queue = "persistent://tg/response/x"\ndelivery = "at-least-once"',
            'delivery = "at-least-once" needs persistent:// queues; request_queue is',
        ),
        "trustgraph-queue": (
            'request_queue = "request:tg:x"\nresponse_queue = "flow:tg:x"\n'
            'delivery = "at-least-once"',
            "request_queue is 'non-persistent://tg/request/x'",
        ),
        "unknown": (
            'request_queue = "persistent://tg/request/x"\n'
            'response_queue = "persistent://tg/response/x"\ndelivery = "twice"',
            "delivery",
        ),
    }
    for name, (section, problem) in cases.items():
        (registry / "s.toml").write_text(
            f'[[service]]\nname = "{name}"\n[service.pulsar]\n{section}\n'
        )
        done = toolctl("check", "--registry", str(registry))
        assert done.returncode != 0, name
        assert problem in done.stdout + done.stderr, (name, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
    (registry / "s.toml").write_text(
        '[[service]]\nname = "fine"\n[service.pulsar]\n'
        'request_queue = "flow:tg:x"\nresponse_queue = "persistent://tg/response/x"\n'
        'delivery = "at-least-once"\n'
    )
    assert toolctl("check", "--registry", str(registry)).returncode == 0


def test_an_answer_over_the_size_limit_is_an_error_naming_it(
    toolctl: Toolctl, project: Project, workers: StartWorker
) -> None:
    workers("huge")
    done = run(toolctl, project, "huge", "--arg", "megabytes=20", "--timeout", "60")
    assert done.returncode == 1, done.stderr
    assert "tool-service-error" in done.stderr
    assert "the answer is 20,971,5" in done.stderr and "maxMessageSize" in done.stderr
    small = run(toolctl, project, "huge", "--arg", "megabytes=0")
    assert small.returncode == 0, small.stderr  # the worker serves on


def test_a_request_over_the_size_limit_is_refused_at_once(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    workers("echo")
    arguments = tmp_path / "big.json"
    arguments.write_text('{"word": "' + "x" * (6 * 1024 * 1024) + '"}')
    done = run(toolctl, project, "echo", "--args", f"@{arguments}", "--timeout", "300")
    assert done.returncode == 2, done.stderr
    assert "the request is larger than the Pulsar broker" in done.stderr
    assert "maxMessageSize" in done.stderr
