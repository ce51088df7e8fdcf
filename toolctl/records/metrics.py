"""Prometheus metrics of a long-running door (`serve` at /metrics, `worker --metrics-port`).

With ``prometheus-client`` (imported here only: servers and workers load this module, a
`toolctl run` never does), on a registry of toolctl's own, not the library's global one:

* ``toolctl_tool_calls_total{tool, runtime, caller, outcome}``: calls by how they ended
  (``outcome`` is ok, failed, invalid, timeout, unavailable, interrupted, ...);
* ``toolctl_tool_call_duration_seconds{tool, runtime}``: a histogram of call durations;
* ``toolctl_tool_calls_in_flight{tool, runtime}``: calls running now;
* ``toolctl_server_calls_shed_total``: calls a server turned away before they began (its
  queue full: HTTP 503), which no tool's counts hold (no tool label: the name a refused
  request gives is not checked, and would let a client grow the label set);
* ``toolctl_worker_queue_backlog{queue}``: requests waiting on a worker's request queue
  that it knows of (see ``toolctl.pulsar.worker``), read at each scrape.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from toolctl.records import NEVER_RAN

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
"""Seconds: from a fast HTTP tool's few milliseconds to a container's minutes."""
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """The metrics of one process; every method is thread-safe and cheap (no I/O)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter(
            "toolctl_tool_calls",
            "Tool calls, by tool, runtime, caller and outcome.",
            ("tool", "runtime", "caller", "outcome"),
            registry=self.registry,
        )
        self.duration = Histogram(
            "toolctl_tool_call_duration_seconds",
            "How long tool calls took, by tool and runtime.",
            ("tool", "runtime"),
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "toolctl_tool_calls_in_flight",
            "Tool calls running now, by tool and runtime.",
            ("tool", "runtime"),
            registry=self.registry,
        )
        self.shed = Counter(
            "toolctl_server_calls_shed",
            "Calls a server turned away before they began, its queue full.",
            registry=self.registry,
        )
        self._backlog: Gauge | None = None
        self._lock = threading.Lock()

    def started(self, tool: str, runtime: str) -> None:
        self.in_flight.labels(tool, runtime).inc()

    def finished(self, tool: str, runtime: str, caller: str, outcome: str, seconds: float) -> None:
        self.in_flight.labels(tool, runtime).dec()
        self.calls.labels(tool, runtime, caller, outcome).inc()
        if outcome not in NEVER_RAN:  # a refusal's microseconds pulled the latencies down
            self.duration.labels(tool, runtime).observe(seconds)

    def watch_backlog(self, queue: str, read: Callable[[], float]) -> None:
        """Report ``read()`` (requests waiting on ``queue``) at every scrape."""
        with self._lock:
            if self._backlog is None:
                self._backlog = Gauge(
                    "toolctl_worker_queue_backlog",
                    "Requests waiting on a worker's request queue, as the worker sees it.",
                    ("queue",),
                    registry=self.registry,
                )
        self._backlog.labels(queue).set_function(read)

    def exposition(self) -> bytes:
        """The text format a Prometheus server scrapes (``CONTENT_TYPE``)."""
        return generate_latest(self.registry)


def serve_metrics(metrics: Metrics, host: str, port: int) -> tuple[Any, threading.Thread]:
    """An HTTP server answering GET /metrics on ``host:port`` in a thread of its own
    (the worker's; `serve` has a route instead). Returns (server, thread); OSError when
    the port is taken."""
    from prometheus_client import start_http_server

    return start_http_server(port, addr=host, registry=metrics.registry)
