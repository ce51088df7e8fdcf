"""The wire format, pinned byte for byte: what toolctl sends and what its worker answers.

TrustGraph (trustgraph-base 2.11) serialises ToolServiceRequest / ToolServiceResponse with
``json.dumps`` of the dataclass: default separators (", " and ": "), ASCII escapes, fields
in declaration order. These bytes are what a TrustGraph agent or DynamicToolService
sends and expects; a change here breaks compatibility with it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import pulsar
import pytest

from tests.pulsar.pulsar_support import Project, StartWorker
from toolctl.calls import resolve as resolve_tool
from toolctl.errors import TimedOut
from toolctl.pulsar.wire import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    expired,
    request_properties,
)
from toolctl.registry.index import Registry
from toolctl.runners.base import Call
from toolctl.runners.pulsar import PulsarRunner
from toolctl.settings import Settings

REQUEST = (
    b'{"user": "alice", "config": "{\\"style\\": \\"pun\\"}", '
    b'"arguments": "{\\"topic\\": \\"caf\\\\u00e9\\", \\"n\\": 2}"}'
)
ANSWER = b'{"error": null, "response": "hello ada from alice", "end_of_stream": true}'
ERROR = (
    b'{"error": {"type": "tool-service-error", "message": "boom: x"}, '
    b'"response": "", "end_of_stream": true}'
)


def test_request_bytes() -> None:
    assert encode_request("alice", {"style": "pun"}, {"topic": "café", "n": 2}) == REQUEST
    assert encode_request("u", {}, {}) == b'{"user": "u", "config": "{}", "arguments": "{}"}'


def test_response_bytes() -> None:
    assert encode_response("hello ada from alice") == ANSWER
    assert encode_response(error=("tool-service-error", "boom: x")) == ERROR
    assert encode_response("one ", end_of_stream=False) == (
        b'{"error": null, "response": "one ", "end_of_stream": false}'
    )


def test_reading_requests() -> None:
    assert decode_request(REQUEST) == ({"style": "pun"}, {"topic": "café", "n": 2}, "alice")
    # TrustGraph's defaults: empty strings are {} and a missing user is "trustgraph"
    assert decode_request(b'{"config": "", "arguments": ""}') == ({}, {}, "trustgraph")
    assert decode_request(b'{"user": "u", "arguments": {"a": 1}}') == ({}, {"a": 1}, "u")
    for body, problem in (
        (b"not json", "request is not JSON"),
        (b"[1]", "not a JSON object"),
        (b'{"arguments": "[1]"}', "arguments is not a JSON object"),
        (b'{"config": "{"}', "config is not a JSON string"),
    ):
        with pytest.raises(ValueError, match=problem):
            decode_request(body)


def test_reading_responses() -> None:
    answer = decode_response(ANSWER)
    assert (answer.text, answer.error, answer.end_of_stream) == ("hello ada from alice", None, True)
    failed = decode_response(ERROR)
    assert (failed.error, failed.end_of_stream) == ("tool-service-error: boom: x", True)
    data = decode_response(b'{"response": {"a": [1, 2]}, "end_of_stream": true}')
    assert json.loads(data.text) == {"a": [1, 2]}  # a non-string response is JSON
    assert decode_response(b'{"response": "x", "end_of_stream": false}').end_of_stream is False
    assert decode_response(b"garbage").error is not None
    # an error's type or message that is no text is told as JSON, not a Python repr
    odd = decode_response(b'{"error": {"type": {"x": 1}, "message": ["a"]}}')
    assert odd.error == '{"x": 1}: ["a"]'
    assert decode_response(b'{"error": [1, 2]}').error == "error: [1, 2]"
    # half an emoji (a lone surrogate) in an answer or an error: escaped, never a crash
    half = decode_response(b'{"response": "smile \\ud83d", "error": {"message": "\\ud800"}}')
    assert (half.text, half.error) == ("smile \\ud83d", "error: \\ud800")


def _settings(project: Project, url: str) -> Settings:
    return Settings.load([project.registry], pulsar_url=url)


def test_the_runner_sends_exactly_these_bytes(
    project: Project, pulsar_url: str, raw_client: Any
) -> None:
    requests = raw_client.subscribe(project.request_queue("nobody"), "spy")
    settings = _settings(project, pulsar_url)
    spec = resolve_tool(Registry.open(settings), "nobody")
    spec = spec._replace(data={**spec.data, "config": {"style": "pun"}})
    runner = PulsarRunner(settings)
    sent_at = time.time()
    try:
        with pytest.raises(TimedOut):
            runner.run(Call(spec, {"topic": "café", "n": 2}, 0.3, "alice"))
    finally:
        runner.close()
    message = requests.receive(timeout_millis=5000)
    assert message.data() == REQUEST
    # TrustGraph sends only "id"; toolctl adds "deadline" (TrustGraph workers ignore it):
    # when the caller gives up, in ms since the epoch
    assert set(message.properties()) == {"id", "deadline"}
    assert uuid.UUID(message.properties()["id"])
    deadline = int(message.properties()["deadline"])
    assert sent_at * 1000 + 300 <= deadline <= time.time() * 1000 + 300


def test_the_deadline_property() -> None:
    properties = request_properties("x", 2.5)
    assert properties["id"] == "x"
    now = int(properties["deadline"]) / 1000 - 2.5
    assert not expired(properties, now + 2.4)
    assert expired(properties, now + 2.6)
    for odd in ("", "soon", "-1", "1e9", "9" * 5000, "\uff11\uff12"):  # ignored, never a crash
        assert not expired({"id": "x", "deadline": odd})
    assert not expired({"id": "x"})


def _call(client: Any, project: Project, service: str, body: bytes, call_id: str) -> list[bytes]:
    """Send one raw request; every answer body with that id, up to end_of_stream."""
    answers = client.subscribe(project.response_queue(service), f"raw-{uuid.uuid4().hex}")
    producer = client.create_producer(project.request_queue(service), batching_enabled=False)
    producer.send(body, properties={"id": call_id})
    bodies: list[bytes] = []
    while True:
        message = answers.receive(timeout_millis=10_000)
        if message.properties().get("id") != call_id:
            continue
        bodies.append(message.data())
        if json.loads(message.data())["end_of_stream"]:
            return bodies


def test_the_worker_answers_exactly_these_bytes(
    project: Project, workers: StartWorker, raw_client: Any
) -> None:
    workers("hello")
    body = encode_request("alice", {}, {"name": "ada"})
    assert _call(raw_client, project, "hello", body, "id-1") == [ANSWER]


def test_the_worker_answers_errors_and_streams_in_these_bytes(
    project: Project, workers: StartWorker, raw_client: Any
) -> None:
    workers("fail")
    body = encode_request("alice", {}, {"why": "x"})
    assert _call(raw_client, project, "fail", body, "id-2") == [ERROR]
    workers("chunks")
    assert _call(raw_client, project, "chunks", encode_request("a", {}, {}), "id-3") == [
        b'{"error": null, "response": "one ", "end_of_stream": false}',
        b'{"error": null, "response": "two ", "end_of_stream": false}',
        b'{"error": null, "response": "three", "end_of_stream": false}',
        b'{"error": null, "response": "", "end_of_stream": true}',
    ]


def test_a_malformed_request_with_an_id_gets_an_error_answer(
    project: Project, workers: StartWorker, raw_client: Any
) -> None:
    workers("hello")
    (answer,) = _call(raw_client, project, "hello", b"this is not json", "bad-1")
    parsed = json.loads(answer)
    assert parsed["error"]["type"] == "tool-service-error"
    assert parsed["error"]["message"].startswith("request is not JSON")
    assert (parsed["response"], parsed["end_of_stream"]) == ("", True)
    # a request without an id cannot be answered; the worker ignores it and carries on
    producer = raw_client.create_producer(project.request_queue("hello"))
    producer.send(b"{}")
    body = encode_request("alice", {}, {"name": "ada"})
    assert _call(raw_client, project, "hello", body, "good-1") == [ANSWER]


class FakeService:
    """A TrustGraph-style service written with the raw client: scripted answers per request."""

    def __init__(self, client: Any, project: Project, service: str, script: list[tuple[Any, ...]]):
        self.requests = client.subscribe(
            project.request_queue(service),
            f"{service}-request",
            consumer_type=pulsar.ConsumerType.Shared,
        )
        self.answers = client.create_producer(
            project.response_queue(service), batching_enabled=False
        )
        self.script = script
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        message = self.requests.receive(timeout_millis=10_000)
        call_id = message.properties()["id"]
        for body, which in self.script:
            self.answers.send(body, properties={"id": call_id if which == "own" else which})


def test_the_runner_ignores_other_ids_and_reads_json_and_chunks(
    project: Project, pulsar_url: str, raw_client: Any
) -> None:
    fake = FakeService(
        raw_client,
        project,
        "nobody",
        [
            (b'{"error": null, "response": "not yours", "end_of_stream": true}', "someone-else"),
            (b'{"error": null, "response": {"n": 1}, "end_of_stream": false}', "own"),
            (b'{"error": null, "response": [2], "end_of_stream": true}', "own"),
        ],
    )
    settings = _settings(project, pulsar_url)
    spec = resolve_tool(Registry.open(settings), "nobody")
    runner = PulsarRunner(settings)
    try:
        result = runner.run(Call(spec, {}, 10, "alice"))
    finally:
        runner.close()
    fake.thread.join(timeout=10)
    assert result.success is True
    assert result.output == '{"n": 1}[2]'


def test_the_runner_reads_a_trustgraph_error(
    project: Project, pulsar_url: str, raw_client: Any
) -> None:
    FakeService(raw_client, project, "nobody", [(ERROR, "own")])
    settings = _settings(project, pulsar_url)
    spec = resolve_tool(Registry.open(settings), "nobody")
    runner = PulsarRunner(settings)
    try:
        result = runner.run(Call(spec, {}, 10, "alice"))
    finally:
        runner.close()
    assert (result.success, result.error) == (False, "tool-service-error: boom: x")


def test_a_non_string_response_is_json_data(
    project: Project, pulsar_url: str, raw_client: Any
) -> None:
    FakeService(
        raw_client,
        project,
        "nobody",
        [(b'{"response": {"n": [1, 2]}, "end_of_stream": true}', "own")],
    )
    settings = _settings(project, pulsar_url)
    spec = resolve_tool(Registry.open(settings), "nobody")
    runner = PulsarRunner(settings)
    try:
        result = runner.run(Call(spec, {}, 10, "alice"))
    finally:
        runner.close()
    assert (result.success, result.data, result.output) == (True, {"n": [1, 2]}, '{"n": [1, 2]}')


def test_forked_children_make_ids_of_their_own() -> None:
    """A program that imports toolctl and forks (a multiprocessing pool, gunicorn with
    preload): each child made the parent's next ids, so callers sharing a response topic
    took each other's answers (15 of 20 calls of a 4-child pool, against a real worker)."""
    import os

    from toolctl.pulsar.wire import fresh_id

    fresh_id()  # the parent has drawn from it before forking
    read, write = os.pipe()
    children = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            os.write(write, f"{fresh_id()}\n".encode())
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    os.close(write)
    with os.fdopen(read) as made:
        ids = made.read().split()
    assert len(ids) == 4 and len({*ids, fresh_id()}) == 5
