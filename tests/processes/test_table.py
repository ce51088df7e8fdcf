"""The process table's files: each record's log has a name a person can read, no two
records share one, and a record written by an earlier build still leads to its log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import Toolctl
from toolctl.processes import ProcessRecord, ProcessTable, stop
from toolctl.processes.launching import launch_detached
from toolctl.settings import Settings

READY = "import sys, time; from pathlib import Path; from toolctl.processes import report_ready"
SERVES = f"{READY}; report_ready(Path(sys.argv[-1])); time.sleep(300)"
"""A background process that reports ready (its last argument is the ready file) and waits."""


def test_a_log_has_a_readable_name_no_other_record_shares(settings: Settings) -> None:
    table = ProcessTable(settings)
    # workers' names, and those of services and servers a '-' or '.' would confuse them with
    names = ["worker:orders", "worker:tool:echo", "worker-orders", "worker.orders",
             "worker:tool-echo", "worker-tool-echo", "broker", "orders"]  # fmt: skip
    logs = [table.log_path(name) for name in names]
    assert [log.name for log in logs[:2]] == ["worker@orders.log", "worker@tool@echo.log"]
    assert len(set(logs)) == len(names)
    assert {log.parent for log in logs} == {settings.state_dir / "logs"}


def test_a_detached_worker_logs_to_worker_at_name(toolctl: Toolctl, settings: Settings) -> None:
    record, started = launch_detached(
        settings, "worker:orders", "worker", [sys.executable, "-c", SERVES], timeout=30
    )
    try:
        assert started
        assert record.log == str(settings.state_dir / "logs/worker@orders.log")
        assert Path(record.log).read_text().count("starting worker worker:orders") == 1
        status = toolctl("service", "status", "--json")
        (shown,) = json.loads(status.stdout)
        assert shown["log"] == record.log
    finally:
        assert stop(settings, "worker:orders", grace=2.0).stopped


def test_a_record_an_earlier_build_wrote_still_finds_its_log(
    toolctl: Toolctl, settings: Settings
) -> None:
    """Before, a worker's log was ``worker%3Aorders.log``: its running worker's record says
    so, and status shows that log; --stop stops the worker."""
    old = settings.state_dir / "logs/worker%3Aorders.log"
    old.parent.mkdir(parents=True)
    old.write_text("served\n")
    sleeper = subprocess.Popen(["sleep", "120"], start_new_session=True)
    table = ProcessTable(settings)
    table.put(ProcessRecord.of("worker:orders", "worker", sleeper.pid, ["sleep"], str(old)))
    status = toolctl("service", "status", "--json")
    (shown,) = json.loads(status.stdout)
    assert (shown["name"], shown["log"]) == ("worker:orders", str(old))
    stopped = toolctl("worker", "orders", "--stop")
    assert stopped.returncode == 0, stopped.stderr
    assert sleeper.wait(timeout=10) != 0
    assert old.read_text() == "served\n"


def test_a_record_whose_pid_is_no_process_id_is_no_record(
    settings: Settings, toolctl: Toolctl
) -> None:
    """`"pid": "x"` or 2**80 in a record (an edit, a damaged file) made `service status`,
    `service down` (the way to clear it) and `run` exit 70: it is read as no record."""
    table = ProcessTable(settings)
    record = ProcessRecord.of("svc", "service", 1, ["x"], "svc.log")
    for pid in ("x", 2**80, -5, True):
        table.put(record)
        path = table.directory / "svc.json"
        path.write_text(json.dumps({**record.to_json(), "pid": pid}))
        assert table.read("svc") is None and table.get("svc") is None and table.all() == []
        status = toolctl("service", "status")
        assert status.returncode == 0, status.stderr
