"""Announcements on Pulsar: a worker publishing its service's descriptors, a reader taking them.

An announcement is one message on a persistent topic (``DEFAULT_TOPIC``) keyed by service,
so topic compaction keeps the latest per service and N workers of one service are one
announcement. Its body is JSON: the service's and its tools' TrustGraph config items
(``tool-service/NAME``, ``tool/NAME``: the values ``tg-put-config-item`` takes), their
content hash, what the tools' descriptors say that TrustGraph's items do not carry
(``descriptors``: timeout, category and tags by tool name; apart from the items, so a
TrustGraph reader never takes them for config values), the worker's identity and host,
the time it was sent, its time to live and, when signed, the Ed25519 public key and
signature over the canonical JSON of everything else. A worker re-sends it every third of
its time to live (the heartbeat) and, on a clean stop, sends a signed stop (``stopped``:
an unsigned message proves nothing, and readers let only a message signed like the one
they keep supersede it), then an empty body under its key: a tombstone, which compaction
also keeps.

Nothing here decides what to believe: the registry verifies, trusts and expires
(``toolctl.registry.announced``). pulsar-client is imported inside functions only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from toolctl.pulsar.client import broker_hint, open_client, translate

DEFAULT_TOPIC = "persistent://tg/config/tool-descriptors"
DEFAULT_TTL = 30.0
"""Seconds an announcement lives without a heartbeat (``worker --announce-ttl``)."""
FORMAT = "toolctl-announcement/1"
READ_TIMEOUT = 2.0
"""Seconds a command gives the bounded read of the topic (``registry.announced``)."""


def canonical(value: Any) -> bytes:
    """The bytes a hash or a signature covers: sorted keys, no whitespace, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def content_hash(items: Sequence[Mapping[str, Any]]) -> str:
    return "sha256:" + hashlib.sha256(canonical(list(items))).hexdigest()


def signed_part(body: Mapping[str, Any]) -> bytes:
    """What the signature covers: the body without its signature."""
    return canonical({k: v for k, v in body.items() if k != "signature"})


class Signer(NamedTuple):
    """A public key and how to sign with its private half (``toolctl.signing.SigningKey``)."""

    public: str
    sign: Any  # Callable[[bytes], str]


DESCRIPTOR_FIELDS = ("timeout", "category", "tags")
"""What a tool's descriptor says that its TrustGraph item does not carry, announced beside it."""


def descriptor_fields(
    items: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The ``descriptors`` of an announcement: each announced tool's DESCRIPTOR_FIELDS that
    its descriptor gives, by tool name (tools left out of ``items`` are left out here)."""
    announced = {str(item["key"]).partition("/")[2] for item in items}
    fields: dict[str, dict[str, Any]] = {}
    for tool in tools:
        given = {k: tool[k] for k in DESCRIPTOR_FIELDS if tool.get(k) not in (None, [], "")}
        if tool["name"] in announced and given:
            fields[tool["name"]] = given
    return fields


def announcement(
    service: str,
    items: Sequence[Mapping[str, Any]],
    *,
    host: str,
    identity: str,
    ttl: float,
    signer: Signer | None,
    at: float | None = None,
    descriptors: Mapping[str, Mapping[str, Any]] | None = None,
    stopped: bool = False,
) -> dict[str, Any]:
    """The body of one announcement (signed when ``signer`` is given); ``stopped``: the one
    a worker sends as it stops cleanly, which readers believe only signed."""
    body: dict[str, Any] = {
        "format": FORMAT,
        "service": service,
        "items": list(items),
        "hash": content_hash(items),
        "identity": identity,
        "host": host,
        "at": round(time.time() if at is None else at, 3),
        "ttl": ttl,
    }
    if descriptors:
        body["descriptors"] = {name: dict(fields) for name, fields in descriptors.items()}
    if stopped:
        body["stopped"] = True
    if signer is not None:
        body["key"] = signer.public
        body["signature"] = signer.sign(signed_part(body))
    return body


def host_name() -> str:
    return socket.gethostname()


class Announcer:
    """Publishes one service's announcement now and every ``ttl / 3`` s, until stopped."""

    def __init__(
        self,
        url: str,
        service: str,
        items: Sequence[Mapping[str, Any]],
        *,
        ttl: float = DEFAULT_TTL,
        signer: Signer | None = None,
        topic: str = DEFAULT_TOPIC,
        descriptors: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.url, self.topic, self.service, self.items = url, topic, service, list(items)
        self.descriptors = descriptors
        self.ttl, self.signer = ttl, signer
        self.host = host_name()
        self.identity = f"{service}@{self.host}:{os.getpid()}"
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._client: Any = None
        self._producer: Any = None

    def start(self, timeout: float = 10.0) -> None:
        """Open a producer and send the first announcement (TransportUnavailable if not)."""
        self._client = open_client(self.url, timeout)
        try:
            self._producer = self._client.create_producer(
                self.topic, batching_enabled=False, send_timeout_millis=int(timeout * 1000)
            )
            self._send()
        except Exception as exc:
            self._client.close()
            raise translate(exc, self.url, f"announcing on {self.topic}") from exc
        self._thread = threading.Thread(target=self._beat, name="announcer", daemon=True)
        self._thread.start()

    def _send(self, *, stopped: bool = False) -> None:
        body = announcement(
            self.service,
            [] if stopped else self.items,
            host=self.host,
            identity=self.identity,
            ttl=self.ttl,
            signer=self.signer,
            descriptors=None if stopped else self.descriptors,
            stopped=stopped,
        )
        self._producer.send(canonical(body), partition_key=self.service)

    def _beat(self) -> None:
        while not self._stopping.wait(max(self.ttl / 3, 0.1)):
            try:
                self._send()
            except Exception:  # a broker away for a while: the next beat tries again
                continue

    def stop(self, *, tombstone: bool = True) -> None:
        """Stop heart-beating; a clean stop also says so: signed, the stop itself, left as
        its key's last value (a tombstone would let compaction erase it, and a replayed
        older announcement would then stand); unsigned, a tombstone (an empty body)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            if tombstone and self._producer is not None:
                if self.signer is not None:
                    self._send(stopped=True)
                else:
                    self._producer.send(b"", partition_key=self.service)
        except Exception:  # the broker is gone: the announcement expires instead
            pass
        finally:
            if self._client is not None:
                self._client.close()


class Received(NamedTuple):
    """One message of the topic: its key (the service), its body (b"" is a tombstone)."""

    service: str
    body: bytes


def _serialise(message_id: Any) -> str:
    return base64.b64encode(message_id.serialize()).decode()


def _for_readers(hint: str | None) -> str | None:
    """A broker hint as a reader of announcements needs it: the option naming the broker
    read is ``--announced`` (``--pulsar-url`` is where tools are called); another hint (a
    namespace to create) stays."""
    from toolctl.pulsar.client import BROKER_HINT, REMOTE_HINT

    if hint in (BROKER_HINT, REMOTE_HINT):
        return hint.replace("--pulsar-url", "--announced")
    return hint


def _read_hint(error: Any) -> Any:
    """``error`` (a ToolctlError) with its hint for a reader of announcements."""
    error.hint = _for_readers(error.hint)
    return error


def read(
    url: str, topic: str, after: str | None, timeout: float = READ_TIMEOUT
) -> tuple[list[Received], str | None]:
    """The messages after ``after`` (a position this returned before; None: from the
    start, the compacted view where the broker compacts), read for at most ``timeout`` s;
    and the position of the last. TransportUnavailable when the broker does not answer.

    The read runs in a thread of its own, and ``timeout`` bounds the wait for it whole:
    pulsar-client's own timeouts do not bound a lookup (an address that accepts TCP and
    never speaks Pulsar held a reader's creation for 7.5 s with a 2 s operation timeout).
    A read given up on ends by itself and closes its client; nothing waits for it."""
    from toolctl.errors import ToolctlError, TransportUnavailable
    from toolctl.pulsar.client import shown

    deadline = time.monotonic() + timeout
    outcome: list[Any] = []

    def work() -> None:
        try:
            client = _bare_client(url, timeout)
            try:
                outcome.append(_read(client, topic, after, deadline))
            finally:
                client.close()
        except Exception as exc:  # told in the waiting thread
            outcome.append(exc)

    reading = threading.Thread(target=work, name="announcements-read", daemon=True)
    reading.start()
    reading.join(timeout + 0.5)  # (what was read by the deadline still comes back)
    if not outcome:
        raise TransportUnavailable(
            f"the Pulsar broker at {shown(url)} did not answer within {timeout:g} s "
            f"while reading announcements on {topic}",
            hint=_for_readers(broker_hint(url)),
        )
    if isinstance(outcome[0], Exception):
        exc = outcome[0]
        if not isinstance(exc, ToolctlError):
            raise _read_hint(translate(exc, url, f"reading announcements on {topic}")) from exc
        raise _read_hint(exc)  # a bad URL, a broker that cannot be reached
    result: tuple[list[Received], str | None] = outcome[0]
    return result


def _bare_client(url: str, timeout: float) -> Any:
    """A client of pulsar-client's extension module itself (``_pulsar``), without the
    ``pulsar`` package around it: a command reads announcements before it does anything
    else, and the package (schemas, protobuf, logging) costs ~85 ms to import where the
    extension costs ~15 ms. The same TCP probe first, so a dead broker fails fast."""
    import _pulsar

    from toolctl.pulsar.client import bad_url, require_reachable

    require_reachable(url, timeout)
    conf = _pulsar.ClientConfiguration()
    conf.operation_timeout_seconds(max(1, math.ceil(timeout)))
    conf.connection_timeout(max(100, int(timeout * 1000)))
    conf.set_file_logger(_pulsar.LoggerLevel.Error, os.devnull)
    if url.startswith("pulsar+ssl"):
        import certifi

        conf.tls_trust_certs_file_path(certifi.where())
    try:
        return _pulsar.Client(url, conf)
    except ValueError:  # a host it cannot read: a user or password in it, a bad port
        raise bad_url(url) from None


def _open_reader(client: Any, topic: str, after: str | None, *, inclusive: bool = False) -> Any:
    """A reader after ``after`` (from the start when None) on a ``_pulsar`` client.
    pulsar-lite refuses a reader on a topic nothing was ever sent to, so a refused reader
    touches the topic with a producer (which creates it) and asks once more."""
    import _pulsar

    start = (
        _pulsar.MessageId.deserialize(base64.b64decode(after))
        if after
        else _pulsar.MessageId.earliest
    )
    conf = _pulsar.ReaderConfiguration()
    conf.read_compacted(True)
    conf.start_message_id_inclusive(inclusive)
    try:
        return client.create_reader(topic, start, conf)
    except _pulsar.Timeout:
        raise
    except _pulsar.PulsarException:
        client.create_producer(topic, _pulsar.ProducerConfiguration()).close()
        return client.create_reader(topic, start, conf)


def _read(
    client: Any, topic: str, after: str | None, deadline: float
) -> tuple[list[Received], str | None]:
    import _pulsar

    # from ``after`` itself: the message read last comes again (skipped); when not even
    # it is there, the position is past the topic's end (a broker whose data was replaced
    # under the same URL numbers its messages from the start again), and the topic is
    # read from its start rather than never again
    reader = _open_reader(client, topic, after, inclusive=after is not None)
    received: list[Received] = []
    last, seen = after, after is None
    try:
        while time.monotonic() < deadline and reader.has_message_available():
            remaining = max(int((deadline - time.monotonic()) * 1000), 1)
            try:
                message = reader.read_next(remaining)
            except _pulsar.Timeout:  # the time is up: what was read is kept (the next read
                break  # goes on from there), never thrown away to start over
            position = _serialise(message.message_id())
            if not seen and position == after:
                seen = True
                continue
            seen = True
            received.append(Received(message.partition_key(), message.data()))
            last = position
    finally:
        reader.close()
    if not seen and time.monotonic() < deadline:
        return _read(client, topic, None, deadline)
    return received, last


class Follower:
    """A reader kept open by a server: ``poll`` returns what arrived since the last poll."""

    def __init__(self, url: str, topic: str, after: str | None, timeout: float = 10.0) -> None:
        from toolctl.errors import ToolctlError

        self.url, self.topic = url, topic
        try:
            self._client = _bare_client(url, timeout)
        except ToolctlError as exc:  # a bad URL, a broker that cannot be reached
            raise _read_hint(exc) from None
        try:
            self._reader = _open_reader(self._client, topic, after)
        except Exception as exc:
            self._client.close()
            raise _read_hint(translate(exc, url, f"following announcements on {topic}")) from exc
        self.position = after

    def poll(self, wait: float) -> list[Received]:
        """Messages arriving within ``wait`` s (and any already there)."""
        import _pulsar

        received: list[Received] = []
        timeout = max(int(wait * 1000), 1)
        while True:
            try:
                message = self._reader.read_next(timeout)
            except _pulsar.Timeout:
                return received
            except Exception as exc:
                doing = f"following announcements on {self.topic}"
                raise _read_hint(translate(exc, self.url, doing)) from exc
            received.append(Received(message.partition_key(), message.data()))
            self.position = _serialise(message.message_id())
            timeout = 1  # drain what is there, then return

    def close(self) -> None:
        self._client.close()
