"""`toolctl worker`: host a tool-service handler (or a registered tool) on Pulsar.

A worker subscribes to its service's request queue with the Shared subscription
``{service}-request``, so every worker of a service splits the calls, and answers on the
response queue with each request's ``id``, in TrustGraph's wire format (see
``toolctl.pulsar.wire``). A handler is ``invoke(config, arguments, user)``, sync or
async, returning text, JSON-able data, or an iterator of text chunks (a stream). Its
exceptions become ``{"type": "tool-service-error", "message": ...}`` answers. While it
runs it may call ``report_progress`` and ``report_log``: to a request that takes progress
(its ``progress`` property) each becomes a partial response before the final one; to any
other request (a TrustGraph client's) nothing is sent.

How many requests a worker holds depends on the request topic. On a persistent topic the
broker keeps what no worker has room for, so a worker asks for one request per idle
handler thread (a zero receive queue: it holds at most ``concurrency``, and an idle worker
gets the next one, not a busy one). On a non-persistent topic the broker *drops* a request
no consumer has room for, so a worker keeps a large receive queue there.

Delivery: at most once (TrustGraph's way) acknowledges a persistent request when it is
taken; at least once acknowledges it only after its answer is sent, so the broker gives
the requests of a worker that died (or whose link was cut) to another worker. A request
whose ``deadline`` property has passed is acknowledged and skipped: its caller gave up.

Every request served is recorded (``toolctl.records``, caller ``worker``): a span that
continues the request's ``traceparent`` property, a history row, and the worker's metrics
(`worker --metrics-port`), with the backlog it sees on a persistent request queue: the
requests published after the last one it took (NaN where it cannot tell: a non-persistent
topic keeps no backlog). A hosting whose handler calls through ``toolctl.calls``
(``recorded``: `worker --tool`) is recorded there instead, under the same origin.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any

from toolctl.errors import TimedOut, TransportUnavailable
from toolctl.processes import ProcessRecord, launch_detached
from toolctl.pulsar.client import needs_acknowledging, open_client, translate
from toolctl.pulsar.hosting import AT_LEAST_ONCE, Hosting
from toolctl.pulsar.invoking import Invoker
from toolctl.pulsar.progress import (
    REPORTER,
    ProgressReporter,
    close_reporter,
    report_log,
    report_progress,
)
from toolctl.pulsar.wire import (
    ERROR_TYPE,
    STOPPED_TYPE,
    TIMED_OUT_TYPE,
    decode_request,
    encode_response,
    expired,
    takes_progress,
)
from toolctl.records import Origin
from toolctl.records.context import CURRENT_ORIGIN, Finished, Hosted
from toolctl.records.recorder import Recorder
from toolctl.settings import Settings

__all__ = ["AnswerTooBig", "Worker", "report_log", "report_progress", "start_detached"]
"""``report_progress`` and ``report_log`` are a handler's API (docs/reference/pulsar.md),
imported from here; they live in ``toolctl.pulsar.progress``."""

Log = Callable[[str], None]
POLL_MS = 250
RECEIVE_QUEUE = 10_000
"""Requests a worker may hold on a non-persistent topic (the broker drops what overflows)."""
SYNC_SEND_BYTES = 64 * 1024
"""Answers at least this big are sent synchronously, so one over the broker's limit is seen."""
NACK_DELAY_MS = 1000
WORKER = Origin("worker")


class Worker:
    """Serves one Hosting with ``concurrency`` calls in flight, until ``stop``."""

    def __init__(
        self,
        hosting: Hosting,
        url: str,
        concurrency: int,
        log: Log,
        *,
        verbose: bool = False,
        recorder: Recorder | None = None,
    ) -> None:
        self.hosting, self.url, self.concurrency, self.log = hosting, url, concurrency, log
        self.verbose = verbose
        self.recorder = recorder
        self._last_taken: Any = None
        self._client: Any = None
        self._consumer: Any = None
        self._producer: Any = None
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._invoker = Invoker()
        self._ok: Any = None
        self._acknowledge = needs_acknowledging(hosting.request_queue)
        # a persistent topic keeps what no worker has room for: hold only what is served
        self._zero_queue = self._acknowledge
        self._at_least_once = hosting.delivery == AT_LEAST_ONCE
        self._busy = 0  # requests taken and not yet answered (or acknowledged)
        self._busy_lock = threading.Lock()
        self._answering: set[str] = set()  # the call ids being served now
        self._abandoned: set[str] = set()  # answered by stop(): the handler's answer is dropped

    def start(self, timeout: float = 15.0) -> None:
        """Connect, subscribe and start serving; TransportUnavailable if the broker is not there.

        15 s, not a caller's 5: a real Apache Pulsar on a busy host has been measured taking
        over 5 s to grant a subscription whose previous consumer was just killed."""
        import pulsar

        self._ok = pulsar.Result.Ok
        self._client = open_client(self.url, timeout)
        try:
            self._consumer = self._client.subscribe(
                self.hosting.request_queue,
                self.hosting.subscription,
                consumer_type=pulsar.ConsumerType.Shared,
                # a non-persistent topic drops what a consumer has no room for: room for many;
                # a persistent one keeps it: one request per idle thread (a zero queue)
                receiver_queue_size=0 if self._zero_queue else RECEIVE_QUEUE,
                # at least once: an answer that could not be sent is retried soon
                negative_ack_redelivery_delay_ms=NACK_DELAY_MS,
            )
            self._producer = self._client.create_producer(
                self.hosting.response_queue,
                batching_enabled=False,
                block_if_queue_full=True,
                send_timeout_millis=10_000,
            )
        except pulsar.PulsarException as exc:
            self._client.close()
            if isinstance(exc, pulsar.Timeout):  # it accepted TCP, then refused to answer
                raise _not_subscribed(self.url, self.hosting) from exc
            raise translate(exc, self.url, f"subscribing to {self.hosting.request_queue}") from exc
        for number in range(self.concurrency):
            thread = threading.Thread(
                target=self._serve, name=f"toolctl-worker-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self, grace: float) -> bool:
        """Take no new calls, let the ones in flight answer (up to ``grace`` s), disconnect.

        Returns whether every call in flight finished.
        """
        with self._busy_lock:  # from here on no thread takes a request (see _serve)
            self._stopping.set()
        deadline = time.monotonic() + grace
        if self._at_least_once:
            # acknowledging needs the consumer: let the calls in flight answer and be
            # acknowledged first; closing then hands what is unacknowledged to other workers
            while self._busy and time.monotonic() < deadline:
                time.sleep(0.01)
        if self._consumer is not None:
            with suppress(Exception):
                self._consumer.close()  # wakes idle receivers; the broker routes elsewhere
        for thread in self._threads:  # each ends after the call it is in
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        drained = not any(thread.is_alive() for thread in self._threads)
        if not drained:
            self.give_up(f"it ran past the {grace:g} s drain")
        if self._producer is not None:
            with suppress(Exception):
                self._producer.flush()
        self._invoker.close()
        if self._client is not None:
            self._client.close()
        self.hosting.close()
        return drained

    def give_up(self, why: str) -> None:
        """Answer the calls still running with an error, so their callers hear now rather
        than at their timeout: past the drain, or as a second signal ends the process at
        once. Not at least once: there another worker gets them (nothing acknowledged)."""
        if self._at_least_once or self._producer is None:
            return
        with self._busy_lock:
            unanswered, self._abandoned = sorted(self._answering), set(self._answering)
        reason = f"the worker stopped before the call finished ({why})"
        for call_id in unanswered:
            with suppress(Exception):
                self._producer.send(
                    encode_response(error=(STOPPED_TYPE, reason)), properties={"id": call_id}
                )
            self.log(f"call {call_id}: {reason}")

    def _serve(self) -> None:
        import pulsar

        consumer = self._consumer
        while not self._stopping.is_set():
            try:
                # a zero receive queue allows no timeout: stop() closes the consumer instead
                message = consumer.receive() if self._zero_queue else consumer.receive(POLL_MS)
            except pulsar.Timeout:
                continue
            except pulsar.PulsarException:
                if self._stopping.is_set():
                    return
                self._stopping.wait(0.1)  # disconnected: the client reconnects by itself
                continue
            with self._busy_lock:
                if self._stopping.is_set() and self._at_least_once:
                    return  # not taken: unacknowledged, it goes to another worker on close
                self._busy += 1
            try:
                self._take(message)
            finally:
                with self._busy_lock:
                    self._busy -= 1

    def _take(self, message: Any) -> None:
        """Serve one request, acknowledging it as its service's delivery says."""
        properties = message.properties()
        call_id = properties.get("id")
        self._last_taken = message.message_id()
        if expired(properties):
            if self.verbose:
                self.log(f"call {call_id} skipped: its caller gave up (past its deadline)")
            self._ack(message)
            return
        if not self._at_least_once:
            self._ack(message)  # at most once: taken is taken
        origin = Origin("worker", None, properties.get("traceparent"), call_id)
        try:
            self._handle(
                call_id,
                message.data(),
                message if self._at_least_once else None,
                origin,
                partials=takes_progress(properties),
            )
        except Exception as exc:  # the producer itself failed: the caller will time out
            self.log(f"could not answer a call: {type(exc).__name__}: {exc}")
            if self._at_least_once:
                self._settle(message, ok=False)

    def _ack(self, message: Any) -> None:
        if self._acknowledge:
            with suppress(Exception):
                self._consumer.acknowledge(message)

    def _settle(self, message: Any, *, ok: bool) -> None:
        """At least once: acknowledge a request whose answer is stored, or have it retried."""
        with suppress(Exception):
            if ok:
                self._consumer.acknowledge(message)
            else:
                self._consumer.negative_acknowledge(message)  # another try, later

    def _handle(
        self,
        call_id: str | None,
        body: bytes,
        request: Any = None,
        origin: Origin = WORKER,
        *,
        partials: bool = False,
    ) -> None:
        """Answer one request: the handler's text or chunks, or its error, and record it.

        With ``request`` (at least once), it is acknowledged once the last answer is stored.
        With ``partials`` (the request takes progress), what the handler reports goes out
        as partial responses before its answer.
        """
        if not call_id:
            self.log(f"ignored a request without an id on {self.hosting.request_queue}")
            return
        with self._busy_lock:
            self._answering.add(call_id)
        try:
            self._answer(call_id, body, request, origin, partials=partials)
        finally:
            with self._busy_lock:
                self._answering.discard(call_id)

    def _answer(
        self, call_id: str, body: bytes, request: Any, origin: Origin, *, partials: bool
    ) -> None:
        recording = None
        sent = 0
        try:
            config, arguments, user = decode_request(body)
            if self.recorder is not None and not self.hosting.recorded:
                hosted = Hosted(self.hosting.name, "pulsar")
                recording = self.recorder.begin(hosted, arguments, origin)
            token = CURRENT_ORIGIN.set(origin)
            reporter = (
                ProgressReporter(lambda body: self._send(call_id, body)) if partials else None
            )
            reporting = REPORTER.set(reporter)
            try:
                answer = self._invoker.invoke(self.hosting.handler, config, arguments, user)
                if isinstance(answer, str):
                    close_reporter(reporter)  # nothing reported after the answer
                    sent = len(answer)
                    self._send(call_id, encode_response(answer), request)
                else:
                    for chunk in answer:
                        sent += len(chunk)
                        self._send(call_id, encode_response(chunk, end_of_stream=False))
                    close_reporter(reporter)
                    self._send(call_id, encode_response(""), request)
            finally:
                close_reporter(reporter)
                REPORTER.reset(reporting)
                CURRENT_ORIGIN.reset(token)
        except BaseException as exc:  # sys.exit() in a handler too: the thread serves on
            reason = str(exc) or type(exc).__name__
            if not isinstance(exc, Exception):  # SystemExit, KeyboardInterrupt
                said = f": {exc}" if str(exc) else ""
                reason = f"the handler raised {type(exc).__name__}{said}"
            kind = ERROR_TYPE
            if isinstance(exc, TimedOut):  # a hosted tool past its descriptor's timeout
                kind, reason = TIMED_OUT_TYPE, exc.message  # its hint is for this host
            self.log(f"call {call_id} failed: {reason}")
            self._send(call_id, encode_response(error=(kind, reason)), request)
            self._recorded(recording, Finished(False, error=reason))
            return
        self._recorded(recording, Finished(True, exit_code=0), sent)
        if self.verbose:
            self.log(f"call {call_id} from {user}: answered")

    def _recorded(self, recording: Any, finished: Finished, sent: int = 0) -> None:
        if recording is not None and self.recorder is not None:
            self.recorder.end(recording, finished, sent_bytes=sent)

    def backlog(self) -> float:
        """Requests published on a persistent request queue after the last one this worker
        took (same ledger); NaN when that cannot be told."""
        consumer, taken = self._consumer, self._last_taken
        if consumer is None or taken is None:
            return math.nan
        try:
            last = consumer.get_last_message_id()
            if last.ledger_id() != taken.ledger_id():
                return math.nan
            return float(max(0, last.entry_id() - taken.entry_id()))
        except Exception:
            return math.nan

    def _send(self, call_id: str, body: bytes, request: Any = None) -> None:
        """Send one response; with ``request`` (at least once) acknowledge that once stored.

        A body over the broker's message size limit raises AnswerTooBig (the handler's
        answer becomes an error answer naming the limit, not a silent loss).
        """
        if call_id in self._abandoned:  # stop() answered it already
            return
        properties = {"id": call_id}
        if len(body) >= SYNC_SEND_BYTES:
            import pulsar

            try:
                self._producer.send(body, properties=properties)
            except pulsar.MessageTooBig:
                raise AnswerTooBig(len(body)) from None
            if request is not None:
                self._settle(request, ok=True)
            return

        def sent(result: Any, _message_id: Any) -> None:
            ok = result == self._ok
            if not ok:
                self.log(
                    f"could not answer call {call_id} on {self.hosting.response_queue}: {result}"
                )
            if request is not None:
                self._settle(request, ok=ok)
                with self._busy_lock:
                    self._busy -= 1

        if request is None:
            self._producer.send_async(body, sent if self.verbose else None, properties=properties)
            return
        with self._busy_lock:
            self._busy += 1  # until the answer is stored and the request acknowledged
        try:
            self._producer.send_async(body, sent, properties=properties)
        except Exception:
            with self._busy_lock:
                self._busy -= 1
            raise


class AnswerTooBig(Exception):
    """A response is larger than the broker takes in one message."""

    def __init__(self, size: int) -> None:
        super().__init__(
            f"the answer is {size:,} bytes as a message, more than the Pulsar broker takes "
            "in one message (its maxMessageSize, 5 MiB by default): return less, or a "
            "reference to the data"
        )


def _not_subscribed(url: str, hosting: Hosting) -> TransportUnavailable:
    from toolctl.pulsar.client import shown

    return TransportUnavailable(
        f"the broker at {shown(url)} did not grant the subscription '{hosting.subscription}' on "
        f"{hosting.request_queue}; if it is the embedded broker (pulsar-lite), another worker "
        "process holds it: pulsar-lite allows one worker process per service",
        hint="stop the other worker, or scale with --concurrency N in one worker; several "
        "worker processes need a real Apache Pulsar",
    )


def start_detached(
    settings: Settings,
    name: str,
    command: Sequence[str],
    timeout: float = 30.0,
    drain: float | None = None,
) -> tuple[ProcessRecord, bool]:
    """Run ``command`` (a ``toolctl worker`` line) in the background unless ``name`` runs;
    ``drain``: the seconds it may take to stop (`service down` waits that long).

    Returns (its record, whether it was started now) once the worker serves, which it
    reports in its ``--ready-file``; if it cannot start, its own error is raised here.
    """
    from toolctl.errors import UsageError
    from toolctl.processes.launching import registry_origin
    from toolctl.pulsar.client import refuse_query
    from toolctl.urls import hide_passwords

    refuse_query(settings.pulsar_url)  # before it goes on a command line and in a record
    record, started = launch_detached(
        settings,
        name,
        "worker",
        command,
        url=settings.pulsar_url,
        timeout=timeout,
        origin=registry_origin(settings),
        drain=drain,
    )
    if not started and record.argv[: len(command)] != list(command):
        # "already running" (exit 0) would tell a script that its worker serves on the
        # broker, with the options, it asked for: it does not
        given = record.argv[record.argv.index("worker") + 1 : len(command)]
        raise UsageError(
            f"{name} already runs with other options (pid {record.pid}): "
            + " ".join(hide_passwords(item) for item in given),
            hint=f"stop it first (toolctl service down {name}), then start it again",
        )
    return record, started
