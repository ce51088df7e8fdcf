"""Throughput of `toolctl run TOOL --batch FILE --concurrency 16` against a local HTTP tool.

Standalone (needs only the venv). It

1. starts a local HTTP tool server on a free 127.0.0.1 port: bench/fast_http_server.py (a
   lean asyncio HTTP/1.1 keep-alive server, the default) or, with ``--server textapi``,
   plugins/textapi/server.py (the stdlib ThreadingHTTPServer, which is slower than the
   client and so caps both sides); and writes a temporary registry whose tool ``stats``
   POSTs to its ``/stats``, with isolated XDG directories;
2. measures, alternately, ``--rounds`` times:
   (a) the real CLI as a subprocess: ``toolctl run stats --batch FILE --concurrency C``
       over ``--calls`` lines, checking every result line succeeded;
   (b) the same CLI over a one-line batch: its fixed cost (interpreter start, imports,
       registry, one call), to separate start-up from the per-call rate;
   (c) the floor: a bare ``httpx.Client`` shared by C threads making the same calls from
       this process (no toolctl, no subprocess);
3. prints the medians: calls/s end to end, calls/s net of start-up, the floor, and the
   ratio floor / toolctl.

The server is one Python process on the same machine, so it caps both (a) and (c); the
ratio is what says how much toolctl itself costs per call.

Usage::

    python bench/http_batch.py [--calls 1000] [--concurrency 16] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVERS = {
    "fast": ROOT / "bench" / "fast_http_server.py",
    "textapi": ROOT / "plugins" / "textapi" / "server.py",
}
TEXT = "The quick brown fox jumps over 13 lazy dogs"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def text_server(kind: str) -> Iterator[str]:
    """The chosen server on a free port, until the block ends."""
    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, str(SERVERS[kind]), "--port", str(port)], stdout=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or child.poll() is not None:
                    raise SystemExit("the text server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        child.terminate()
        child.wait(timeout=10)


def write_setup(directory: Path, url: str, calls: int) -> tuple[Path, Path, Path, dict[str, str]]:
    """A registry with the tool, a batch file of ``calls`` lines and a one-line one, an env."""
    registry = directory / "registry"
    registry.mkdir()
    (registry / "bench.toml").write_text(
        f'[[tool]]\nname = "stats"\n[tool.http]\nurl = "{url}/stats"\nmethod = "POST"\n'
        '[[tool.arguments]]\nname = "text"\n'
    )
    batch = directory / "calls.jsonl"
    batch.write_text("".join(json.dumps({"text": f"{TEXT} {n}"}) + "\n" for n in range(calls)))
    single = directory / "one.jsonl"
    single.write_text(json.dumps({"text": TEXT}) + "\n")
    env = {**os.environ, "NO_COLOR": "1"}
    for variable, folder in (
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_DATA_HOME", "data"),
    ):
        env[variable] = str(directory / folder)
    return registry, batch, single, env


def cli_seconds(
    registry: Path, batch: Path, concurrency: int, env: dict[str, str], expected: int
) -> float:
    argv = [sys.executable, "-m", "toolctl", "run", "stats", "--registry", str(registry)]
    argv += ["--batch", str(batch), "--concurrency", str(concurrency)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=batch.parent)
    elapsed = time.perf_counter() - started
    lines = done.stdout.splitlines()
    good = sum(json.loads(line)["success"] for line in lines)
    if done.returncode != 0 or good != expected:
        raise SystemExit(f"toolctl batch failed ({good}/{expected} ok): {done.stderr.strip()}")
    return elapsed


def floor_seconds(url: str, calls: int, concurrency: int) -> float:
    """The same calls from C threads sharing one bare httpx.Client."""
    import httpx

    bodies = [{"text": f"{TEXT} {n}"} for n in range(calls)]
    failures: list[int] = []
    with httpx.Client(limits=httpx.Limits(max_keepalive_connections=64)) as client:
        client.post(url + "/stats", json=bodies[0])  # connect outside the timing

        def work(index: int) -> None:
            for body in bodies[index::concurrency]:
                if client.post(url + "/stats", json=body).status_code != 200:
                    failures.append(1)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(concurrency)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
    if failures:
        raise SystemExit(f"{len(failures)} floor calls failed")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--server", choices=sorted(SERVERS), default="fast")
    options = parser.parse_args()
    calls, concurrency = options.calls, options.concurrency
    batch_s: list[float] = []
    single_s: list[float] = []
    floor_s: list[float] = []
    with (
        tempfile.TemporaryDirectory(prefix="toolctl-http-bench-") as tmp,
        text_server(options.server) as url,
    ):
        registry, batch, single, env = write_setup(Path(tmp), url, calls)
        cli_seconds(registry, single, 1, env, 1)  # warm the registry and runner caches
        for _ in range(options.rounds):
            batch_s.append(cli_seconds(registry, batch, concurrency, env, calls))
            single_s.append(cli_seconds(registry, single, 1, env, 1))
            floor_s.append(floor_seconds(url, calls, concurrency))
    batch_t, single_t, floor_t = (statistics.median(s) for s in (batch_s, single_s, floor_s))
    end_to_end = calls / batch_t
    net = (calls - 1) / max(batch_t - single_t, 1e-9)
    floor = calls / floor_t
    print(
        f"{calls} calls, --concurrency {concurrency}, median of {options.rounds} rounds, "
        f"{options.server} server"
    )
    print(f"  toolctl run --batch, end to end   {end_to_end:8.0f} calls/s  ({batch_t:.3f} s)")
    print(f"  toolctl start-up + one call       {single_t * 1000:8.0f} ms")
    print(f"  toolctl run --batch, net of start {net:8.0f} calls/s")
    print(f"  bare httpx, {concurrency} threads (floor)    {floor:8.0f} calls/s  ({floor_t:.3f} s)")
    print(f"  floor / toolctl: end to end {floor / end_to_end:.2f}x, net {floor / net:.2f}x")
    verdict = "meets" if end_to_end >= 1000 else "misses"
    print(f"  target 1000 calls/s end to end: {verdict}")


if __name__ == "__main__":
    main()
