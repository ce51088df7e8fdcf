"""`toolctl serve` starting and stopping: SIGTERM with calls in flight, --detach, imports."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.conftest import Toolctl, write_files
from tests.serve.serve_support import StartServe, alive, read_pid, wait_for
from tests.serve.test_rest import call_hang


def test_sigterm_kills_what_in_flight_calls_started(serve: StartServe, tmp_path: Path) -> None:
    served = serve("--grace", "1")
    pidfile = tmp_path / "hang.pid"
    threading.Thread(target=call_hang, args=(served.url, pidfile), daemon=True).start()
    pid = read_pid(pidfile)
    served.stop(signal.SIGTERM)
    assert wait_for(lambda: not alive(pid)), "a call's process outlived the server"


def test_detach_status_down(registry: Path, toolctl: Toolctl, tmp_path: Path) -> None:
    started = toolctl(
        "serve",
        "--detach",
        "--port",
        "0",
        "--registry",
        str(registry),
        "--group",
        "texty",
        "--json",
    )
    assert started.returncode == 0, started.stderr
    record = json.loads(started.stdout)
    assert record["kind"] == "serve" and record["name"] == "serve"
    answer = httpx.post(
        f"{record['url']}/run_tool", json={"tool_id": "echo", "params": {"text": "d"}}
    )
    assert answer.json()["output"] == "d"
    served = httpx.get(f"{record['url']}/tools").json()["tools"]
    assert [t["tool_id"] for t in served] == ["data", "echo"]  # the selection went along
    status = json.loads(toolctl("service", "status", "--json").stdout)
    assert [(r["kind"], r["name"], r["url"]) for r in status] == [("serve", "serve", record["url"])]
    same = ["serve", "--detach", "--port", "0", "--registry", str(registry), "--group", "texty"]
    again = toolctl(*same)
    assert (again.returncode, again.stdout) == (0, f"{record['url']}\n"), again.stderr
    assert "already running" in again.stderr
    other = toolctl("serve", "--detach", "--port", "0", "--registry", str(registry))
    assert (other.returncode, other.stdout) == (2, "")  # not the server of another selection
    assert other.stderr == (
        f"toolctl: error: serve 'serve' already runs at {record['url']} with other options; "
        "stop it (toolctl service down serve), or give this one another --name\n"
    )
    down = toolctl("service", "down", "serve")
    assert down.returncode == 0, down.stderr
    assert wait_for(lambda: not alive(record["pid"]))
    assert json.loads(toolctl("service", "status", "--json").stdout) == []


def test_run_and_version_do_not_import_the_server_stack(registry: Path, tmp_path: Path) -> None:
    heavy = ("mcp", "starlette", "uvicorn", "anyio", "toolctl.serve")
    for argv in (["--version"], ["run", "echo", "--arg", "text=x", "--registry", str(registry)]):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "toolctl", *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=dict(os.environ),
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        loaded = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
        assert not {m for m in loaded if m.split(".")[0] in heavy or m.startswith(heavy)}, argv


def test_a_detached_server_needs_a_name_it_can_be_found_by(
    registry: Path, toolctl: Toolctl
) -> None:
    """`--name` names the server's record and log files and what `service status` lists: an
    empty name (listed nowhere), one too long for a file name, or one with a '/' is refused
    before anything starts."""
    for name, told in (
        ("", "a name cannot be empty"),
        ("n" * 300, "300 characters; a name has at most 128"),
        ("a/b", "use letters, digits"),
    ):
        done = toolctl("serve", "--detach", "--port", "0", "-r", str(registry), "--name", name)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("toolctl: error: --name ") and told in done.stderr
    assert json.loads(toolctl("service", "status", "--json").stdout) == []


def test_a_detached_server_of_another_project_is_not_taken_for_this_ones(
    registry: Path, toolctl: Toolctl, tmp_path: Path
) -> None:
    """`serve --detach` in two projects, with the same options: the second would be told
    the first's server is its own, serving the other registry. It is refused instead."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "tools.toml").write_text((registry / "tools.toml").read_text())
    try:
        for directory in (registry, other):
            (directory / "toolctl.toml").write_text('[registry]\npaths = ["."]\n')
        first = toolctl("serve", "--detach", "--port", "0", "--json", cwd=registry)
        assert first.returncode == 0, first.stderr
        pid = json.loads(first.stdout)["pid"]
        # the record as `service up`, `worker --detach` and `broker start` print it
        assert json.loads(first.stdout).keys() >= {"started", "uptime_s", "url", "argv"}
        assert "boot_id" not in json.loads(first.stdout)
        second = toolctl("serve", "--detach", "--port", "0", cwd=other)
        assert (second.returncode, second.stdout) == (2, "")
        assert second.stderr.startswith(
            "toolctl: error: serve 'serve' already runs for another registry ("
        ) and second.stderr.endswith(
            f", pid {pid}); stop it first (toolctl service down serve); or give this one "
            "another --name\n"
        )
        assert toolctl("serve", "--detach", "--port", "0", cwd=registry).returncode == 0
    finally:
        toolctl("service", "down", "serve")


def test_service_down_of_a_server_drains_it_and_its_calls_are_not_failures(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """`service down serve` SIGTERMed the server and its calls' tools at once: a call the
    server's drain would have let finish was killed, answered and recorded as a failure
    of its tool (200, `tool_failed`, exit -15). The server alone gets SIGTERM first, and
    drains: the call finishes within its grace."""
    pidfile = tmp_path / "brief.pid"
    write_files(
        tmp_path / "reg",
        {
            "t.toml": f"""
            [[tool]]
            name = "brief"
            [tool.local]
            command = ["{sys.executable}", "-c", "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(1.5); print('done')", "{pidfile}"]
            input = "none"
            """
        },
    )  # fmt: skip
    started = toolctl(
        "serve", "--detach", "--port", "0", "--grace", "10", "-r", str(tmp_path / "reg"), "--json"
    )
    assert started.returncode == 0, started.stderr
    url = json.loads(started.stdout)["url"]
    answers: list[httpx.Response] = []
    caller = threading.Thread(
        target=lambda: answers.append(
            httpx.post(f"{url}/run_tool", json={"tool_id": "brief"}, timeout=60)
        )
    )
    caller.start()
    read_pid(pidfile)
    down = toolctl("service", "down", "serve")
    assert down.returncode == 0, down.stderr
    caller.join(30)
    assert [(a.status_code, a.json()["output"]) for a in answers] == [(200, "done")]
    history = json.loads(toolctl("history", "--json").stdout)["calls"]
    assert [(c["tool"], c["outcome"]) for c in history] == [("brief", "ok")]


def test_a_call_still_queued_at_sigterm_never_starts(serve: StartServe, tmp_path: Path) -> None:
    """With every slot busy, a call waits in the queue: on SIGTERM it was started once the
    grace had ended the running one (a new tool process, 10 s late, HTTP 500). It never
    starts, and is answered 503."""
    served = serve("--concurrency", "1", "--grace", "1")
    first, second = tmp_path / "first.pid", tmp_path / "second.pid"
    answers: dict[str, int] = {}

    def post(label: str, pidfile: Path) -> None:
        with contextlib.suppress(httpx.HTTPError):
            answer = httpx.post(
                f"{served.url}/run_tool",
                json={"tool_id": "hang", "params": {"pidfile": str(pidfile)}},
                timeout=60,
            )
            answers[label] = answer.status_code

    threads = [
        threading.Thread(target=post, args=("first", first)),
        threading.Thread(target=post, args=("second", second)),
    ]
    threads[0].start()
    read_pid(first)
    threads[1].start()
    time.sleep(0.5)  # queued behind the first
    assert served.stop(signal.SIGTERM, timeout=60) == 0, served.log.read_text()
    for thread in threads:
        thread.join(30)
    assert not second.exists()  # never started
    assert answers == {"first": 503, "second": 503}


def test_service_down_waits_out_a_servers_grace_and_its_calls_are_answered(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """`service down` killed a draining server after its own 5 s, whatever `--grace`: a
    call the server would have answered 503 (terminated) at the end of a longer grace lost
    its answer (the client saw the connection close). It waits the grace and the clean-up."""
    pidfile = tmp_path / "long.pid"
    write_files(
        tmp_path / "reg",
        {
            "t.toml": f"""
            [[tool]]
            name = "long"
            [tool.local]
            command = ["{sys.executable}", "-c", "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)", "{pidfile}"]
            input = "none"
            """
        },
    )  # fmt: skip
    started = toolctl(
        "serve", "--detach", "--port", "0", "--grace", "7", "-r", str(tmp_path / "reg"), "--json"
    )
    assert started.returncode == 0, started.stderr
    url = json.loads(started.stdout)["url"]
    answers: list[httpx.Response] = []

    def post() -> None:
        with contextlib.suppress(httpx.HTTPError):  # the connection closed: no answer
            answers.append(httpx.post(f"{url}/run_tool", json={"tool_id": "long"}, timeout=60))

    caller = threading.Thread(target=post)
    caller.start()
    read_pid(pidfile)
    down = toolctl("service", "down", "serve")
    assert down.returncode == 0, down.stderr
    caller.join(30)
    assert [(a.status_code, a.json()["exit_code"]) for a in answers] == [(503, 143)]
