"""toolctl on a real Apache Pulsar standalone: the floor, and scaling out over worker processes.

Needs a running standalone (``scripts/pulsar-standalone.sh start``); it is found through
``--pulsar-url``, ``TOOLCTL_TEST_PULSAR_URL`` or ``scripts/pulsar-standalone.sh url``.
Without one it says so and exits 0 (so ``make bench`` passes on a laptop without Java).
In one run, against that broker:

(a) the raw pulsar-client request/reply floor, one call at a time, to an echo worker
    (``toolctl worker``, a subprocess); p50 (the median of ``--rounds`` rounds, each
    alternating raw and toolctl);
(b) toolctl's ``PulsarRunner.run`` to the same worker, one call at a time; p50, and the
    ratio (b)/(a) (target: at most 1.5);
(c) ``toolctl run --batch`` of ``--calls`` calls (``--concurrency 64``) to a handler that
    sleeps 0.1 s, served by 1, 2 and 4 worker processes on one Shared subscription, each
    with ``--concurrency 1`` so that what grows is the number of processes; calls/s and the
    ratio to the ideal N / 0.1 s;
(d) the same batch on the embedded pulsar-lite broker with one worker, for comparison
    (pulsar-lite refuses a second worker process on a Shared subscription);
(e) at least once: ``PulsarRunner.run`` p50 to an echo service with ``delivery =
    "at-least-once"`` (persistent queues, acknowledged after the answer), and the sleep
    batch of (c) on such a service (``--sure-calls`` calls), where a worker holds only
    what it serves (a zero receive queue).

Usage::

    python bench/pulsar_cluster.py [--pulsar-url URL] [--calls 2000] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pulsar
import pulsar_client as floor

from toolctl.calls import Caller, resolve
from toolctl.pulsar import broker
from toolctl.registry.index import Registry
from toolctl.settings import Settings

ROOT = floor.ROOT
SLEEP = "bench-sleep"
SURE_SLEEP = "bench-sleep-sure"
SURE_ECHO = "bench-echo-sure"
SECONDS = 0.1
WINDOW = 64


def sleep_registry(suffix: str) -> str:
    return f"""
[[service]]
name = "{SLEEP}"
[service.pulsar]
request_queue = "non-persistent://tg/request/{SLEEP}-{suffix}"
response_queue = "non-persistent://tg/response/{SLEEP}-{suffix}"
handler = "benchsleep:invoke"

[[tool]]
name = "{SLEEP}"
service = "{SLEEP}"
timeout = 600
[[tool.arguments]]
name = "n"
type = "integer"
"""


def sure_registry(suffix: str) -> str:
    """The echo and the sleep service again, at least once, on persistent queues."""
    parts = []
    for name, handler, timeout in (
        (SURE_ECHO, "benchecho:invoke", 30),
        (SURE_SLEEP, "benchsleep:invoke", 600),
    ):
        parts.append(
            f"""
[[service]]
name = "{name}"
[service.pulsar]
request_queue = "persistent://tg/request/{name}-{suffix}"
response_queue = "persistent://tg/response/{name}-{suffix}"
handler = "{handler}"
delivery = "at-least-once"

[[tool]]
name = "{name}"
service = "{name}"
timeout = {timeout}
[[tool.arguments]]
name = "n"
type = "integer"
"""
        )
    return "".join(parts)


SLEEP_HANDLER = f"import time\n\ndef invoke(config, arguments, user):\n    time.sleep({SECONDS})\n"
SLEEP_HANDLER += "    return str(arguments['n'])\n"


def find_broker(given: str | None) -> str | None:
    if given:
        return given
    if os.environ.get("TOOLCTL_TEST_PULSAR_URL"):
        return os.environ["TOOLCTL_TEST_PULSAR_URL"]
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "pulsar-standalone.sh"), "url"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() if done.returncode == 0 else None


@contextmanager
def running_workers(
    project: Path, url: str, service: str, count: int, concurrency: int
) -> Iterator[None]:
    """``count`` `toolctl worker SERVICE` processes, until each has subscribed."""
    children: list[subprocess.Popen[bytes]] = []
    try:
        for n in range(count):
            ready = project / f"{service}-{n}.ready"
            ready.unlink(missing_ok=True)
            command = [sys.executable, "-m", "toolctl", "worker", service, "--registry"]
            command += [str(project / "registry"), "--pulsar-url", url]
            command += ["--concurrency", str(concurrency), "--ready-file", str(ready)]
            children.append(subprocess.Popen(command, cwd=project, stderr=subprocess.DEVNULL))
            deadline = time.monotonic() + 60
            while not ready.exists():
                if children[-1].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"worker {n} of {service} did not start")
                time.sleep(0.01)
        yield
    finally:
        for child in children:
            child.terminate()
        for child in children:
            child.wait(timeout=30)


def sleep_batch(project: Path, url: str, lines: Path, calls: int) -> float:
    """calls/s of `toolctl run bench-sleep --batch` (the CLI, a subprocess)."""
    return calls / floor._cli_batch(project, url, lines, WINDOW, service=SLEEP, timeout=3600)


def sequential(url: str, project: Path, calls: int, rounds: int) -> tuple[float, float]:
    """(raw p50 ms, toolctl p50 ms) against the echo worker: medians of alternating rounds,
    one side subscribed at a time, so that drift on a shared machine hits both alike."""
    raws, ours = [], []
    for _ in range(rounds):
        raw, own = _one_round(url, project, calls)
        raws.append(raw)
        ours.append(own)
    return statistics.median(raws), statistics.median(ours)


def _one_round(url: str, project: Path, calls: int) -> tuple[float, float]:
    raw = floor.RawCaller(url)
    try:
        floor._p50(raw.call, 50)  # warm-up
        raw_p50 = floor._p50(raw.call, calls)
    finally:
        raw.close()
    settings = Settings.load([project / "registry"], pulsar_url=url, user="bench")
    spec = resolve(Registry.open(settings), floor.SERVICE)
    runner = Caller(settings, Registry.open(settings)).runner(spec.runtime)
    call = floor._runner_call(runner, spec)
    try:
        floor._p50(call, 50)
        ours = floor._p50(call, calls)
    finally:
        # not Caller.close(): it kills this process's children not in toolctl's process
        # table, and the workers here are plain children
        runner.close()
    return raw_p50, ours


class RawPersistent(floor.RawCaller):
    """The raw request/reply floor on the at-least-once echo service's persistent queues."""

    def __init__(self, url: str, suffix: str) -> None:
        self.client = pulsar.Client(
            url,
            operation_timeout_seconds=10,
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull),
        )
        response = f"persistent://tg/response/{SURE_ECHO}-{suffix}"
        self.responses = self.client.subscribe(response, f"raw-{os.urandom(8).hex()}")
        self.producer = self.client.create_producer(
            f"persistent://tg/request/{SURE_ECHO}-{suffix}", batching_enabled=False
        )

    def close(self) -> None:
        self.responses.unsubscribe()
        super().close()


def sequential_sure(
    url: str, project: Path, suffix: str, calls: int, rounds: int
) -> tuple[float, float]:
    """(raw p50 ms, toolctl p50 ms) on the at-least-once echo service's persistent queues,
    medians of alternating rounds."""
    settings = Settings.load([project / "registry"], pulsar_url=url, user="bench")
    spec = resolve(Registry.open(settings), SURE_ECHO)
    raws, ours = [], []
    for _ in range(rounds):
        raw = RawPersistent(url, suffix)
        try:
            floor._p50(raw.call, 50)
            raws.append(floor._p50(raw.call, calls))
        finally:
            raw.close()
        runner = Caller(settings, Registry.open(settings)).runner(spec.runtime)
        call = floor._runner_call(runner, spec)
        try:
            floor._p50(call, 50)
            ours.append(floor._p50(call, calls))
        finally:
            runner.close()  # not Caller.close(), as in _one_round
    return statistics.median(raws), statistics.median(ours)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pulsar-url", help="a real Apache Pulsar broker")
    parser.add_argument("--sequential", type=int, default=300, help="sequential calls")
    parser.add_argument("--rounds", type=int, default=3, help="sequential rounds")
    parser.add_argument("--calls", type=int, default=2000, help="calls of a sleep batch")
    parser.add_argument("--workers", default="1,2,4", help="worker process counts")
    parser.add_argument("--no-lite", action="store_true", help="skip the pulsar-lite batch")
    parser.add_argument(
        "--sure-calls", type=int, default=500, help="calls of the at-least-once sleep batch"
    )
    args = parser.parse_args()
    url = find_broker(args.pulsar_url)
    if not url:
        print(
            "skipped: no real Apache Pulsar broker is running "
            "(scripts/pulsar-standalone.sh start, or --pulsar-url)"
        )
        return 0
    counts = [int(n) for n in args.workers.split(",") if n]
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="toolctl-bench-cluster-") as temporary:
        project = Path(temporary)
        (project / "registry").mkdir()
        suffix = os.urandom(4).hex()
        descriptor = project / "registry" / "bench.toml"
        descriptor.write_text(floor.REGISTRY + sleep_registry(suffix) + sure_registry(suffix))
        os.utime(descriptor, (time.time() - 3600, time.time() - 3600))
        (project / "benchecho.py").write_text(floor.HANDLER)
        (project / "benchsleep.py").write_text(SLEEP_HANDLER)
        lines = project / "sleep.jsonl"
        lines.write_text("".join(json.dumps({"n": n}) + "\n" for n in range(args.calls)))
        os.environ["XDG_CACHE_HOME"] = str(project / "cache")

        with running_workers(project, url, floor.SERVICE, 1, concurrency=4):
            raw, ours = sequential(url, project, args.sequential, args.rounds)
        rows += [
            ("(a) raw request/reply p50", f"{raw:.3f} ms"),
            ("(b) PulsarRunner.run p50", f"{ours:.3f} ms"),
            ("    ratio (b)/(a)  [target <= 1.5]", f"{ours / raw:.2f}"),
        ]
        for count in counts:
            with running_workers(project, url, SLEEP, count, concurrency=1):
                rate = sleep_batch(project, url, lines, args.calls)
            ideal = count / SECONDS
            rows.append(
                (
                    f"(c) --batch x{args.calls}, {SECONDS} s handler, {count} worker(s)",
                    f"{rate:.1f} calls/s = {rate / ideal:.2f} of ideal {ideal:.0f}",
                )
            )
        with running_workers(project, url, SURE_ECHO, 1, concurrency=4):
            sure_raw, sure = sequential_sure(url, project, suffix, args.sequential, args.rounds)
        rows += [
            ("(e) raw request/reply p50, persistent queues", f"{sure_raw:.3f} ms"),
            ("(e) at-least-once PulsarRunner.run p50", f"{sure:.3f} ms"),
            ("    ratio to the persistent floor", f"{sure / sure_raw:.2f}"),
        ]
        sure_lines = project / "sure.jsonl"
        sure_lines.write_text("".join(json.dumps({"n": n}) + "\n" for n in range(args.sure_calls)))
        for count in counts if args.sure_calls else []:
            with running_workers(project, url, SURE_SLEEP, count, concurrency=1):
                rate = args.sure_calls / floor._cli_batch(
                    project, url, sure_lines, WINDOW, service=SURE_SLEEP, timeout=3600
                )
            ideal = count / SECONDS
            rows.append(
                (
                    f"(e) at-least-once --batch x{args.sure_calls}, {count} worker(s)",
                    f"{rate:.1f} calls/s = {rate / ideal:.2f} of ideal {ideal:.0f}",
                )
            )
        if not args.no_lite:
            with (
                broker.running_in(project / "lite-broker") as lite,
                running_workers(project, lite, SLEEP, 1, concurrency=1),
            ):
                rate = sleep_batch(project, lite, lines, args.calls)
            rows.append(
                (
                    "(d) the same on pulsar-lite, 1 worker",
                    f"{rate:.1f} calls/s = {rate * SECONDS:.2f} of ideal {1 / SECONDS:.0f}",
                )
            )
    width = max(len(name) for name, _ in rows)
    print(f"Apache Pulsar at {url}; workers run with --concurrency 1, the batch with {WINDOW}")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
