"""Stopping background processes: never a stranger on a stale pid, never a descendant left.

Real processes throughout: an unrelated ``sleep`` stands behind a stale record, and a
managed service starts grandchildren (one in its group, one in a session of its own).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files
from toolctl.processes import ProcessRecord, ProcessTable, State, stop
from toolctl.processes.table import identify, is_alive
from toolctl.settings import Settings

SERVICE = """
import http.server, pathlib, signal, subprocess, sys

port, pids = int(sys.argv[1]), pathlib.Path(sys.argv[2])
nap = [sys.executable, "-c", "import signal, time; {ignore}time.sleep(300)"]
kids = [subprocess.Popen(nap), subprocess.Popen(nap, start_new_session=True)]
pids.write_text(" ".join(str(kid.pid) for kid in kids))

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process that no record should ever be allowed to kill."""
    child = subprocess.Popen(["sleep", "120"])
    yield child
    child.kill()
    child.wait(timeout=10)


def stale_record(name: str, kind: str, pid: int, **identity: object) -> ProcessRecord:
    """A record naming ``pid`` as if an older process had had it (``identity`` overrides)."""
    start_time, boot_id = identify(pid) or (0, "")
    fields = {"start_time": start_time - 1, "boot_id": boot_id, **identity}
    return ProcessRecord(name, kind, pid, ["gone"], "gone.log", **fields)  # type: ignore[arg-type]


def test_service_down_spares_the_process_that_reused_the_pid(
    toolctl: Toolctl, settings: Settings, stranger: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    table = ProcessTable(settings)
    table.put(stale_record("api", "service", stranger.pid))
    reg = write_files(
        tmp_path / "reg", {"s.toml": '[[service]]\nname = "api"\n[service.http]\nstart = ["x"]\n'}
    )
    done = toolctl("service", "down", "api", "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    assert (
        f"dropped the stale record of service 'api': pid {stranger.pid} now belongs to "
        "another process; nothing was stopped" in done.stderr
    )
    assert stranger.poll() is None
    assert table.read("api") is None


@pytest.mark.parametrize(
    "identity",
    [{"boot_id": "another-boot"}, {"start_time": None, "boot_id": None}],
    ids=["another-boot", "no-identity"],
)
def test_a_record_that_cannot_prove_it_is_ours_kills_nothing(
    settings: Settings, stranger: subprocess.Popen[bytes], identity: dict[str, object]
) -> None:
    ProcessTable(settings).put(stale_record("w", "worker", stranger.pid, **identity))
    assert ProcessTable(settings).get("w") is None  # nor is it listed as running
    stopped = stop(settings, "w", grace=0.5)
    assert stopped.state is State.STALE and stopped.stale and not stopped.stopped
    assert stranger.poll() is None


def test_every_stop_command_checks_the_start_time(
    toolctl: Toolctl, settings: Settings, stranger: subprocess.Popen[bytes]
) -> None:
    table = ProcessTable(settings)
    table.put(stale_record("broker", "broker", stranger.pid, port=1, url="pulsar://127.0.0.1:1"))
    broker = toolctl("broker", "stop")
    assert (broker.returncode, "stale record of broker 'broker'" in broker.stderr) == (0, True)
    table.put(stale_record("worker:hello", "worker", stranger.pid))
    worker = toolctl("worker", "hello", "--stop")
    assert worker.returncode == 0, worker.stderr
    assert "stale record of worker 'worker:hello'" in worker.stderr
    table.put(stale_record("worker:other", "worker", stranger.pid))
    every = toolctl("service", "down", "--all")
    assert every.returncode == 0, every.stderr
    assert "stale record of worker 'worker:other'" in every.stderr
    assert "nothing was running" not in every.stderr
    assert stranger.poll() is None
    assert table.names() == []


def test_a_stopped_service_leaves_no_descendant(
    toolctl: Toolctl, settings: Settings, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    reg = managed(tmp_path, pids, ignore_sigterm=False)
    up = toolctl("service", "up", "family", "--registry", str(reg))
    assert up.returncode == 0, up.stderr
    record = ProcessTable(settings).get("family")
    assert record is not None
    kids = [int(pid) for pid in pids.read_text().split()]
    assert all(is_alive(pid) for pid in kids)
    down = toolctl("service", "down", "family", "--registry", str(reg))
    assert down.returncode == 0, down.stderr
    assert f"stopped service 'family' (pid {record.pid})" in down.stderr
    assert [pid for pid in [record.pid, *kids] if is_alive(pid)] == []


def test_descendants_that_ignore_sigterm_are_killed(
    toolctl: Toolctl, settings: Settings, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    reg = managed(tmp_path, pids, ignore_sigterm=True)
    assert toolctl("service", "up", "family", "--registry", str(reg)).returncode == 0
    kids = [int(pid) for pid in pids.read_text().split()]
    stopped = stop(settings, "family", grace=0.3)
    assert stopped.stopped and stopped.survivors == []
    assert stopped.record is not None
    assert [pid for pid in [stopped.record.pid, *kids] if is_alive(pid)] == []


def test_a_corrupt_table_entry_is_no_record(settings: Settings) -> None:
    table = ProcessTable(settings)
    table.directory.mkdir(parents=True)
    for name, text in {"a": "{", "b": "[]", "c": '{"name": "c"}', "d": "\x00\xff"}.items():
        (table.directory / f"{name}.json").write_text(text)
    assert [table.read(name) for name in "abcd"] == [None] * 4
    assert table.all() == []
    assert [stop(settings, name).record for name in "abcd"] == [None] * 4


def managed(root: Path, pids: Path, *, ignore_sigterm: bool) -> Path:
    ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN); " if ignore_sigterm else ""
    script = write_files(root, {"family.py": SERVICE.replace("{ignore}", ignore)}) / "family.py"
    start = json.dumps([sys.executable, str(script), "{port}", str(pids)])
    reg = write_files(
        root / "reg",
        {"s.toml": f'[[service]]\nname = "family"\n[service.http]\nstart = {start}\n'},
    )
    return reg


FAMILY = """
import subprocess, sys, time

nap = [sys.executable, "-c", "import time; time.sleep(300)"]
kids = [subprocess.Popen(nap), subprocess.Popen(nap, start_new_session=True)]
print(kids[0].pid, kids[1].pid, flush=True)
time.sleep(300)
"""


def test_a_stop_signals_its_group_once_and_the_rest_one_by_one(tmp_path: Path) -> None:
    """killpg reaches the leader's group; only what left it (its own session) is signalled
    again by pid, so no process gets SIGTERM twice (a toolctl server takes a second one
    as "stop at once", without draining)."""
    from toolctl.processes.stopping import _outside_group, process_tree, terminate

    leader = subprocess.Popen(
        [sys.executable, "-c", FAMILY], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert leader.stdout is not None
    in_group, own_session = map(int, leader.stdout.readline().split())
    tree = process_tree(leader.pid)
    assert {leader.pid, in_group, own_session} <= set(tree)
    assert set(_outside_group(tree, leader.pid)) == {own_session}
    assert terminate(leader.pid, grace=5) == []
    leader.wait(timeout=10)


def test_down_all_stops_the_broker_last(
    toolctl: Toolctl, settings: Settings, stranger: subprocess.Popen[bytes]
) -> None:
    """Workers and servers drain through the broker: `service down --all` stops them
    before it (it went by name, and "broker" sorts first)."""
    table = ProcessTable(settings)
    table.put(stale_record("broker", "broker", stranger.pid, port=1, url="pulsar://127.0.0.1:1"))
    table.put(stale_record("serve", "serve", stranger.pid))
    table.put(stale_record("worker:a", "worker", stranger.pid))
    table.put(stale_record("api", "service", stranger.pid))
    every = toolctl("service", "down", "--all")
    assert every.returncode == 0, every.stderr
    said = [line.split("'")[1] for line in every.stderr.splitlines() if "'" in line]
    assert said == ["serve", "worker:a", "api", "broker"], every.stderr
