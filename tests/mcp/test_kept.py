"""Kept MCP sessions, through the real CLI and the real probe server: `service up` and
`keep_alive` hold one server session that later runs reuse; `service down` ends it with
the server's tree; a server that dies is restarted once, then reported."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from tests.conftest import Toolctl
from tests.mcp.conftest import PROBE


def kept_registry(
    root: Path, env: dict[str, str], *, keep_alive: bool = False, idle: float | None = None
) -> Path:
    argv = [sys.executable, str(PROBE)]
    service: dict[str, object] = {"command": argv, "env": env, "keep_alive": keep_alive}
    if idle is not None:
        service["idle_timeout"] = idle
    (root / "reg").mkdir(parents=True, exist_ok=True)
    (root / "reg/s.toml").write_text(
        tomli_w.dumps({"service": [{"name": "probe", "mcp": service}]})
    )
    return root / "reg"


def gone(pid: int) -> bool:
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{pid}/stat") as stat:
            if stat.read().split(") ")[1].startswith("Z"):
                return True
        time.sleep(0.05)
    return False


@pytest.fixture
def down(toolctl: Toolctl) -> Iterator[list[Path]]:
    """Registries whose kept session the test started: stopped at the end, whatever happens."""
    started: list[Path] = []
    yield started
    for reg in started:
        toolctl("service", "down", "probe", "-r", str(reg))


def test_service_up_keeps_one_session_that_runs_reuse_and_down_ends_it(
    toolctl: Toolctl, tmp_path: Path, down: list[Path]
) -> None:
    pids = tmp_path / "pids"
    reg = kept_registry(tmp_path, {"PROBE_PID_FILE": str(pids)})
    assert toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "echo").returncode == 0
    down.append(reg)
    up = toolctl("service", "up", "probe", "-r", str(reg))
    assert up.returncode == 0, up.stderr
    assert up.stdout.startswith("tcp://127.0.0.1:")
    server = pids.read_text()
    for n in range(3):
        ran = toolctl("run", "probe.echo", "-r", str(reg), "--arg", f"text=kept {n}")
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip() == f"kept {n}"
    assert pids.read_text() == server  # no other server was started
    status = toolctl("service", "status", "-r", str(reg), "--json")
    [row] = json.loads(status.stdout)
    assert row["kind"] == "mcp-session" and row["name"] == "probe"
    again = toolctl("service", "up", "probe", "-r", str(reg))
    assert "already running" in again.stderr
    assert toolctl("service", "down", "probe", "-r", str(reg)).returncode == 0
    for pid in [row["pid"], *(int(p) for p in server.split())]:
        assert gone(pid), pid
    assert json.loads(toolctl("service", "status", "-r", str(reg), "--json").stdout) == []


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT, signal.SIGTERM])
def test_a_keeper_stopped_by_any_signal_ends_its_server(
    toolctl: Toolctl, tmp_path: Path, down: list[Path], signum: int
) -> None:
    """SIGHUP (its terminal closed), Ctrl-C or SIGTERM end a keeper as `service down`
    does: the server and what it started end with it, its state is gone."""
    pids = tmp_path / "pids"
    reg = kept_registry(tmp_path, {"PROBE_PID_FILE": str(pids)})
    down.append(reg)
    assert toolctl("service", "up", "probe", "-r", str(reg)).returncode == 0
    [row] = json.loads(toolctl("service", "status", "-r", str(reg), "--json").stdout)
    os.kill(row["pid"], signum)
    for pid in [row["pid"], *(int(p) for p in pids.read_text().split())]:
        assert gone(pid), pid
    assert json.loads(toolctl("service", "status", "-r", str(reg), "--json").stdout) == []


def test_the_keeper_holds_what_its_server_needs_not_the_callers_environment(
    toolctl: Toolctl, tmp_path: Path, down: list[Path]
) -> None:
    """A keeper lives for its idle time (or until `service down`): it held every variable
    of the shell that started it, an unrelated cloud key included. It holds what its
    server gets, and the variables the service names, and the server gets what it did."""
    pids = tmp_path / "pids"
    reg = kept_registry(tmp_path, {"PROBE_PID_FILE": str(pids), "PROBE_TOKEN": "${env:MINE}"})
    down.append(reg)
    env = {"UNRELATED_SECRET": "s3cr3t-elsewhere", "MINE": "t0k3n-for-probe"}
    assert toolctl("service", "up", "probe", "-r", str(reg), env=env).returncode == 0
    [row] = json.loads(toolctl("service", "status", "-r", str(reg), "--json").stdout)
    server = int(pids.read_text().split()[0])
    held = {pid: _environ(pid) for pid in (row["pid"], server)}
    for pid, environ in held.items():
        assert "UNRELATED_SECRET" not in environ and environ["HOME"] == os.environ["HOME"], pid
    assert held[server]["PROBE_TOKEN"] == "t0k3n-for-probe" and "MINE" not in held[server]
    assert held[row["pid"]]["MINE"] == "t0k3n-for-probe"  # masked in what the server says


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def test_a_stranger_without_the_token_gets_nothing(
    toolctl: Toolctl, tmp_path: Path, down: list[Path]
) -> None:
    reg = kept_registry(tmp_path, {})
    down.append(reg)
    up = toolctl("service", "up", "probe", "-r", str(reg))
    assert up.returncode == 0, up.stderr
    port = int(up.stdout.strip().rsplit(":", 1)[1])
    for line in (b'{"op": "list"}\n', b'{"token": "guess", "op": "list"}\n', b"garbage\n"):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(line)
            assert connection.recv(1024) == b""


def test_keep_alive_starts_the_session_on_first_use(
    toolctl: Toolctl, tmp_path: Path, down: list[Path]
) -> None:
    pids = tmp_path / "pids"
    reg = kept_registry(tmp_path, {"PROBE_PID_FILE": str(pids)}, keep_alive=True)
    assert toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "echo").returncode == 0
    down.append(reg)
    first = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=one")
    assert first.returncode == 0, first.stderr
    server = pids.read_text()
    second = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=two")
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "two"
    assert pids.read_text() == server
    [row] = json.loads(toolctl("service", "status", "-r", str(reg), "--json").stdout)
    assert row["kind"] == "mcp-session"
    dry = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=x", "--dry-run", "--json")
    assert "running (pid" in json.loads(dry.stdout)["kept_session"]


def test_a_dead_server_is_restarted_once_then_reported(
    toolctl: Toolctl, tmp_path: Path, down: list[Path]
) -> None:
    reg = kept_registry(tmp_path, {})
    imported = toolctl(
        "import", "mcp", "probe", "-r", str(reg), "--tool", "echo", "--tool", "exit_now"
    )
    assert imported.returncode == 0, imported.stderr
    down.append(reg)
    assert toolctl("service", "up", "probe", "-r", str(reg)).returncode == 0
    died = toolctl("run", "probe.exit_now", "-r", str(reg))
    assert died.returncode == 5
    assert "probe: exiting mid-call" in died.stderr  # the server's stderr tail
    revived = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=back")
    assert revived.returncode == 0, revived.stderr
    assert revived.stdout.strip() == "back"
    assert toolctl("run", "probe.exit_now", "-r", str(reg)).returncode == 5
    reported = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=x")
    assert reported.returncode == 5
    assert "died again" in reported.stderr and "after a restart" in reported.stderr


def test_timeout_on_a_kept_session_is_124_and_the_next_run_works(
    toolctl: Toolctl, tmp_path: Path, down: list[Path]
) -> None:
    reg = kept_registry(tmp_path, {})
    imported = toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "echo", "--tool", "hang")
    assert imported.returncode == 0, imported.stderr
    down.append(reg)
    assert toolctl("service", "up", "probe", "-r", str(reg)).returncode == 0
    hung = toolctl("run", "probe.hang", "-r", str(reg), "--timeout", "2")
    assert hung.returncode == 124, hung.stderr
    assert "ran past its 2 s timeout" in hung.stderr
    after = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=fine")
    assert after.returncode == 0, after.stderr


def test_only_stdio_services_are_kept(toolctl: Toolctl, tmp_path: Path) -> None:
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/s.toml").write_text(
        '[[service]]\nname = "web"\n[service.mcp]\nurl = "http://127.0.0.1:9/mcp"\n'
    )
    done = toolctl("service", "up", "web", "-r", str(tmp_path / "reg"))
    assert done.returncode == 2
    assert "not a stdio MCP service" in done.stderr


def test_a_session_a_run_kept_ends_after_its_idle_timeout(
    toolctl: Toolctl, tmp_path: Path, down: list[Path]
) -> None:
    pids = tmp_path / "pids"
    reg = kept_registry(tmp_path, {"PROBE_PID_FILE": str(pids)}, keep_alive=True, idle=1)
    assert toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "echo").returncode == 0
    down.append(reg)
    for text in ("one", "two"):
        ran = toolctl("run", "probe.echo", "-r", str(reg), "--arg", f"text={text}")
        assert ran.returncode == 0, ran.stderr
    [row] = json.loads(toolctl("service", "status", "-r", str(reg), "--json").stdout)
    server = [int(p) for p in pids.read_text().split()]
    for pid in [row["pid"], *server]:  # a second of quiet: the keeper and its server end
        assert any(gone(pid) for _ in range(3)), pid  # 5 s each: the server's close grace
    assert json.loads(toolctl("service", "status", "-r", str(reg), "--json").stdout) == []
    again = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=three")
    assert again.returncode == 0 and again.stdout.strip() == "three"  # a new one, kept again
    [new] = json.loads(toolctl("service", "status", "-r", str(reg), "--json").stdout)
    assert new["pid"] != row["pid"]


def test_a_slow_start_suggests_keep_alive(toolctl: Toolctl, tmp_path: Path) -> None:
    reg = kept_registry(tmp_path, {"PROBE_START_DELAY": "2.2"})
    assert toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "echo").returncode == 0
    ran = toolctl("run", "probe.echo", "-r", str(reg), "--arg", "text=slow")
    assert ran.returncode == 0, ran.stderr
    assert "MCP server 'probe' took" in ran.stderr
    assert "keep_alive = true in its [service.mcp] keeps it warm between runs" in ran.stderr
    assert "(it ends after 600 s without a call)" in ran.stderr
    assert json.loads(toolctl("service", "status", "-r", str(reg), "--json").stdout) == []


def test_a_session_kept_for_one_project_never_serves_another_of_the_same_name(
    toolctl: Toolctl, tmp_path: Path, down: list[Path]
) -> None:
    """Kept sessions are named by service, one table per user: project B's service
    'probe' (another definition) must not reach project A's kept server."""
    pids_a, pids_b = tmp_path / "a/pids", tmp_path / "b/pids"
    reg_a = kept_registry(tmp_path / "a", {"PROBE_PID_FILE": str(pids_a)}, keep_alive=True)
    reg_b = kept_registry(tmp_path / "b", {"PROBE_PID_FILE": str(pids_b)}, keep_alive=True)
    for reg in (reg_a, reg_b):
        assert toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "echo").returncode == 0
    pids_b.unlink()  # the import's listing started B's server once
    down.append(reg_a)
    assert toolctl("run", "probe.echo", "-r", str(reg_a), "--arg", "text=a").returncode == 0
    server_a = pids_a.read_text()
    ran = toolctl("run", "probe.echo", "-r", str(reg_b), "--arg", "text=b")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "b"
    assert pids_b.exists()  # B's own server answered
    assert pids_a.read_text() == server_a
    again = toolctl("run", "probe.echo", "-r", str(reg_a), "--arg", "text=a2")
    assert again.stdout.strip() == "a2" and pids_a.read_text() == server_a  # A's still kept


def test_a_kept_session_serves_its_pass_env_too(tmp_path: Path) -> None:
    """What decides whether a running kept session still serves its definition covers
    pass_env, as it covers env: an edited pass_env starts a new session (the old one kept
    its old environment, `service up` said "already running"); none, or an empty one,
    keeps the digest sessions already running have."""
    from toolctl.mcp.kept import definition

    base: dict[str, Any] = {"command": ["server"], "env": {}}
    extras: dict[str, dict[str, Any]] = {
        "none": {}, "empty": {"pass_env": []}, "a": {"pass_env": ["A"]}, "b": {"pass_env": ["B"]}
    }  # fmt: skip
    digest = {
        name: definition({**base, **extra}, tmp_path, "token") for name, extra in extras.items()
    }
    assert digest["none"] == digest["empty"]
    assert len({digest["none"], digest["a"], digest["b"]}) == 3


def test_ctrl_c_of_a_run_on_a_kept_session_cancels_the_call_at_its_server(
    toolctl: Toolctl, tmp_path: Path, down: list[Path]
) -> None:
    """Ctrl-C said "the call was stopped", but the keeper never told the server, which ran
    the call to its end (and a call that blocks its server held up every later run)."""
    import subprocess

    reg = kept_registry(tmp_path, {"PROBE_DEFECT_TOOLS": "1"})
    imported = toolctl("import", "mcp", "probe", "-r", str(reg), "--tool", "marked")
    assert imported.returncode == 0, imported.stderr
    down.append(reg)
    assert toolctl("service", "up", "probe", "-r", str(reg)).returncode == 0
    marker = tmp_path / "marker"
    run = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", "probe.marked", "-r", str(reg),
         "--arg", "seconds=3", "--arg", f"path={marker}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(1.5)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=30)
    assert run.returncode == 130, err
    time.sleep(3)  # past the call's own end
    assert not marker.exists(), "the server ran the call to its end"
