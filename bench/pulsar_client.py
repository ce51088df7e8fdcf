"""toolctl's Pulsar client runner against the raw pulsar-client floor, side by side in one run.

Standalone: needs only what the venv has. It starts one embedded pulsar-lite broker on a
free 127.0.0.1 port and one trivial worker hosted by toolctl's own worker code
(``python -m toolctl worker bench-echo``, a subprocess, handler ``str(n)``), then measures,
against that same broker and worker:

(a) the raw floor: pulsar-client request/reply, one call at a time (subscribe the response
    topic first, send unbatched, receive until the id matches); p50;
(b) toolctl's ``PulsarRunner.run`` in this process with a warm client, one call at a time;
    p50, and the ratio (b)/(a) (target: at most 1.5);
(c) the raw pipelined floor: ``--calls`` calls with up to ``--window`` in flight
    (``send_async`` plus one reader); calls/s;
(d) the library's ``Caller.batch`` over the same runner, ``--calls`` lines with
    ``--concurrency`` = ``--window``; calls/s and the ratio (d)/(c) (target: at least 0.7);
(e) ``toolctl run bench-echo --batch FILE --concurrency N`` end to end, a subprocess:
    calls/s and the ratio to (c), and the same less the CLI's fixed cost (interpreter,
    imports, registry, connecting), measured as a ``--batch`` of one line.

Each round measures the raw side, then toolctl's, one subscribed at a time (an idle
subscriber to the same response topic would still receive, and pay for, every answer of
the other), so that drift on a shared machine hits both alike; each figure is the median
of the rounds. The worker is the same process throughout (``--worker-concurrency``).

Usage::

    python bench/pulsar_client.py [--sequential 500] [--calls 2000] [--window 64]
                                  [--worker-concurrency 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pulsar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolctl.calls import Caller, resolve  # noqa: E402
from toolctl.processes import stop  # noqa: E402
from toolctl.pulsar import broker  # noqa: E402
from toolctl.pulsar.worker import start_detached  # noqa: E402
from toolctl.registry.index import Registry  # noqa: E402
from toolctl.runners.base import Call, ToolSpec  # noqa: E402
from toolctl.settings import Settings  # noqa: E402

SERVICE = "bench-echo"
REQUEST = f"non-persistent://tg/request/{SERVICE}"
RESPONSE = f"non-persistent://tg/response/{SERVICE}"
REGISTRY = f"""
[[service]]
name = "{SERVICE}"
[service.pulsar]
request_queue = "{REQUEST}"
response_queue = "{RESPONSE}"
handler = "benchecho:invoke"

[[tool]]
name = "{SERVICE}"
service = "{SERVICE}"
timeout = 30
[[tool.arguments]]
name = "n"
type = "integer"
"""
HANDLER = "def invoke(config, arguments, user):\n    return str(arguments.get('n'))\n"


@contextmanager
def running_worker(project: Path, url: str, concurrency: int) -> Iterator[None]:
    """`toolctl worker bench-echo --detach`, launched and stopped by toolctl.processes."""
    settings = Settings.load(environ={**os.environ, "XDG_STATE_HOME": str(project / "state")})
    command = [sys.executable, "-m", "toolctl", "worker", SERVICE, "--registry"]
    command += [str(project / "registry"), "--pulsar-url", url, "--concurrency", str(concurrency)]
    record, _ = start_detached(settings, f"worker:{SERVICE}", command)
    try:
        yield
    finally:
        stop(settings, record.name, grace=20)


def _body(n: int) -> bytes:
    return json.dumps({"user": "bench", "config": "{}", "arguments": json.dumps({"n": n})}).encode()


class RawCaller:
    """The floor: pulsar-client request/reply with nothing of toolctl in between."""

    def __init__(self, url: str) -> None:
        self.client = pulsar.Client(
            url,
            operation_timeout_seconds=10,
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull),
        )
        self.responses = self.client.subscribe(RESPONSE, f"raw-{uuid.uuid4().hex}")
        self.producer = self.client.create_producer(REQUEST, batching_enabled=False)

    def call(self, n: int) -> None:
        call_id = str(uuid.uuid4())
        self.producer.send(_body(n), properties={"id": call_id})
        while True:
            message = self.responses.receive(timeout_millis=10_000)
            self.responses.acknowledge(message)
            mine = message.properties().get("id") == call_id
            if mine and json.loads(message.data())["end_of_stream"]:
                return

    def pipelined(self, calls: int, window: int) -> float:
        """Seconds for ``calls`` calls with at most ``window`` in flight."""
        slots, outstanding, done = threading.Semaphore(window), set(), threading.Event()
        lock = threading.Lock()

        def reader() -> None:
            finished = 0
            while finished < calls:
                message = self.responses.receive(timeout_millis=10_000)
                self.responses.acknowledge(message)
                with lock:
                    known = message.properties().get("id") in outstanding
                if known and json.loads(message.data())["end_of_stream"]:
                    finished += 1
                    slots.release()
            done.set()

        thread = threading.Thread(target=reader, daemon=True)
        started = time.perf_counter()
        thread.start()
        for n in range(calls):
            slots.acquire()
            call_id = str(uuid.uuid4())
            with lock:
                outstanding.add(call_id)
            self.producer.send_async(_body(n), None, properties={"id": call_id})
        if not done.wait(60):
            raise RuntimeError("pipelined calls did not all come back")
        return time.perf_counter() - started

    def close(self) -> None:
        self.client.close()


def _p50(fn: Any, calls: int) -> float:
    latencies = []
    for n in range(calls):
        started = time.perf_counter()
        fn(n)
        latencies.append(time.perf_counter() - started)
    return statistics.median(latencies) * 1000


def _runner_call(runner: Any, spec: ToolSpec) -> Callable[[int], None]:
    """One call of the echo tool through toolctl's runner; a failure raises."""

    def call(n: int) -> None:
        result = runner.run(Call(spec, {"n": n}, 30.0, "bench"))
        if not result.success:
            raise RuntimeError(result.error)

    return call


def _cli_batch(
    project: Path,
    url: str,
    lines: Path,
    concurrency: int,
    service: str = SERVICE,
    timeout: float = 120,
) -> float:
    """Seconds of `toolctl run SERVICE --batch LINES` (a subprocess); every line must succeed."""
    command = [sys.executable, "-m", "toolctl", "run", service, "--batch", str(lines)]
    command += ["--concurrency", str(concurrency), "--registry", str(project / "registry")]
    command += ["--pulsar-url", url]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    elapsed = time.perf_counter() - started
    results = [json.loads(line) for line in done.stdout.splitlines()]
    if done.returncode != 0 or not all(r["success"] for r in results):
        raise RuntimeError(f"batch failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return elapsed


def _library_batch(caller: Caller, spec: ToolSpec, lines: list[str], n: int) -> float:
    started = time.perf_counter()
    results = list(caller.batch(spec, lines, concurrency=n, timeout=30.0, user="bench"))
    elapsed = time.perf_counter() - started
    if not all(r.success for r in results):
        raise RuntimeError("library batch had failures")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequential", type=int, default=500, help="sequential calls a round")
    parser.add_argument("--calls", type=int, default=2000, help="calls of a batch")
    parser.add_argument("--window", type=int, default=64, help="in flight (batch --concurrency)")
    parser.add_argument("--worker-concurrency", type=int, default=4, help="the worker's -c")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="toolctl-bench-") as temporary:
        project = Path(temporary)
        (project / "registry").mkdir()
        descriptor = project / "registry" / "bench.toml"
        descriptor.write_text(REGISTRY)
        # an hour old: a file changed within the last seconds is re-read on every run
        os.utime(descriptor, (time.time() - 3600, time.time() - 3600))
        (project / "benchecho.py").write_text(HANDLER)
        lines = [json.dumps({"n": n}) for n in range(args.calls)]
        (project / "batch.jsonl").write_text("\n".join(lines) + "\n")
        (project / "one.jsonl").write_text(lines[0] + "\n")
        os.environ["XDG_CACHE_HOME"] = str(project / "cache")
        concurrency = args.worker_concurrency
        with (
            broker.running_in(project / "broker") as url,
            running_worker(project, url, concurrency),
        ):
            settings = Settings.load([project / "registry"], pulsar_url=url, user="bench")
            spec = resolve(Registry.open(settings), SERVICE)
            figures: dict[str, list[float]] = {}
            _cli_batch(project, url, project / "one.jsonl", 1)  # builds the registry cache
            for _ in range(args.rounds):
                # one side subscribed at a time: an idle subscriber to the same response
                # topic would still receive (and pay for) every answer of the other side
                for name, value in _round(args, url, settings, spec, project, lines).items():
                    figures.setdefault(name, []).append(value)
    _report(args, figures)


def _round(
    args: argparse.Namespace,
    url: str,
    settings: Settings,
    spec: ToolSpec,
    project: Path,
    lines: list[str],
) -> dict[str, float]:
    figures: dict[str, float] = {}
    raw = RawCaller(url)
    try:
        _p50(raw.call, 50)  # warm-up
        figures["raw"] = _p50(raw.call, args.sequential)
        raw.pipelined(200, args.window)
        figures["pipelined"] = args.calls / raw.pipelined(args.calls, args.window)
    finally:
        raw.close()
    caller = Caller(settings, Registry.open(settings))
    runner = caller.runner(spec.runtime)
    call = _runner_call(runner, spec)
    try:
        _p50(call, 50)  # warm-up: connect, subscribe
        figures["toolctl"] = _p50(call, args.sequential)
        _library_batch(caller, spec, lines[:200], args.window)
        elapsed = _library_batch(caller, spec, lines, args.window)
        figures["library"] = args.calls / elapsed
    finally:
        caller.close()
    figures["cli_one"] = _cli_batch(project, url, project / "one.jsonl", args.window)
    figures["cli"] = args.calls / _cli_batch(project, url, project / "batch.jsonl", args.window)
    return figures


def _report(args: argparse.Namespace, figures: dict[str, list[float]]) -> None:
    median = {name: statistics.median(values) for name, values in figures.items()}
    raw, ours, floor = median["raw"], median["toolctl"], median["pipelined"]
    cli, library, startup = median["cli"], median["library"], median["cli_one"]
    net = args.calls / max(args.calls / cli - startup, 1e-9)
    batch = f"x{args.calls}, concurrency {args.window}"
    rows = [
        ("(a) raw request/reply p50", f"{raw:.3f} ms"),
        ("(b) PulsarRunner.run p50", f"{ours:.3f} ms"),
        ("    ratio (b)/(a)  [target <= 1.5]", f"{ours / raw:.2f}"),
        (f"(c) raw pipelined x{args.calls}, window {args.window}", f"{floor:.0f} calls/s"),
        (f"(d) library Caller.batch {batch}", f"{library:.0f} calls/s"),
        ("    ratio (d)/(c)  [target >= 0.70]", f"{library / floor:.2f}"),
        (f"(e) toolctl run --batch {batch} (CLI)", f"{cli:.0f} calls/s"),
        ("    ratio (e)/(c)", f"{cli / floor:.2f}"),
        ("    CLI fixed cost (a --batch of one line)", f"{startup * 1000:.0f} ms"),
        ("    (e) less that fixed cost", f"{net:.0f} calls/s"),
        ("    ratio of that to (c)", f"{net / floor:.2f}"),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"medians of {args.rounds} rounds; worker --concurrency {args.worker_concurrency}")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
