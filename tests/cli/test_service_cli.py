"""`toolctl service up|down|status` through the real CLI, with the real text service."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, Toolctl, write_files
from toolctl.processes import ProcessRecord, ProcessTable, stop
from toolctl.processes.table import is_alive
from toolctl.settings import Settings

SERVER = json.dumps(str(ROOT / "plugins" / "textapi" / "server.py"))
PYTHON = json.dumps(sys.executable)


@pytest.fixture
def table(isolated_env: dict[str, str]) -> Iterator[ProcessTable]:
    """This test's process table; everything left in it is stopped afterwards."""
    settings = Settings.load(environ=isolated_env)
    processes = ProcessTable(settings)
    yield processes
    for name in processes.names():
        stop(settings, name, grace=2.0)


@pytest.fixture
def reg(tmp_path: Path) -> str:
    return str(
        write_files(
            tmp_path / "reg",
            {
                "services.toml": f"""
                    [[service]]
                    name = "text-api"
                    [service.http]
                    start = [{PYTHON}, {SERVER}, "--port", "{{port}}"]

                    [[service]]
                    name = "fixed"
                    [service.http]
                    url = "http://127.0.0.1:9"

                    [[service]]
                    name = "queue"
                    [service.pulsar]
                    request_queue = "non-persistent://tg/request/q"
                    response_queue = "non-persistent://tg/response/q"
                """
            },
        )
    )


def test_up_starts_once_and_prints_the_url(toolctl: Toolctl, reg: str, table: ProcessTable) -> None:
    first = toolctl("service", "up", "text-api", "--registry", reg)
    assert first.returncode == 0, first.stderr
    record = table.get("text-api")
    assert record is not None and first.stdout == f"{record.url}\n"
    assert "service 'text-api' started at" in first.stderr
    again = toolctl("service", "up", "text-api", "--registry", reg, "--json")
    assert again.returncode == 0, again.stderr
    assert "already running" in again.stderr
    assert json.loads(again.stdout)["pid"] == record.pid


def test_up_refuses_unknown_and_unmanaged_services(toolctl: Toolctl, reg: str) -> None:
    unknown = toolctl("service", "up", "text_api", "--registry", reg)
    assert unknown.returncode == 4
    assert "service 'text_api' not found; did you mean: text-api?" in unknown.stderr
    fixed = toolctl("service", "up", "fixed", "--registry", reg)
    assert fixed.returncode == 2
    assert "has a fixed url (http://127.0.0.1:9); it is not managed" in fixed.stderr
    pulsar = toolctl("service", "up", "queue", "--registry", reg)
    assert pulsar.returncode == 2
    assert "'toolctl worker queue'" in pulsar.stderr


def test_status_lists_every_background_process(
    toolctl: Toolctl, reg: str, table: ProcessTable
) -> None:
    empty = toolctl("service", "status", "--registry", reg)
    assert (empty.returncode, empty.stdout, empty.stderr) == (
        0,
        "",
        "toolctl: nothing toolctl started runs in the background\n",
    )
    assert toolctl("service", "up", "text-api", "--registry", reg).returncode == 0
    worker = _record_worker(table)
    done = toolctl("service", "status", "--registry", reg)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    assert [row[:3] for row in rows] == [
        ["service", "text-api", str(table.get("text-api").pid)],  # type: ignore[union-attr]
        ["worker", "queue-worker", str(worker.pid)],
    ]
    one = toolctl("service", "status", "text-api", "--json", "--registry", reg)
    [listed] = json.loads(one.stdout)
    assert (listed["name"], listed["kind"], listed["uptime_s"] >= 0) == (
        "text-api",
        "service",
        True,
    )


def test_status_of_one_that_is_not_running_is_exit_4(toolctl: Toolctl, reg: str) -> None:
    stopped = toolctl("service", "status", "text-api", "--registry", reg)
    assert stopped.returncode == 4
    assert "start it with 'toolctl service up text-api'" in stopped.stderr
    unknown = toolctl("service", "status", "nope", "--registry", reg)
    assert unknown.returncode == 4
    assert "service 'nope' not found" in unknown.stderr


def test_down_stops_and_is_idempotent(toolctl: Toolctl, reg: str, table: ProcessTable) -> None:
    assert toolctl("service", "up", "text-api", "--registry", reg).returncode == 0
    record = table.get("text-api")
    assert record is not None
    done = toolctl("service", "down", "text-api", "--registry", reg)
    assert done.returncode == 0, done.stderr
    assert not is_alive(record.pid)
    again = toolctl("service", "down", "text-api", "--registry", reg)
    assert (again.returncode, again.stderr) == (0, "toolctl: 'text-api' was not running\n")
    unknown = toolctl("service", "down", "nope", "--registry", reg)
    assert unknown.returncode == 4


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("broker", "toolctl broker start --detach"),
        ("serve", "toolctl serve --detach"),
        ("worker:joke-service", "toolctl worker joke-service --detach"),
        ("worker:tool:word-count", "toolctl worker --tool word-count --detach"),
    ],
)
def test_toolctls_own_processes_not_running(
    toolctl: Toolctl, reg: str, name: str, start: str
) -> None:
    """The names `status` lists for the broker, a server and workers are known while none
    runs: stopping one succeeds ("stopping what is not running succeeds"), asking for its
    status is exit 4 saying how to start it, never "service not found"."""
    down = toolctl("service", "down", name, "--registry", reg)
    assert (down.returncode, down.stderr) == (0, f"toolctl: '{name}' was not running\n")
    status = toolctl("service", "status", name, "--registry", reg)
    assert status.returncode == 4
    assert status.stderr == (
        f"toolctl: error: running process '{name}' not found; start it with '{start}'\n"
    )


def test_a_worker_name_without_its_service_is_no_worker(toolctl: Toolctl, reg: str) -> None:
    for name in ("worker:", "worker:tool:"):
        status = toolctl("service", "status", name, "--registry", reg)
        assert status.returncode == 4 and "start it with" not in status.stderr


def test_down_all_stops_services_and_workers(
    toolctl: Toolctl, reg: str, table: ProcessTable
) -> None:
    assert toolctl("service", "up", "text-api", "--registry", reg).returncode == 0
    service = table.get("text-api")
    worker = _record_worker(table)
    done = toolctl("service", "down", "--all", "--registry", reg)
    assert done.returncode == 0, done.stderr
    assert "stopped worker 'queue-worker'" in done.stderr
    assert "stopped service 'text-api'" in done.stderr
    worker.wait(timeout=10)
    assert service is not None and not is_alive(service.pid)
    assert table.all() == []
    nothing = toolctl("service", "down", "--all", "--registry", reg)
    assert (nothing.returncode, nothing.stderr) == (0, "toolctl: nothing was running\n")


def test_down_needs_a_name_or_all(toolctl: Toolctl, reg: str) -> None:
    assert toolctl("service", "down", "--registry", reg).returncode == 2
    assert toolctl("service", "down", "text-api", "--all", "--registry", reg).returncode == 2


def _record_worker(table: ProcessTable) -> subprocess.Popen[bytes]:
    """A stand-in for a detached worker, recorded the way `worker --detach` records one."""
    log = table.log_path("queue-worker")
    child = sleeper()
    table.put(ProcessRecord.of("queue-worker", "worker", child.pid, ["worker"], str(log)))
    return child


def sleeper() -> subprocess.Popen[bytes]:
    """A process of our own that sleeps for a minute, in its own session."""
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )


def test_another_projects_service_of_the_same_name_is_neither_used_nor_stopped(
    toolctl: Toolctl, reg: str, tmp_path: Path, table: ProcessTable
) -> None:
    """Two projects may both define a managed service 'text-api': processes are kept by
    name, so the second project's `service up` (or a call that needs it) would answer
    with the first's server, or stop it. It is refused, naming whose it is; the first
    project's server keeps running."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "services.toml").write_text((Path(reg) / "services.toml").read_text())
    first = toolctl("service", "up", "text-api", "-r", reg)
    assert first.returncode == 0, first.stderr
    running = table.get("text-api")
    assert running is not None and running.origin == reg
    second = toolctl("service", "up", "text-api", "-r", str(other))
    assert (second.returncode, second.stdout) == (2, "")
    assert second.stderr == (
        "toolctl: error: service 'text-api' already runs for another registry (reg, pid "
        f"{running.pid}); stop it first (toolctl service down text-api)\n"
    )
    assert table.get("text-api") == running  # not stopped, not replaced
    again = toolctl("service", "up", "text-api", "-r", reg)
    assert (again.returncode, again.stdout) == (0, first.stdout)


def test_a_managed_service_gets_only_the_environment_it_needs(
    toolctl: Toolctl, reg: str, table: ProcessTable
) -> None:
    """As a local tool: PATH, HOME and such, its tag, what its pass_env names, never the
    caller's other variables."""
    passing = Path(reg) / "services.toml"
    text = passing.read_text().replace(
        "[service.http]\n", '[service.http]\npass_env = ["MY_*"]\n', 1
    )
    passing.write_text(text)
    env = {"SERVE_TOKEN": "0123456789abcdef", "LC_TIME": "C", "MY_SETTING": "on"}
    done = toolctl("service", "up", "text-api", "--registry", reg, env=env)
    assert done.returncode == 0, done.stderr
    record = table.get("text-api")
    assert record is not None
    raw = Path(f"/proc/{record.pid}/environ").read_bytes().split(b"\0")
    seen = dict(item.decode().partition("=")[::2] for item in raw if item)
    assert "SERVE_TOKEN" not in seen and seen["LC_TIME"] == "C" and "PATH" in seen
    assert seen["MY_SETTING"] == "on"
    assert seen["TOOLCTL_PROCESS_TAG"] == record.tag and seen["PYTHONUNBUFFERED"] == "1"


SERVES = (
    "import sys, http.server; http.server.HTTPServer(('127.0.0.1', int(sys.argv[-1])), "
    "http.server.SimpleHTTPRequestHandler).serve_forever()"
)


def test_status_shows_a_services_command_as_show_does(
    toolctl: Toolctl, tmp_path: Path, table: ProcessTable
) -> None:
    """A secret written in a service's `start` is `***` in `service status --json`'s argv,
    as `show` prints the descriptor."""
    start = json.dumps([sys.executable, "-c", SERVES, "--api-key", "abc123def456", "{port}"])
    write_files(
        tmp_path / "reg2",
        {"s.toml": f'[[service]]\nname = "leaky"\n[service.http]\nstart = {start}\nhealth = "/"\n'},
    )
    up = toolctl("service", "up", "leaky", "--registry", str(tmp_path / "reg2"))
    assert up.returncode == 0, up.stderr
    status = toolctl("service", "status", "--json")
    assert status.returncode == 0, status.stderr
    (shown,) = [entry for entry in json.loads(status.stdout) if entry["name"] == "leaky"]
    assert shown["argv"][-3:] == ["--api-key", "***", shown["argv"][-1]]
    assert "abc123def456" not in status.stdout
