"""One trace across processes: `toolctl run` → (`toolctl serve` →) a Pulsar worker, received
as real OTLP protobuf; the worker's Prometheus metrics checked by promtool."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Toolctl
from tests.pulsar.pulsar_support import Project, StartWorker, free_port
from tests.records.otlp_receiver import Receiver, otlp_receiver
from tests.records.promtool import check_metrics
from toolctl.processes.ready import read_report


def traced(receiver: Receiver, service: str) -> dict[str, str]:
    """The environment of a process that exports its spans to ``receiver`` at once."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_SERVICE_NAME": service,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with otlp_receiver() as started:
        yield started


def test_a_run_through_a_worker_is_one_trace_of_two_spans(
    toolctl_process: Toolctl, project: Project, workers: StartWorker, receiver: Receiver
) -> None:
    workers("echo", env=traced(receiver, "worker"))
    done = toolctl_process(
        "run", "echo", "--arg", "word=hi", "-r", str(project.registry), env=traced(receiver, "cli")
    )
    assert done.returncode == 0, done.stderr
    spans = {span.service: span for span in receiver.wait_for(2)}
    cli, worker = spans["cli"], spans["worker"]
    assert cli.trace_id == worker.trace_id and cli.parent_id == ""
    assert worker.parent_id == cli.span_id
    assert cli.attributes["gen_ai.tool.name"] == "echo"
    assert cli.attributes["toolctl.runtime"] == "pulsar"
    assert worker.attributes["toolctl.caller"] == "worker"
    assert worker.attributes["gen_ai.operation.name"] == "execute_tool"
    assert len(receiver.wait_for(3, timeout=1)) == 2


@pytest.fixture
def serve(project: Project, tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def start_serve(
    project: Project, tmp_path: Path, env: dict[str, str], started: list[subprocess.Popen[bytes]]
) -> str:
    port, ready = free_port(), tmp_path / "serve-ready"
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115 - kept for the process's life
    command = [sys.executable, "-m", "toolctl", "serve", "--port", str(port)]
    command += ["--ready-file", str(ready), "--registry", str(project.registry)]
    child = subprocess.Popen(
        command,
        cwd=project.root,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    started.append(child)
    deadline = time.monotonic() + 60
    while read_report(ready) is not True:
        if child.poll() is not None or time.monotonic() > deadline:
            raise AssertionError((tmp_path / "serve.log").read_text())
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}"


def test_a_run_through_serve_and_a_worker_is_one_trace_of_three_spans(
    toolctl_process: Toolctl,
    project: Project,
    workers: StartWorker,
    receiver: Receiver,
    serve: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    workers("echo", env=traced(receiver, "worker"))
    url = start_serve(project, tmp_path, traced(receiver, "serve"), serve)
    (project.registry / "gateway.toml").write_text(
        f'[[tool]]\nname = "via-serve"\nruntime = "tool-agent"\n'
        f'options = {{ router = "{url}", tool_id = "echo" }}\n'
        '[[tool.arguments]]\nname = "word"\n'
    )
    done = toolctl_process(
        "run", "via-serve", "--arg", "word=hi", "-r", str(project.registry),
        env=traced(receiver, "cli"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "hi" in done.stdout
    spans = {span.service: span for span in receiver.wait_for(3)}
    cli, served, worker = spans["cli"], spans["serve"], spans["worker"]
    assert cli.trace_id == served.trace_id == worker.trace_id
    assert (served.parent_id, worker.parent_id) == (cli.span_id, served.span_id)
    assert served.attributes["toolctl.caller"] == "serve"
    assert served.attributes["gen_ai.tool.name"] == "echo"
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as answer:
        exposition = answer.read()
    assert (
        b'toolctl_tool_calls_total{caller="serve",outcome="ok",runtime="pulsar",tool="echo"} 1.0'
        in exposition
    )
    checked = check_metrics(exposition)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_worker_serves_metrics_that_promtool_finds_clean(
    toolctl: Toolctl, project: Project, workers: StartWorker
) -> None:
    port = free_port()
    workers("sure", "--metrics-port", str(port))
    for marker in ("a", "b"):
        done = toolctl("run", "sure", "--arg", f"marker={marker}", "-r", str(project.registry))
        assert done.returncode == 0, done.stderr
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        exposition = answer.read()
    text = exposition.decode()
    assert (
        'toolctl_tool_calls_total{caller="worker",outcome="ok",runtime="pulsar",tool="sure"} 2.0'
        in text
    )
    backlog = [
        line for line in text.splitlines() if line.startswith("toolctl_worker_queue_backlog{")
    ]
    assert backlog and project.request_queue("sure") in backlog[0]
    checked = check_metrics(exposition)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    deadline = time.monotonic() + 30  # the worker writes its history once a second
    while time.monotonic() < deadline:
        history = json.loads(toolctl("history", "--json", "--caller", "worker").stdout)
        if len(history["calls"]) == 2:
            break
        time.sleep(0.2)
    assert [(c["tool"], c["outcome"]) for c in history["calls"]] == [("sure", "ok")] * 2
