"""Launching: the ready file as data (both sides), and the one probe's contract."""

from __future__ import annotations

import http.server
import json
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolctl.errors import NotFound, TransportUnavailable
from toolctl.processes import (
    Health,
    ProcessTable,
    ReadyFile,
    ReportedFailure,
    StartFailed,
    launch,
    probe,
    report_failure,
    report_ready,
    stop,
)
from toolctl.processes.ready import read_report
from toolctl.settings import Settings


def child(code: str) -> list[str]:
    """A Python child that gets the ready file's path as its first argument.

    ``report(data)`` writes it whole, as the protocol asks (temporary file, then rename).
    """
    report = "def report(data):\n    open(path + '.t', 'w').write(json.dumps(data))\n"
    report += "    os.replace(path + '.t', path)\n"
    return [
        sys.executable,
        "-c",
        "import json, os, sys, time\npath = sys.argv[1]\n" + report + code,
    ]


def test_a_ready_report_launches_and_a_second_launch_reuses(settings: Settings) -> None:
    ready = ProcessTable(settings).ready_path("napper")
    code = "report({'ok': True}); time.sleep(60)"
    record, started = launch(
        settings, "napper", "worker", [*child(code), str(ready)], ReadyFile(ready)
    )
    assert started and ProcessTable(settings).get("napper") == record
    # yours alone: a service's stderr may print the secrets its ${env:} gave it
    assert os.stat(record.log).st_mode & 0o777 == 0o600
    again, started = launch(settings, "napper", "worker", ["false"], ReadyFile(ready))
    assert (again, started) == (record, False)
    assert stop(settings, "napper", grace=1).stopped


def test_a_reported_failure_is_raised_with_its_exit_code(settings: Settings) -> None:
    ready = ProcessTable(settings).ready_path("sad")
    report = {"ok": False, "error": "no such queue", "hint": "create it", "exit_code": 4}
    code = f"report({report!r}); sys.exit(4)"
    with pytest.raises(ReportedFailure) as failure:
        launch(settings, "sad", "worker", [*child(code), str(ready)], ReadyFile(ready))
    assert (failure.value.message, failure.value.hint, failure.value.exit_code) == (
        "no such queue",
        "create it",
        4,
    )
    assert ProcessTable(settings).names() == []


def test_an_exit_without_a_report_is_start_failed_with_the_log(settings: Settings) -> None:
    ready = ProcessTable(settings).ready_path("crash")
    code = "print('broken config', flush=True); sys.exit(3)"
    with pytest.raises(StartFailed) as failure:
        launch(settings, "crash", "worker", [*child(code), str(ready)], ReadyFile(ready))
    assert failure.value.status == 3
    assert "| broken config" in failure.value.details
    assert "exited with status 3 before it was ready" in failure.value.message


def test_a_missing_executable_is_exit_5(settings: Settings, tmp_path: Path) -> None:
    with pytest.raises(TransportUnavailable, match="cannot start '/nonexistent/x'"):
        launch(settings, "x", "service", ["/nonexistent/x"], ReadyFile(tmp_path / "r"))


def test_child_side_reports_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "ready"
    assert read_report(path) is False
    report_ready(path)
    assert read_report(path) is True
    report_failure(path, NotFound("service", "nope", ["no-pe"]))
    failure = read_report(path)
    assert isinstance(failure, ReportedFailure)
    assert (failure.exit_code, str(failure)) == (
        4,
        "service 'nope' not found; did you mean: no-pe?",
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[]",
        "null",
        '{"ok": false}',
        '{"ok": false, "error": 1, "exit_code": 999}',
        '{"ok": "yes"}',
        "\x00\xff",
        '{"ok": false, "error": "x", "exit_code": "2", "hint": 3}',
    ],
)
def test_a_malformed_ready_file_is_a_failure_never_a_crash(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ready"
    path.write_text(text)
    failure = read_report(path)
    assert isinstance(failure, ReportedFailure)
    assert 0 < failure.exit_code < 256


@pytest.fixture
def health_server() -> Iterator[tuple[int, threading.Event]]:
    """An HTTP server: /ok answers 200, /bad 500, /slow nothing until released."""
    release = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/slow":
                release.wait(10)
            self.send_response(200 if self.path in ("/ok", "/slow") else 500)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], release
    release.set()
    server.shutdown()
    server.server_close()


def test_probe_has_one_contract_for_http_and_tcp(
    health_server: tuple[int, threading.Event],
) -> None:
    port, release = health_server
    assert probe(f"http://127.0.0.1:{port}/ok", 2) is Health.UP
    assert probe(f"http://127.0.0.1:{port}/bad", 2) is Health.DOWN
    assert probe(f"http://127.0.0.1:{port}/slow", 0.2) is Health.BUSY
    release.set()
    assert probe(f"tcp://127.0.0.1:{port}", 2) is Health.UP
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed = unused.getsockname()[1]
    assert probe(f"http://127.0.0.1:{closed}/", 2) is Health.DOWN
    assert probe(f"tcp://127.0.0.1:{closed}", 2) is Health.DOWN


@pytest.mark.parametrize("url", ["ftp://x:1/", "tcp://127.0.0.1", "pulsar://h:1", "http://h:x/"])
def test_probe_refuses_what_it_cannot_probe(url: str) -> None:
    with pytest.raises(ValueError):
        probe(url, 1)


def test_the_report_file_is_json(tmp_path: Path) -> None:
    path = tmp_path / "ready"
    report_ready(path)
    assert json.loads(path.read_text()) == {"ok": True}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_a_failed_start_leaves_nothing_it_started_running(settings: Settings) -> None:
    """A start that fails (it exits before it is ready) takes with it what it started in a
    session of its own, which no group signal reaches once the leader is gone: `service up`
    of a broken service leaves nothing behind."""
    import random
    import subprocess
    import time

    mark = f"9123.{random.randrange(10**6, 10**7)}"  # a sleep no other process runs
    ready = ProcessTable(settings).ready_path("leaky")
    argv = ["sh", "-c", f"(setsid sleep {mark} &); sleep 0.2; exit 1"]
    with pytest.raises(StartFailed):
        launch(settings, "leaky", "service", argv, ReadyFile(ready), timeout=10)
    time.sleep(0.2)
    found = subprocess.run(["pgrep", "-f", f"sleep {mark}"], capture_output=True, text=True)
    pids = found.stdout.split()
    for pid in pids:  # never left to the machine, even when the test fails
        subprocess.run(["kill", "-9", pid], check=False)
    assert pids == [], "a process the failed start began outlived it"
