"""`toolctl broker start|status|stop`: the embedded pulsar-lite broker, through the real CLI."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Toolctl
from tests.pulsar.pulsar_support import Project, free_port
from toolctl.processes.table import is_alive


def test_start_status_stop(toolctl: Toolctl, tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "broker-data"
    started = toolctl("broker", "start", "--detach", "--port", str(port), "--data", str(data))
    assert started.returncode == 0, started.stderr
    assert started.stdout == f"pulsar://127.0.0.1:{port}\n"
    assert "broker started" in started.stderr
    assert (data / "pulsar-lite.toml").read_text() == "[metrics]\nenabled = false\n"

    status = toolctl("broker", "status", "--json")
    assert status.returncode == 0
    shown = json.loads(status.stdout)
    assert (shown["running"], shown["answering"], shown["port"]) == (True, True, port)
    assert shown["data"] == str(data)
    assert "running" in toolctl("broker", "status").stdout

    again = toolctl("broker", "start", "--detach", "--port", str(port))
    assert (again.returncode, again.stdout) == (0, f"pulsar://127.0.0.1:{port}\n")
    assert "already running" in again.stderr
    as_json = toolctl("broker", "start", "--detach", "--port", str(port), "--json")
    running = json.loads(as_json.stdout)
    assert as_json.stderr == ""  # the note for a person ("already running") left out
    assert (running["url"], running["pid"], running["already_running"]) == (
        f"pulsar://127.0.0.1:{port}",
        shown["pid"],
        True,
    )
    for other in (["--port", str(free_port())], ["--data", str(tmp_path / "other")]):
        # not the broker asked for: "already running" would send a script to the wrong one
        refused = toolctl("broker", "start", "--detach", *other)
        assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr
        assert f"the broker already runs at pulsar://127.0.0.1:{port}" in refused.stderr
    (tmp_path / "link").symlink_to(data)  # the same directory by another path: the same
    linked = toolctl("broker", "start", "--detach", "--data", str(tmp_path / "link"))
    assert (linked.returncode, linked.stdout) == (0, f"pulsar://127.0.0.1:{port}\n")

    listed = json.loads(toolctl("service", "status", "--json").stdout)
    assert [(r["kind"], r["name"]) for r in listed] == [("broker", "broker")]

    stopped = toolctl("broker", "stop")
    assert stopped.returncode == 0
    assert f"(pid {shown['pid']})" in stopped.stderr
    assert not is_alive(int(shown["pid"]))
    gone = toolctl("broker", "status")
    assert (gone.returncode, gone.stdout) == (5, "broker: not running\n")
    assert "not running" in toolctl("broker", "stop").stderr
    assert json.loads(toolctl("broker", "stop", "--json").stdout)["state"] == "not running"


def test_a_port_in_use_is_exit_5_suggesting_another(toolctl: Toolctl) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = toolctl("broker", "start", "--detach", "--port", str(port))
    assert done.returncode == 5
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr
    assert "--port" in done.stderr
    assert toolctl("broker", "status").returncode == 5


def test_the_foreground_broker_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "toolctl", "broker", "start", "--port", str(port)]
    command += ["--data", str(tmp_path / "data")]
    broker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert broker.stdout is not None
        assert broker.stdout.readline() == f"pulsar://127.0.0.1:{port}\n"
        broker.send_signal(signal.SIGTERM)
        _, err = broker.communicate(timeout=30)
    finally:
        broker.kill()
    assert broker.returncode == 0, err
    assert "broker stopped" in err
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.embedded_only  # its own pulsar-lite broker, stopped and started again
def test_a_worker_reconnects_after_the_broker_restarts(
    toolctl: Toolctl, project: Project, tmp_path: Path
) -> None:
    port = free_port()
    url = f"pulsar://127.0.0.1:{port}"
    data = ("--port", str(port), "--data", str(tmp_path / "data"))
    assert toolctl("broker", "start", "--detach", *data).returncode == 0
    registry = ("--registry", str(project.registry))
    worker = toolctl("worker", "hello", "--detach", "--pulsar-url", url, *registry)
    assert worker.returncode == 0, worker.stderr
    call = ("run", "hello", "--user", "u", "--pulsar-url", url, "--timeout", "2", *registry)
    assert toolctl(*call).stdout == "hello world from u\n"

    assert toolctl("broker", "stop").returncode == 0
    assert toolctl(*call).returncode == 5  # nobody to talk to
    assert toolctl("broker", "start", "--detach", *data).returncode == 0
    deadline = time.monotonic() + 60
    while (done := toolctl(*call)).returncode != 0:  # the client backs off, then resubscribes
        assert done.returncode == 124, done.stderr
        assert time.monotonic() < deadline, "the worker never came back"
    assert done.stdout == "hello world from u\n"


def test_the_foreground_broker_ends_quietly_when_stopped_from_elsewhere(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    port = free_port()
    command = [sys.executable, "-m", "toolctl", "broker", "start", "--port", str(port)]
    command += ["--data", str(tmp_path / "data")]
    broker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert broker.stdout is not None
        assert broker.stdout.readline() == f"pulsar://127.0.0.1:{port}\n"
        assert toolctl("broker", "stop").returncode == 0
        _, err = broker.communicate(timeout=30)
    finally:
        broker.kill()
    assert broker.returncode == 0, err
    # Ctrl-C stops it too, and says so with 130
    broker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert broker.stdout is not None
        broker.stdout.readline()
        broker.send_signal(signal.SIGINT)
        _, err = broker.communicate(timeout=30)
    finally:
        broker.kill()
    assert broker.returncode == 130, err
    assert toolctl("broker", "status").returncode == 5


@pytest.mark.parametrize("data", ["file", "file/under"])
def test_a_data_directory_a_file_stands_for_is_refused_in_a_line(
    toolctl: Toolctl, tmp_path: Path, data: str
) -> None:
    """`--data` naming a file (or a path under one) was exit 70 and a traceback's report."""
    (tmp_path / "file").write_text("mine\n")
    done = toolctl("broker", "start", "--data", str(tmp_path / data), "--detach")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(
        "as the broker's data directory: a file is in its place; pass another with --data DIR\n"
    ), done.stderr
    assert (tmp_path / "file").read_text() == "mine\n"


def test_a_data_directory_that_is_not_utf8_is_refused_before_anything_starts(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """pulsar-lite reads its config as UTF-8: such a --data was told as 'in use by another
    broker' (exit 5) though none ran. Refused, exit 2, nothing made."""
    odd = "b" + b"\xff".decode("utf-8", "surrogateescape")
    done = toolctl("broker", "start", "--data", str(tmp_path / odd), "--detach")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "toolctl: error: the broker data directory b\\xff is not a UTF-8 path; pass another "
        "with --data DIR\n"
    )
    assert not (tmp_path / odd).exists()
