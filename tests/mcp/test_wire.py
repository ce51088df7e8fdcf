"""The message readers: framing, bounds, and garbage that must only ever be ProtocolError."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from toolctl.errors import ToolctlError
from toolctl.mcp.wire import Event, LineSplitter, ProtocolError, SseParser, decode


def test_lines_split_across_chunks() -> None:
    splitter = LineSplitter(limit=100)
    assert list(splitter.feed(b'{"a":')) == []
    assert list(splitter.feed(b'1}\n\n{"b":2}\n{"c"')) == [b'{"a":1}', b'{"b":2}']


def test_a_line_over_the_limit_is_an_error_even_without_a_newline() -> None:
    splitter = LineSplitter(limit=10)
    with pytest.raises(ProtocolError, match="over"):
        list(splitter.feed(b"x" * 11))


def test_sse_events_with_ids_retry_comments_and_crlf() -> None:
    parser = SseParser()
    stream = b': keep-alive\r\nid: 7\r\nretry: 250\r\ndata: {"a":\r\ndata: 1}\r\n\r\nevent: ping\ndata: x\n\n'
    events = [event for i in range(len(stream)) for event in parser.feed(stream[i : i + 1])]
    assert events == [Event("message", '{"a":\n1}', "7", 250), Event("ping", "x", "7", None)]
    assert parser.last_event_id == "7"


def test_an_sse_event_over_the_limit_is_an_error() -> None:
    parser = SseParser(limit=64)
    with pytest.raises(ProtocolError):
        list(parser.feed(b"data: " + b"x" * 100 + b"\n"))


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b"[1,2]",
        b'{"jsonrpc":"1.0","id":1,"result":{}}',
        b'{"jsonrpc":"2.0"}',
        b'{"jsonrpc":"2.0","id":1,"error":"bad"}',
        b'{"jsonrpc":"2.0","id":1,"error":{"code":true,"message":"x"}}',
        b'{"jsonrpc":"2.0","id":1,"result":[]}',
        b"[" * 100000,
    ],
)
def test_garbage_is_a_protocol_error(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode(raw)


def test_well_formed_messages_pass() -> None:
    assert decode(b'{"jsonrpc":"2.0","id":1,"result":{}}')["result"] == {}
    assert decode('{"jsonrpc":"2.0","method":"notifications/progress"}')["method"]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=200), max_size=20))
def test_fuzz_line_reader(chunks: list[bytes]) -> None:
    splitter = LineSplitter(limit=256)
    try:
        for chunk in chunks:
            for line in splitter.feed(chunk):
                decode(line)
    except ToolctlError as error:
        assert isinstance(error, ProtocolError)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=80),
            st.builds(lambda v: b"data: " + json.dumps(v).encode() + b"\n\n", json_values),
            st.sampled_from([b"\r", b"\n", b"\r\n", b":c\n", b"id: 1\n", b"retry: x\n"]),
        ),
        max_size=20,
    )
)
def test_fuzz_sse_reader(chunks: list[bytes]) -> None:
    parser = SseParser(limit=512)
    try:
        for chunk in chunks:
            for event in parser.feed(chunk):
                decode(event.data)
    except ToolctlError as error:
        assert isinstance(error, ProtocolError)
