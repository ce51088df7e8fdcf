"""`toolctl worker`: concurrency, failures, signals, detaching, hosting registered tools."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, Toolctl, write_files
from tests.pulsar.pulsar_support import Project, StartWorker, free_port
from toolctl.processes.table import is_alive


def run(toolctl: Toolctl, project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return toolctl("run", *args, "--registry", str(project.registry), timeout=60)


def wait_for(path: Path, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_concurrency_n_runs_n_calls_at_once(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    # each call waits on a barrier of 3: all pass only if 3 calls are in flight together
    workers("together", "--concurrency", "3", env={"TOGETHER": "3"})
    batch = tmp_path / "three.jsonl"
    batch.write_text("".join(json.dumps({"n": n}) + "\n" for n in range(3)))
    done = run(toolctl, project, "together", "--batch", str(batch), "--concurrency", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [json.loads(line)["output"] for line in done.stdout.splitlines()] == [
        "together 0",
        "together 1",
        "together 2",
    ]


def _call_in_background(
    project: Project, tmp_path: Path, seconds: float, timeout: float
) -> tuple[subprocess.Popen[str], Path]:
    marker = tmp_path / f"marker-{time.monotonic_ns()}"
    command = [
        sys.executable,
        "-m",
        "toolctl",
        "run",
        "sleepy",
        "--registry",
        str(project.registry),
    ]
    command += ["--arg", f"marker={marker}", "--arg", f"seconds={seconds}"]
    command += ["--timeout", str(timeout)]
    call = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return call, marker


def test_a_worker_killed_mid_call_times_the_call_out_and_a_new_one_takes_over(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    worker = workers("sleepy")
    call, marker = _call_in_background(project, tmp_path, seconds=60, timeout=3)
    try:
        wait_for(marker)
        os.killpg(worker.pid, signal.SIGKILL)
        _, err = call.communicate(timeout=30)
    finally:
        call.kill()
    assert call.returncode == 124
    assert "no answer from service 'sleepy'" in err
    assert err.rstrip().endswith("start 'toolctl worker sleepy'")  # it has a handler
    # the broker let go of the dead worker's subscription: a new worker serves the service
    workers("sleepy")
    done = run(
        toolctl, project, "sleepy", "--arg", f"marker={tmp_path / 'm2'}", "--arg", "seconds=0"
    )
    assert (done.returncode, done.stdout) == (0, "slept\n")


def test_sigterm_lets_the_call_in_flight_answer_then_exits_0(
    project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    worker = workers("sleepy")
    call, marker = _call_in_background(project, tmp_path, seconds=1.5, timeout=20)
    try:
        wait_for(marker)
        worker.send_signal(signal.SIGTERM)
        out, err = call.communicate(timeout=30)
        assert worker.wait(timeout=30) == 0
    finally:
        call.kill()
    assert (call.returncode, out) == (0, "slept\n"), err


def test_a_call_still_running_after_the_drain_is_answered_with_an_error(
    project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    # SIGTERM drains for 10 s; the call would take 60, its caller would wait 50 more
    worker = workers("sleepy")
    call, marker = _call_in_background(project, tmp_path, seconds=60, timeout=50)
    try:
        wait_for(marker)
        worker.send_signal(signal.SIGTERM)
        out, err = call.communicate(timeout=40)
        assert worker.wait(timeout=30) == 0
    finally:
        call.kill()
    # its host went away, not the tool failing: exit 5 (it was 1, and `graph learn` and
    # `stats` counted every deploy's restart against the tool)
    assert (call.returncode, out) == (5, ""), err
    assert "the worker stopped before the call finished (it ran past the 10 s drain)" in err
    assert "call again: another worker may take it" in err


def test_a_second_signal_answers_the_calls_in_flight_before_it_ends_the_worker(
    project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    """A second signal ended the worker at once: its callers heard nothing and waited out
    their whole timeout (50 s here), where the drain's end answers them."""
    worker = workers("sleepy")
    call, marker = _call_in_background(project, tmp_path, seconds=60, timeout=50)
    try:
        wait_for(marker)
        worker.send_signal(signal.SIGINT)
        time.sleep(0.5)
        worker.send_signal(signal.SIGTERM)
        out, err = call.communicate(timeout=20)  # its timeout is 50 s
        worker.wait(timeout=30)
    finally:
        call.kill()
    assert (call.returncode, out) == (5, ""), err
    assert "the worker stopped before the call finished (a second signal" in err


def test_detach_start_is_idempotent_and_stop_stops_it(toolctl: Toolctl, project: Project) -> None:
    registry = ("--registry", str(project.registry))
    first = toolctl("worker", "hello", "--detach", *registry, cwd=project.root)
    assert first.returncode == 0, first.stderr
    assert "worker hello started" in first.stderr
    again = toolctl("worker", "hello", "--detach", *registry, cwd=project.root)
    assert again.returncode == 0
    assert "already running" in again.stderr
    as_json = toolctl("worker", "hello", "--detach", "--json", *registry, cwd=project.root)
    assert as_json.returncode == 0 and as_json.stderr == ""
    assert json.loads(as_json.stdout)["already_running"] is True
    assert isinstance(json.loads(as_json.stdout)["started"], float)  # as `service status`
    assert json.loads(as_json.stdout)["name"] == "worker:hello"
    foreground = toolctl("worker", "hello", "--json", *registry, cwd=project.root)
    assert foreground.returncode == 2 and "--json goes with --detach or --stop" in foreground.stderr
    # with other options it is not what was asked for: "already running" (exit 0) told a
    # script its worker served on a broker it never connected to
    other = toolctl(
        "worker", "hello", "--detach", "--concurrency", "7", *registry, cwd=project.root
    )
    assert other.returncode == 2, other.stderr
    assert "already runs with other options" in other.stderr and "--concurrency 4" in other.stderr
    status = toolctl("service", "status", "--json")
    (record,) = [r for r in json.loads(status.stdout) if r["name"] == "worker:hello"]
    assert record["kind"] == "worker"
    assert Path(record["log"]).name == "worker@hello.log"
    assert "worker@hello.log)" in first.stderr
    done = run(toolctl, project, "hello", "--arg", "name=d", "--user", "u")
    assert (done.returncode, done.stdout) == (0, "hello d from u\n")
    stopped = toolctl("worker", "hello", "--stop", "--json")
    assert stopped.returncode == 0
    assert json.loads(stopped.stdout)["state"] == "stopped"
    assert json.loads(stopped.stdout)["pid"] == record["pid"]
    assert not is_alive(int(record["pid"]))
    assert "not running" in toolctl("worker", "hello", "--stop").stderr


def test_a_detached_worker_that_cannot_start_says_why(toolctl: Toolctl, project: Project) -> None:
    url = f"pulsar://127.0.0.1:{free_port()}"
    done = toolctl(
        "worker", "hello", "--detach", "--pulsar-url", url, "--registry", str(project.registry)
    )
    assert done.returncode == 5
    assert f"cannot reach the Pulsar broker at {url}" in done.stderr
    assert toolctl("service", "status", "--json").stdout.strip() == "[]"


def test_a_detached_worker_reports_its_own_error_and_exit_code(
    toolctl: Toolctl, project: Project
) -> None:
    registry = ("--registry", str(project.registry))
    missing = toolctl("worker", "no-such-service", "--detach", *registry, cwd=project.root)
    assert missing.returncode == 4
    assert "service 'no-such-service' not found" in missing.stderr
    bad = toolctl("worker", "hello", "--handler", "nowhere:x", "--detach", *registry)
    assert bad.returncode == 2
    assert "handler nowhere:x" in bad.stderr
    assert toolctl("service", "status", "--json").stdout.strip() == "[]"


def test_worker_usage_errors(toolctl: Toolctl, project: Project) -> None:
    registry = ("--registry", str(project.registry))
    assert toolctl("worker", *registry).returncode == 2
    assert toolctl("worker", "hello", "--tool", "x", *registry).returncode == 2
    missing = toolctl("worker", "no-such-service", *registry)
    assert missing.returncode == 4
    assert "service 'no-such-service' not found" in missing.stderr
    bad = toolctl("worker", "hello", "--handler", "nowhere.at.all:invoke", *registry)
    assert bad.returncode == 2
    assert "handler nowhere.at.all:invoke" in bad.stderr
    assert "Traceback" not in bad.stderr
    pulsar_tool = toolctl("worker", "--tool", "hello", *registry)
    assert pulsar_tool.returncode == 2
    assert "toolctl worker hello" in pulsar_tool.stderr
    for ttl in ("nan", "NaN"):  # the option's bounds let NaN by: the heartbeat would end
        nan = toolctl("worker", "hello", "--announce", "--announce-ttl", ttl, *registry)
        assert (nan.returncode, nan.stderr) == (
            2,
            "toolctl: error: --announce-ttl must be seconds from 1 to 86400, got nan\n",
        )


def test_dead_broker_fails_the_worker_with_5(toolctl: Toolctl, project: Project) -> None:
    url = f"pulsar://127.0.0.1:{free_port()}"
    done = toolctl("worker", "hello", "--pulsar-url", url, "--registry", str(project.registry))
    assert done.returncode == 5
    assert url in done.stderr


def test_a_registered_local_tool_is_hosted_with_tool(
    toolctl: Toolctl, project: Project, tmp_path: Path
) -> None:
    python = json.dumps(sys.executable)
    upper = "import json, sys; print(json.load(sys.stdin)['text'].upper())"
    suffix = project.suffix
    write_files(
        project.registry,
        {
            "local.toml": f"""
                [[tool]]
                name = "upper-{suffix}"
                [tool.local]
                command = [{python}, "-c", {json.dumps(upper)}]
                [[tool.arguments]]
                name = "text"

                [[service]]
                name = "upper-on-pulsar"
                [service.pulsar]
                request_queue = "non-persistent://tg/request/upper-{suffix}"
                response_queue = "non-persistent://tg/response/upper-{suffix}"

                [[tool]]
                name = "remote-upper"
                service = "upper-on-pulsar"
                parameters = {{ type = "object" }}  # anything goes: the worker validates
            """
        },
    )
    registry = ("--registry", str(project.registry))
    started = toolctl("worker", "--tool", f"upper-{suffix}", "--detach", *registry)
    assert started.returncode == 0, started.stderr
    done = run(toolctl, project, "remote-upper", "--arg", "text=shout")
    assert (done.returncode, done.stdout) == (0, "SHOUT\n")
    invalid = run(toolctl, project, "remote-upper", "--args", '{"text": 3}')
    assert invalid.returncode == 1
    assert "tool-service-error: tool 'upper-" in invalid.stderr
    assert "argument 'text' must be string" in invalid.stderr
    assert toolctl("worker", "--tool", f"upper-{suffix}", "--stop").returncode == 0
    # both sides recorded each call, the worker's in the trace of the caller's
    deadline = time.monotonic() + 30  # the stopped worker writes its history as it exits
    while time.monotonic() < deadline:
        history = json.loads(toolctl("history", "--json").stdout)["calls"]
        if len(history) == 4:
            break
        time.sleep(0.1)
    callers = sorted((c["caller"], c["tool"], c["outcome"]) for c in history)
    assert callers == [
        ("cli", "remote-upper", "failed"),
        ("cli", "remote-upper", "ok"),
        ("worker", f"upper-{suffix}", "invalid"),
        ("worker", f"upper-{suffix}", "ok"),
    ]
    by_trace = {(c["caller"], c["outcome"]): c["trace_id"] for c in history}
    assert by_trace[("cli", "ok")] == by_trace[("worker", "ok")]
    assert by_trace[("cli", "failed")] == by_trace[("worker", "invalid")]
    unserved = run(toolctl, project, "remote-upper", "--arg", "text=x", "--timeout", "1")
    assert unserved.returncode == 124  # no handler to name: `worker upper-on-pulsar` fails
    assert unserved.stderr.rstrip().endswith("start the worker that serves it")


def test_the_sample_joke_service(toolctl: Toolctl, pulsar_url: str, tmp_path: Path) -> None:
    registry = ("--registry", str(ROOT / "registry"), "--pulsar-url", pulsar_url)
    worker = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "worker", "joke-service", *registry],
        cwd=tmp_path,  # not the project: the handler is found next to the registry
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert worker.stderr is not None
        assert "serving plugins.joke.service:invoke" in worker.stderr.readline()
        done = toolctl("run", "tell-joke", "--arg", "topic=programming", "--user", "ann", *registry)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("Hey ann! Here's a pun for you:")
        assert "UDP" in done.stdout
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)


@pytest.mark.embedded_only
def test_a_second_worker_process_on_the_embedded_broker_is_refused_clearly(
    toolctl: Toolctl, project: Project, workers: StartWorker
) -> None:
    workers("hello")
    second = toolctl("worker", "hello", "--registry", str(project.registry))
    assert second.returncode == 5
    assert "pulsar-lite allows one worker process per service" in second.stderr
    assert "--concurrency" in second.stderr
    assert "Traceback" not in second.stderr


@pytest.mark.embedded_only
@pytest.mark.parametrize(
    ("signum", "code", "word"),
    [(signal.SIGTERM, 143, "terminated"), (signal.SIGHUP, 129, "hung up")],
)
def test_a_second_worker_stopped_while_it_waits_for_its_subscription_is_told_so(
    project: Project, workers: StartWorker, signum: int, code: int, word: str
) -> None:
    """Stopped while pulsar-lite keeps it waiting (the service's subscription is held):
    told as the signal that stopped it, not "interrupted" (130)."""
    workers("hello")
    second = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "worker", "hello", "--registry", str(project.registry)],
        cwd=project.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(3)  # (it waits up to 15 s; a signal before that is told the same)
        second.send_signal(signum)
        _, err = second.communicate(timeout=30)
    finally:
        second.kill()
    assert (second.returncode, err) == (code, f"toolctl: error: {word}\n")


def test_ctrl_c_while_waiting_is_130(
    project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    workers("sleepy")
    call, marker = _call_in_background(project, tmp_path, seconds=30, timeout=60)
    try:
        wait_for(marker)
        call.send_signal(signal.SIGINT)
        out, err = call.communicate(timeout=30)
    finally:
        call.kill()
    assert (call.returncode, out) == (130, "")
    assert "interrupted while waiting for an answer on" in err
