"""An OTLP/HTTP trace receiver for the tests: real OTLP protobuf, decoded with the official
``opentelemetry-proto`` package, on a free 127.0.0.1 port.

It does what a collector's ``otlp`` receiver does for ``POST /v1/traces`` (protobuf or
gzip'd protobuf in, an ``ExportTraceServiceResponse`` out) and keeps the spans it got.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class ReceivedSpan(NamedTuple):
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    error: bool


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


class Receiver:
    """Spans received so far; ``wait_for(n)`` until at least ``n`` have arrived."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.lock = threading.Condition()
        self.url = ""

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    found.append(
                        ReceivedSpan(
                            str(resource.get("service.name")),
                            span.name,
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            span.parent_span_id.hex(),
                            span.kind,
                            {a.key: _value(a.value) for a in span.attributes},
                            span.status.code == 2,
                        )
                    )
        with self.lock:
            self.requests += 1
            self.spans += found
            self.lock.notify_all()

    def wait_for(self, count: int, timeout: float = 30) -> list[ReceivedSpan]:
        deadline = time.monotonic() + timeout
        with self.lock:
            while len(self.spans) < count and time.monotonic() < deadline:
                self.lock.wait(0.1)
            return list(self.spans)


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces" or "protobuf" not in (
                self.headers.get("Content-Type") or ""
            ):
                self.send_error(404 if self.path != "/v1/traces" else 415)
                return
            receiver.take(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
