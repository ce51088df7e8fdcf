"""Announcements: how soon an announced tool is visible, and what reading them costs.

On pulsar-lite (started with ``toolctl.pulsar.broker`` in a temporary directory):

1. **Announcement to visible**: a worker started with ``--announce --key``; from the moment
   its process starts, how long until ``toolctl list --announced URL`` shows its tool (a
   command polling, the way a person or a script would), and until a live ``mcp serve``
   session receives ``notifications/tools/list_changed`` (a follower already reading);
   then, after SIGKILL, how long until the tool is gone for both (``--ttl`` s, the bound).
2. **Start-up cost**: ``toolctl list`` and ``toolctl run`` of a trivial local tool on a
   registry without announcements against the same commands with announcements read
   (one service announced), alternating, in one run; and, with ``--baseline DIR``,
   the registry without announcements against another checkout (main) side by side: reading
   none must cost nothing.

Usage::

    python bench/announce.py [--repeat 21] [--ttl 3] [--baseline /work/main]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from run_local import compiled_copy
from timing import alternate_cpu, report

from toolctl.pulsar import broker
from toolctl.signing import generate

SERVICE_TOML = """
[[service]]
name = "hello"
[service.pulsar]
request_queue = "non-persistent://tg/request/bench-hello"
response_queue = "non-persistent://tg/response/bench-hello"
handler = "handlers:hello"

[[tool]]
name = "say-hello"
description = "Say hello"
service = "hello"
"""
HANDLERS = "def hello(config, arguments, user):\n    return 'hello'\n"
LOCAL_TOML = """
[[tool]]
name = "echo"
description = "a trivial tool"
[tool.local]
command = ["{python}", "-c", "print('hi')"]
input = "none"
"""
TOOLCTL = [sys.executable, "-m", "toolctl"]


class Changes:
    """A live `mcp serve --announced` session (the official SDK client, in a thread of its
    own) and when each notifications/tools/list_changed arrived."""

    def __init__(self, reader: Path, url: str, env: dict[str, str]) -> None:
        self.ready = threading.Event()
        self.arrived: queue.Queue[float] = queue.Queue()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(reader, url, env), daemon=True)
        self._thread.start()

    def _run(self, reader: Path, url: str, env: dict[str, str]) -> None:
        import anyio
        from mcp import ClientSession, types
        from mcp.client.stdio import StdioServerParameters, stdio_client

        async def handler(message: object) -> None:
            if isinstance(message, types.ServerNotification) and isinstance(
                message.root, types.ToolListChangedNotification
            ):
                self.arrived.put(time.perf_counter())

        async def session() -> None:
            params = StdioServerParameters(
                command=sys.executable,
                args=[
                    "-m",
                    "toolctl",
                    "mcp",
                    "serve",
                    "--registry",
                    str(reader),
                    "--announced",
                    url,
                ],
                env=env,
            )
            async with (
                stdio_client(params, errlog=open(os.devnull, "w")) as (read, write),
                ClientSession(read, write, message_handler=handler) as client,
            ):
                await client.initialize()
                await client.list_tools()
                self.ready.set()
                while not self._done.is_set():
                    await anyio.sleep(0.05)

        anyio.run(session)

    def wait_change(self, seconds: float) -> float:
        return self.arrived.get(timeout=seconds)

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=30)


def watch_changes(reader: Path, url: str, env: dict[str, str]) -> Changes:
    return Changes(reader, url, env)


def listed(env: dict[str, str], reader: Path, url: str) -> bool:
    done = subprocess.run(
        [*TOOLCTL, "list", "--registry", str(reader), "--announced", url],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    return "say-hello" in done.stdout


def visible_latency(work: Path, env: dict[str, str], url: str, ttl: float) -> list[tuple[str, str]]:
    """Worker start to `list` showing the tool, and SIGKILL to `list` not showing it; the
    same for a live MCP session's list_changed."""
    reader, key = work / "reader", work / "key.pem"
    rows: list[tuple[str, str]] = []
    changes = watch_changes(reader, url, env)  # a live `mcp serve` session, in a thread
    changes.ready.wait(60)
    started = time.perf_counter()
    worker = subprocess.Popen(
        [*TOOLCTL, "worker", "hello", "--announce", "--key", str(key), "--announce-ttl",
         f"{ttl:g}", "--registry", str(work / "worker"), "--pulsar-url", url],
        cwd=work / "worker", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    while not listed(env, reader, url):
        pass
    rows.append(
        ("worker start -> `list` shows it", f"{(time.perf_counter() - started) * 1000:.0f} ms")
    )
    seen_at = time.time()
    (origins,) = (work / "cache" / "toolctl" / "announced").glob("*.origins.json")
    sent_at = json.loads(origins.read_text())["hello"]["at"]  # the heartbeat `list` read
    rows.append(("heartbeat `list` read -> `list` done", f"{(seen_at - sent_at) * 1000:.0f} ms"))
    seen = changes.wait_change(30)
    rows.append(("worker start -> MCP list_changed", f"{(seen - started) * 1000:.0f} ms"))
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    killed = time.perf_counter()
    while listed(env, reader, url):
        pass
    rows.append(
        (f"SIGKILL -> `list` drops it (ttl {ttl:g} s)", f"{time.perf_counter() - killed:.2f} s")
    )
    seen = changes.wait_change(ttl + 30)
    rows.append((f"SIGKILL -> MCP list_changed (ttl {ttl:g} s)", f"{seen - killed:.2f} s"))
    changes.stop()
    return rows


def startup(work: Path, env: dict[str, str], url: str, repeat: int, baseline: str | None) -> None:
    reader = ["--registry", str(work / "reader")]
    commands = {
        "list, no announcements": [*TOOLCTL, "list", *reader],
        "list, announcements read": [*TOOLCTL, "list", *reader, "--announced", url],
        "run, no announcements": [*TOOLCTL, "run", "echo", *reader],
        "run, announcements read": [*TOOLCTL, "run", "echo", *reader, "--announced", url],
    }
    envs: dict[str, dict[str, str]] = {}
    if baseline:
        copy = str(compiled_copy(Path(baseline).resolve(), work))
        for name in ("list", "run"):
            label = f"{name}, no announcements (baseline)"
            commands[label] = commands[f"{name}, no announcements"]
            envs[label] = {"PYTHONPATH": copy, "XDG_CACHE_HOME": str(work / "cache-baseline")}
    wall, cpu = alternate_cpu(commands, repeat=repeat, env=env, envs=envs)
    rows = [(name, f"{wall[name]:6.1f} ms wall, {cpu[name]:6.1f} ms CPU") for name in commands]
    for name in ("list", "run"):
        plain, read = wall[f"{name}, no announcements"], wall[f"{name}, announcements read"]
        rows.append((f"{name}: announcements read / none", f"{read / plain:.2f}x"))
        if baseline:
            base = wall[f"{name}, no announcements (baseline)"]
            rows.append((f"{name}: none here / baseline", f"{plain / base:.2f}x"))
    report(f"start-up, median of {repeat}, alternating", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--ttl", type=float, default=3.0)
    parser.add_argument("--baseline", metavar="DIR", help="another checkout to compare with")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolctl-bench-announce-") as temporary:
        work = Path(temporary)
        env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"),
               "XDG_STATE_HOME": str(work / "state"), "XDG_DATA_HOME": str(work / "data"),
               "TOOLCTL_HISTORY": "0", "NO_COLOR": "1"}  # fmt: skip
        env.pop("TOOLCTL_ANNOUNCED", None)
        (work / "worker").mkdir()
        (work / "worker" / "services.toml").write_text(SERVICE_TOML)
        (work / "worker" / "handlers.py").write_text(HANDLERS)
        (work / "reader").mkdir()
        (work / "reader" / "local.toml").write_text(LOCAL_TOML.format(python=sys.executable))
        public = generate(work / "key.pem")
        trust = f'[[trust]]\nkey = "{public}"\nservices = "*"\n'
        (work / "reader" / "trust.toml").write_text(trust)
        with broker.running_in(work / "broker-state") as url:
            report(
                "announcement to visible (pulsar-lite)",
                visible_latency(work, env, url, options.ttl),
            )
            worker = subprocess.Popen(
                [*TOOLCTL, "worker", "hello", "--announce", "--key", str(work / "key.pem"),
                 "--registry", str(work / "worker"), "--pulsar-url", url],
                cwd=work / "worker", env=env, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
            try:
                while not listed(env, work / "reader", url):
                    time.sleep(0.05)
                startup(work, env, url, options.repeat, options.baseline)
            finally:
                os.killpg(worker.pid, signal.SIGTERM)
                worker.wait(timeout=30)


if __name__ == "__main__":
    main()
