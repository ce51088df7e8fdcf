"""scripts/pulsar-standalone.sh without Java: bad input, nothing running, a pid it did not start.

Starting and stopping a real standalone is covered by CI (.ci/run) and by the
multi-homed broker of test_cluster.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "pulsar-standalone.sh"
HELPER = ROOT / "scripts" / "pulsar-standalone" / "standalone.py"


def script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def test_bad_commands_and_options_are_usage_errors(tmp_path: Path) -> None:
    bad_ports = (["--port", "x", "start"], ["--port", "0", "start"], ["--port", "70000", "start"])
    for args in (["bogus"], [], ["start", "extra"], ["--dir"], ["--nope", "status"], *bad_ports):
        done = script(*args)
        assert done.returncode == 2, args
        assert "usage: pulsar-standalone.sh" in done.stderr
        assert "Traceback" not in done.stderr


def test_nothing_running(tmp_path: Path) -> None:
    where = ("--dir", str(tmp_path / "instance"))
    status = script(*where, "status")
    assert (status.returncode, status.stdout) == (3, "pulsar-standalone: not running\n")
    for command in ("url", "admin-url"):
        done = script(*where, command)
        assert (done.returncode, done.stdout) == (3, "")
        assert "not running" in done.stderr
    stopped = script(*where, "stop")
    assert stopped.returncode == 0
    assert "not running" in stopped.stderr


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """A live process this script did not start."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield child
    child.kill()
    child.wait()


def test_a_recorded_pid_that_is_not_its_broker_is_never_signalled(
    tmp_path: Path, stranger: subprocess.Popen[bytes]
) -> None:
    instance = tmp_path / "instance"
    instance.mkdir()
    stat = Path(f"/proc/{stranger.pid}/stat").read_text()
    record = {
        "pid": stranger.pid,
        "start_time": stat.rsplit(")", 1)[1].split()[19],  # even the right start time
        "url": "pulsar://127.0.0.1:1",
        "admin_url": "http://127.0.0.1:1",
    }
    (instance / "standalone.json").write_text(json.dumps(record))
    where = ("--dir", str(instance))
    assert script(*where, "status").returncode == 3
    assert script(*where, "url").returncode == 3
    stopped = script(*where, "stop")
    assert stopped.returncode == 0
    assert "stale record removed" in stopped.stderr
    assert stranger.poll() is None  # still alive
    assert not (instance / "standalone.json").exists()


def test_without_maven_the_fetch_says_what_is_missing(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = subprocess.run(
        [sys.executable, str(HELPER), "--dir", str(tmp_path / "instance"), "start"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(empty), "TOOLCTL_PULSAR_CACHE": str(tmp_path / "c")},
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr == (
        "pulsar-standalone: Maven (mvn) is needed to fetch Apache Pulsar's jars; install it\n"
    )
    assert done.stdout == ""
