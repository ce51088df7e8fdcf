"""Managed services through the real CLI: the real plugins/textapi/server.py, started on demand."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT, Toolctl, write_files
from toolctl.processes import ProcessRecord, ProcessTable
from toolctl.processes.table import is_alive

PYTHON = json.dumps(sys.executable)


def managed_registry(root: Path, start: str, *, startup_timeout: float = 10) -> Path:
    """A registry whose service lives in services/api.toml and its tool in tools.toml.

    The service's cwd is relative to *its* file, which is not the tool's.
    """
    services = root / "reg" / "services"
    services.mkdir(parents=True, exist_ok=True)
    cwd = json.dumps(os.path.relpath(ROOT / "plugins" / "textapi", services))
    return write_files(
        root / "reg",
        {
            "services/api.toml": f"""
                [[service]]
                name = "api"
                [service.http]
                start = {start}
                cwd = {cwd}
                health = "/health"
                startup_timeout = {startup_timeout}
            """,
            "tools.toml": """
                [[tool]]
                name = "stats"
                service = "api"
                timeout = 10
                [tool.http]
                path = "/stats"
                [[tool.arguments]]
                name = "text"
            """,
        },
    )


TEXTAPI = f'[{PYTHON}, "server.py", "--port", "{{port}}"]'


def status(toolctl: Toolctl, reg: Path) -> list[dict[str, object]]:
    done = toolctl("service", "status", "--json", "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    listed: list[dict[str, object]] = json.loads(done.stdout)
    return listed


def test_started_on_demand_listed_and_reused(toolctl: Toolctl, tmp_path: Path) -> None:
    reg = managed_registry(tmp_path, TEXTAPI)
    first = toolctl("run", "stats", "--registry", str(reg), "--arg", "text=ab 12")
    assert (first.returncode, first.stdout) == (0, "2 letters, 2 digits, 1 spaces\n"), first.stderr
    [record] = status(toolctl, reg)
    assert (record["kind"], record["name"]) == ("service", "api")
    assert record["url"] == f"http://127.0.0.1:{record['port']}"
    assert isinstance(record["pid"], int) and is_alive(record["pid"])
    second = toolctl("run", "stats", "--registry", str(reg), "--arg", "text=x", "--json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["data"] == {"letters": 1, "digits": 0, "spaces": 0}
    assert [r["pid"] for r in status(toolctl, reg)] == [record["pid"]]


def test_dry_run_starts_nothing(toolctl: Toolctl, tmp_path: Path) -> None:
    reg = managed_registry(tmp_path, TEXTAPI)
    done = toolctl("run", "stats", "--registry", str(reg), "--arg", "text=x", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "http://127.0.0.1:{port}/stats" in done.stdout
    assert "started on a free port on first use" in done.stdout
    assert status(toolctl, reg) == []


def test_two_concurrent_runs_start_it_once(toolctl: Toolctl, tmp_path: Path) -> None:
    reg = managed_registry(tmp_path, TEXTAPI)
    argv = [sys.executable, "-m", "toolctl", "run", "stats", "--registry", str(reg)]
    runs = [
        subprocess.Popen([*argv, "--arg", f"text={word}"], stdout=subprocess.PIPE, text=True)
        for word in ("aa", "bbb")
    ]
    outputs = [run.communicate(timeout=60)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0]
    assert outputs == ["2 letters, 0 digits, 0 spaces\n", "3 letters, 0 digits, 0 spaces\n"]
    [record] = status(toolctl, reg)
    log = Path(str(record["log"])).read_text()
    assert log.count("starting service api") == 1


def test_service_down_leaves_it_dead(toolctl: Toolctl, tmp_path: Path) -> None:
    reg = managed_registry(tmp_path, TEXTAPI)
    assert toolctl("run", "stats", "--registry", str(reg), "--arg", "text=x").returncode == 0
    [record] = status(toolctl, reg)
    done = toolctl("service", "down", "api", "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    assert f"stopped service 'api' (pid {record['pid']})" in done.stderr
    assert not is_alive(int(str(record["pid"])))
    assert status(toolctl, reg) == []


def test_a_recorded_service_that_does_not_answer_is_restarted(
    toolctl: Toolctl, tmp_path: Path, stop_background: ProcessTable
) -> None:
    reg = managed_registry(tmp_path, TEXTAPI)
    hung = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    stop_background.put(
        ProcessRecord.of(
            "api", "service", hung.pid, ["hung"], "x.log", port=9, url="http://127.0.0.1:9"
        )
    )
    done = toolctl("run", "stats", "--registry", str(reg), "--arg", "text=x")
    assert done.returncode == 0, done.stderr
    hung.wait(timeout=10)  # stopped by toolctl, reaped here
    [record] = status(toolctl, reg)
    assert record["pid"] != hung.pid


def test_a_service_that_exits_at_once_is_exit_5_with_its_log(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    crash = f'[{PYTHON}, "-c", "import sys; sys.exit(\'bad config: no model file\')", "{{port}}"]'
    reg = managed_registry(tmp_path, crash)
    done = toolctl("run", "stats", "--registry", str(reg), "--arg", "text=x")
    assert done.returncode == 5
    assert "service 'api' exited with status 1 before it answered GET" in done.stderr
    assert "| bad config: no model file" in done.stderr
    assert "Traceback" not in done.stderr
    assert status(toolctl, reg) == []


def test_a_service_that_never_gets_healthy_is_exit_5_and_killed(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    code = "import os, time; print('warming up as pid', os.getpid()); time.sleep(60)"
    reg = managed_registry(tmp_path, f'[{PYTHON}, "-c", "{code}", "{{port}}"]', startup_timeout=1)
    done = toolctl("run", "stats", "--registry", str(reg), "--arg", "text=x")
    assert done.returncode == 5
    assert "did not answer GET" in done.stderr and "with 2xx within 1 s" in done.stderr
    found = re.search(r"\| warming up as pid (\d+)", done.stderr)
    assert found, done.stderr
    assert not is_alive(int(found.group(1)))
    assert status(toolctl, reg) == []


def test_a_port_taken_meanwhile_is_retried_once_on_another(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    # the first start fails as a server does when another process took its port
    script = (
        write_files(
            tmp_path,
            {
                "flaky.py": """
                import pathlib, runpy, sys
                marker = pathlib.Path(sys.argv[1])
                if not marker.exists():
                    marker.touch()
                    sys.exit("OSError: [Errno 98] Address already in use")
                sys.argv = ["server.py", *sys.argv[2:]]
                runpy.run_path("server.py", run_name="__main__")
            """
            },
        )
        / "flaky.py"
    )
    start = json.dumps([sys.executable, str(script), str(tmp_path / "marker"), "--port", "{port}"])
    reg = managed_registry(tmp_path, start)
    done = toolctl("run", "stats", "--registry", str(reg), "--arg", "text=abc")
    assert (done.returncode, done.stdout) == (0, "3 letters, 0 digits, 0 spaces\n"), done.stderr
    [record] = status(toolctl, reg)
    assert Path(str(record["log"])).read_text().count("starting service api") == 2


def test_the_sample_registry_text_api(toolctl: Toolctl) -> None:
    reg = str(ROOT / "registry")
    done = toolctl("run", "char-stats", "--registry", reg, "--arg", "text=Hi 2")
    assert (done.returncode, done.stdout) == (0, "2 letters, 1 digits, 1 spaces\n"), done.stderr
    done = toolctl("run", "slugify", "--registry", reg, "--arg", "title=Hello, World!")
    assert (done.returncode, done.stdout) == (0, "hello-world\n"), done.stderr


def test_what_a_service_killed_outright_left_is_killed_when_it_is_found_gone(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A managed service SIGKILLed (a kept session's keeper, an OOM kill) leaves what it
    started running, in a session of its own too; the first command that finds its
    record gone (`service status`) kills those by the tag they carry before it forgets
    the record, the one way left to find them."""
    pidfile = tmp_path / "left.pid"
    start = (
        f'["sh", "-c", "setsid sh -c \'echo $$ > {pidfile}; exec sleep 300\' & '
        f'exec {sys.executable} server.py --port {{port}}"]'
    )
    reg = managed_registry(tmp_path, start)
    assert toolctl("run", "stats", "--registry", str(reg), "--arg", "text=x").returncode == 0
    [record] = status(toolctl, reg)
    left = int(pidfile.read_text())
    assert is_alive(left)
    os.kill(int(str(record["pid"])), 9)
    deadline = time.monotonic() + 10
    while is_alive(int(str(record["pid"]))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert status(toolctl, reg) == []
    deadline = time.monotonic() + 10
    while is_alive(left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_alive(left), "what the killed service started runs on"
