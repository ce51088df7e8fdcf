"""Latency floor of a TrustGraph-style request/response round trip over pulsar-lite.

Needs ``pulsar-client``, ``pulsar-lite`` and toolctl (for the broker's lifecycle). It

1. starts the pulsar-lite broker with ``toolctl.pulsar.broker`` on a free 127.0.0.1
   port, its state in a temporary directory (as ``toolctl broker start`` would);
2. runs an echo responder thread with its own client: a consumer on the request
   topic with the Shared subscription ``{service}-request`` that answers each
   request on the response topic with the request's ``id`` property and the body
   ``{"error": null, "response": <arguments>, "end_of_stream": true}``;
3. measures, with a separate client and a single long-lived response consumer
   that is subscribed before anything is sent:
   (a) sequential calls: p50/p90/p99 of the round trip over ``--calls`` calls;
   (b) pipelined calls: throughput of ``--pipelined`` calls with at most
       ``--window`` in flight, sent with ``send_async``;
4. prints a short table and stops the broker.

Both producers are unbatched (``batching_enabled=False``): batching would add up
to its publish delay to every call. The responder is a thread of this process,
so the caller and the responder share the GIL; a worker in another process
would be at least this fast.

Usage::

    python bench/pulsar_floor.py [--calls 500] [--pipelined 2000] [--window 64]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from toolctl.pulsar import broker

SERVICE = "floor-echo"
REQUEST_TOPIC = f"non-persistent://tg/request/{SERVICE}"
RESPONSE_TOPIC = f"non-persistent://tg/response/{SERVICE}"
WARMUP_CALLS = 20
RECEIVE_POLL_MS = 100


@contextmanager
def running_broker() -> Iterator[tuple[str, float]]:
    """pulsar-lite through toolctl.pulsar.broker, state in a temporary directory.

    Yields (service URL, start-up seconds: launch until it accepts TCP).
    """
    with tempfile.TemporaryDirectory(prefix="pulsar-floor-") as workdir:
        started = time.perf_counter()
        with broker.running_in(Path(workdir)) as url:
            yield url, time.perf_counter() - started


def _client(url: str) -> Any:
    # The C++ client logs INFO lines to stdout by default; send errors to /dev/null.
    return pulsar.Client(
        url,
        operation_timeout_seconds=5,
        connection_timeout_ms=2000,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull),
    )


def run_responder(url: str, ready: threading.Event, stop: threading.Event) -> None:
    """Echo worker: answer every request with its arguments as the response."""
    client = _client(url)
    try:
        consumer = client.subscribe(
            REQUEST_TOPIC, f"{SERVICE}-request", consumer_type=pulsar.ConsumerType.Shared
        )
        producer = client.create_producer(RESPONSE_TOPIC, batching_enabled=False)
        ready.set()
        while not stop.is_set():
            try:
                msg = consumer.receive(timeout_millis=RECEIVE_POLL_MS)
            except pulsar.Timeout:
                continue
            consumer.acknowledge(msg)
            request = json.loads(msg.data())
            body = {"error": None, "response": request["arguments"], "end_of_stream": True}
            producer.send_async(
                json.dumps(body).encode(), None, properties={"id": msg.properties()["id"]}
            )
        producer.flush()
    finally:
        client.close()


def _request_body(n: int) -> bytes:
    body = {"user": "bench", "config": "{}", "arguments": json.dumps({"n": n})}
    return json.dumps(body).encode()


def sequential(producer: Any, responses: Any, calls: int) -> list[float]:
    """Send one request at a time; return per-call latencies in seconds."""
    latencies: list[float] = []
    for n in range(calls):
        call_id = str(uuid.uuid4())
        started = time.perf_counter()
        producer.send(_request_body(n), properties={"id": call_id})
        while True:
            msg = responses.receive(timeout_millis=5000)
            responses.acknowledge(msg)
            if msg.properties().get("id") != call_id:
                continue
            if json.loads(msg.data())["end_of_stream"]:
                break
        latencies.append(time.perf_counter() - started)
    return latencies


def pipelined(producer: Any, responses: Any, calls: int, window: int) -> tuple[float, list[float]]:
    """Keep up to ``window`` calls in flight; return (elapsed seconds, latencies)."""
    slots = threading.Semaphore(window)
    sent_at: dict[str, float] = {}
    latencies: list[float] = []
    lock = threading.Lock()
    errors: list[str] = []

    def reader() -> None:
        while len(latencies) < calls:
            try:
                msg = responses.receive(timeout_millis=5000)
            except pulsar.Timeout:
                errors.append(f"timed out with {calls - len(latencies)} calls outstanding")
                return
            responses.acknowledge(msg)
            with lock:
                started = sent_at.pop(msg.properties().get("id", ""), None)
            if started is None or not json.loads(msg.data())["end_of_stream"]:
                continue
            latencies.append(time.perf_counter() - started)
            slots.release()

    def on_sent(result: Any, _msg_id: Any) -> None:
        if result != pulsar.Result.Ok:
            errors.append(f"send failed: {result}")

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    started = time.perf_counter()
    for n in range(calls):
        if not slots.acquire(timeout=10) or errors:
            break
        call_id = str(uuid.uuid4())
        with lock:
            sent_at[call_id] = time.perf_counter()
        producer.send_async(_request_body(n), on_sent, properties={"id": call_id})
    producer.flush()
    thread.join(timeout=30)
    elapsed = time.perf_counter() - started
    if errors or len(latencies) != calls:
        raise RuntimeError(f"pipelined run incomplete ({len(latencies)}/{calls}): {errors[:3]}")
    return elapsed, latencies


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="sequential calls")
    parser.add_argument("--pipelined", type=int, default=2000, help="pipelined calls")
    parser.add_argument("--window", type=int, default=64, help="max pipelined calls in flight")
    args = parser.parse_args()

    with running_broker() as (url, startup_s):
        ready, stop = threading.Event(), threading.Event()
        responder = threading.Thread(target=run_responder, args=(url, ready, stop), daemon=True)
        responder.start()
        if not ready.wait(10):
            raise RuntimeError("responder did not start")

        t0 = time.perf_counter()
        client = _client(url)
        client_ms = (time.perf_counter() - t0) * 1000
        try:
            # Subscribe to the responses before the first request is sent:
            # non-persistent topics drop messages that nobody is subscribed to.
            responses = client.subscribe(RESPONSE_TOPIC, f"floor-{uuid.uuid4().hex}")
            producer = client.create_producer(REQUEST_TOPIC, batching_enabled=False)
            sequential(producer, responses, WARMUP_CALLS)
            seq = sequential(producer, responses, args.calls)
            elapsed, pipe = pipelined(producer, responses, args.pipelined, args.window)
        finally:
            t0 = time.perf_counter()
            client.close()
            close_ms = (time.perf_counter() - t0) * 1000
            stop.set()
            responder.join(timeout=5)

    rows = [
        ("broker start -> TCP accept", f"{startup_s * 1000:.1f} ms"),
        ("pulsar.Client() / close()", f"{client_ms:.2f} ms / {close_ms:.2f} ms"),
        (
            f"sequential x{args.calls} p50 / p90 / p99",
            f"{_pct(seq, 50):.3f} / {_pct(seq, 90):.3f} / {_pct(seq, 99):.3f} ms",
        ),
        ("sequential calls/s", f"{len(seq) / sum(seq):.0f}"),
        (
            f"pipelined x{args.pipelined} (window {args.window}) calls/s",
            f"{len(pipe) / elapsed:.0f}",
        ),
        (
            "pipelined latency p50 / p90",
            f"{_pct(pipe, 50):.3f} / {_pct(pipe, 90):.3f} ms",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
