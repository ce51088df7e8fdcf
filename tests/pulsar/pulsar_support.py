"""What the Pulsar tests share: the handlers module, a per-test project, a free port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

LITE = "pulsar-lite"
APACHE = "apache-pulsar"
# read once at import: every test runs with an isolated copy of the environment
APACHE_URL = os.environ.get("TOOLCTL_TEST_PULSAR_URL", "")
APACHE_ADMIN_URL = os.environ.get("TOOLCTL_TEST_PULSAR_ADMIN_URL", "")
REQUIRE_CLUSTER = os.environ.get("TOOLCTL_REQUIRE_CLUSTER") == "1"
# where scripts/pulsar-standalone.sh keeps Apache Pulsar's jars (as the script computes it)
PULSAR_CACHE = os.environ.get("TOOLCTL_PULSAR_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "toolctl", "pulsar-4.0.7"
)


def no_cluster(reason: str) -> None:
    """Skip, saying why, or fail when TOOLCTL_REQUIRE_CLUSTER=1 (CI)."""
    if REQUIRE_CLUSTER:
        pytest.fail(f"TOOLCTL_REQUIRE_CLUSTER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def apache_pulsar_url() -> str:
    """The real broker's URL (TOOLCTL_TEST_PULSAR_URL), or skip/fail saying how to get one."""
    if not APACHE_URL:
        no_cluster(
            "no real Apache Pulsar broker: set TOOLCTL_TEST_PULSAR_URL "
            "(`scripts/pulsar-standalone.sh start` starts one and prints it)"
        )
    return APACHE_URL


def admin_get(admin: str, path: str) -> object:
    with urllib.request.urlopen(f"{admin}{path}", timeout=10) as answer:
        return json.loads(answer.read())


HANDLERS = '''
"""Handlers the Pulsar tests host with `toolctl worker`."""

import asyncio
import os
import threading
import time
from pathlib import Path


def hello(config, arguments, user):
    return f"hello {arguments.get('name', 'world')} from {user}"


def echo(config, arguments, user):
    return {"config": config, "arguments": arguments, "user": user}


def fail(config, arguments, user):
    why = arguments.get("why", "no reason")
    if why == "exit":
        import sys
        sys.exit(3)
    if why == "interrupt":
        raise KeyboardInterrupt
    raise ValueError(f"boom: {why}")


def chunks(config, arguments, user):
    for part in ("one ", "two ", "three"):
        yield part


async def later(config, arguments, user):
    await asyncio.sleep(0.01)
    return f"later {arguments['word']}"


_together = threading.Barrier(int(os.environ.get("TOGETHER", "3")), timeout=20)


def together(config, arguments, user):
    _together.wait()  # passes only while enough calls are in flight at once
    return f"together {arguments['n']}"


def whoami(config, arguments, user):
    if "marker" in arguments:
        Path(arguments["marker"]).write_text("started")
    time.sleep(float(arguments.get("seconds", 0)))
    return os.environ.get("WORKER_NAME", str(os.getpid()))


def sleepy(config, arguments, user):
    Path(arguments["marker"]).write_text("started")
    time.sleep(float(arguments["seconds"]))
    return "slept"


def stall(config, arguments, user):
    """Answers who it is; a worker started with STALL=1 takes the call, then hangs."""
    if "marker" in arguments:
        with open(arguments["marker"], "a") as marker:
            marker.write(os.environ.get("WORKER_NAME", "?") + "\\n")
    if os.environ.get("STALL"):
        time.sleep(3600)
    time.sleep(float(arguments.get("seconds", 0)))
    return os.environ.get("WORKER_NAME", str(os.getpid()))


def huge(config, arguments, user):
    return "x" * (int(arguments["megabytes"]) * 1024 * 1024)


def trickle(config, arguments, user):
    """A stream that takes longer than its caller waits."""
    for n in range(int(arguments["chunks"])):
        yield f"{n} "
        time.sleep(0.05)
'''


@dataclass(frozen=True)
class Project:
    """A registry and handlers module in tmp_path; ``queue(name)`` is a service's request topic."""

    root: Path
    registry: Path
    suffix: str

    def request_queue(self, service: str) -> str:
        return f"{self.kind(service)}://tg/request/{service}-{self.suffix}"

    def response_queue(self, service: str) -> str:
        return f"{self.kind(service)}://tg/response/{service}-{self.suffix}"

    def kind(self, service: str) -> str:
        """An at-least-once service's queues are persistent."""
        return "persistent" if service in AT_LEAST_ONCE else "non-persistent"


AT_LEAST_ONCE = {"sure"}


SERVICES = {
    # service: (handler, tool arguments as TOML)
    "hello": ("handlers:hello", '[[tool.arguments]]\nname = "name"\nrequired = false'),
    "echo": ("handlers:echo", '[[tool.arguments]]\nname = "word"\nrequired = false'),
    "fail": ("handlers:fail", '[[tool.arguments]]\nname = "why"\nrequired = false'),
    "chunks": ("handlers:chunks", ""),
    "later": ("handlers:later", '[[tool.arguments]]\nname = "word"'),
    "together": ("handlers:together", '[[tool.arguments]]\nname = "n"\ntype = "integer"'),
    "sleepy": (
        "handlers:sleepy",
        '[[tool.arguments]]\nname = "marker"\n[[tool.arguments]]\nname = "seconds"\n'
        'type = "number"',
    ),
    "whoami": (
        "handlers:whoami",
        '[[tool.arguments]]\nname = "seconds"\ntype = "number"\nrequired = false\n'
        '[[tool.arguments]]\nname = "marker"\nrequired = false',
    ),
    "nobody": ("handlers:hello", ""),  # no test ever starts its worker
    "huge": ("handlers:huge", '[[tool.arguments]]\nname = "megabytes"\ntype = "integer"'),
    "trickle": ("handlers:trickle", '[[tool.arguments]]\nname = "chunks"\ntype = "integer"'),
    # delivery = "at-least-once", on persistent queues
    "sure": (
        "handlers:stall",
        '[[tool.arguments]]\nname = "seconds"\ntype = "number"\nrequired = false\n'
        '[[tool.arguments]]\nname = "marker"\nrequired = false',
    ),
}


def registry_toml(project: Project) -> str:
    parts = []
    for service, (handler, arguments) in SERVICES.items():
        delivery = "at-least-once" if service in AT_LEAST_ONCE else "at-most-once"
        parts.append(
            f"""
[[service]]
name = "{service}"
[service.pulsar]
request_queue = "{project.request_queue(service)}"
response_queue = "{project.response_queue(service)}"
config_params = [{{ name = "style", required = false }}]
handler = "{handler}"
delivery = "{delivery}"

[[tool]]
name = "{service}"
service = "{service}"
timeout = 10
config = {{ style = "plain" }}
{arguments}
"""
        )
    return "".join(parts)


def handler_services(project: Project, module: str, names: Sequence[str], tool: str = "") -> str:
    """A `[[service]]` with handler ``module:NAME`` and a `[[tool]]` on it for each name;
    ``tool``: more lines of each tool."""
    return "".join(
        f"""
[[service]]
name = "{name}"
[service.pulsar]
request_queue = "{project.request_queue(name)}"
response_queue = "{project.response_queue(name)}"
handler = "{module}:{name}"

[[tool]]
name = "{name}"
service = "{name}"
parameters = {{ type = "object" }}
{tool}
"""
        for name in names
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


StartWorker = Callable[..., subprocess.Popen[bytes]]


def result_of(stdout: str) -> dict[str, object]:
    """The ToolResult a `toolctl run --json` printed."""
    parsed: dict[str, object] = json.loads(stdout)
    return parsed


# -- a broker killed under a running `--batch` (test_faults.py, test_cluster.py) ---------


def batch_in_background(
    project: Project, tmp_path: Path, service: str, url: str, calls: int, seconds: float
) -> subprocess.Popen[str]:
    """`toolctl run SERVICE --batch` of ``calls`` calls of ``seconds`` s, each timing out
    only after 300 s: a call that waits for its timeout makes the test fail, not pass."""
    lines = tmp_path / "calls.jsonl"
    lines.write_text("".join(json.dumps({"seconds": seconds}) + "\n" for _ in range(calls)))
    command = [sys.executable, "-m", "toolctl", "run", service, "--batch", str(lines)]
    command += ["--concurrency", "8", "--timeout", "300", "--pulsar-url", url]
    command += ["--registry", str(project.registry)]
    with open(tmp_path / "batch.out", "wb") as out:  # the results, read as they come
        return subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, text=True)


def lost_batch(
    batch: subprocess.Popen[str], url: str, tmp_path: Path
) -> tuple[int, list[dict[str, object]], str]:
    """The batch's exit code, results and stderr, once the broker was killed under it."""
    _, err = batch.communicate(timeout=90)  # far less than one call's timeout
    out = (tmp_path / "batch.out").read_text()
    results = [json.loads(line) for line in out.splitlines()]
    failed = [r for r in results if not r["success"]]
    assert failed, (out, err)
    assert all(f"lost the Pulsar broker at {url}" in str(r["error"]) for r in failed), failed
    return batch.returncode, results, err


def first_line(batch: subprocess.Popen[str], tmp_path: Path) -> None:
    """Wait until the batch printed its first result (the broker is serving it)."""
    deadline = time.monotonic() + 60
    while not (tmp_path / "batch.out").read_bytes().count(b"\n"):
        assert batch.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)


def broker_killed_under_a_batch(
    project: Project, tmp_path: Path, url: str, kill: Callable[[], None]
) -> tuple[int, list[dict[str, object]], str]:
    """Run a batch of 400 calls to `whoami`, ``kill`` the broker once the first result is
    out; the batch's exit code, results and stderr."""
    batch = batch_in_background(project, tmp_path, "whoami", url, calls=400, seconds=0.2)
    try:
        first_line(batch, tmp_path)
        kill()
        return lost_batch(batch, url, tmp_path)
    finally:
        batch.kill()
