"""A response from the broker is whatever a worker wrote: any bytes decode to a Response
(an error for what is not one), and a partial's progress is finite numbers or nothing."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from toolctl.pulsar.wire import decode_request, decode_response

NUMBERS = st.one_of(
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
)
REPORTS = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={"progress": NUMBERS, "total": NUMBERS, "message": st.one_of(st.text(), NUMBERS)},
    ),
    NUMBERS,
    st.lists(NUMBERS, max_size=3),
)
PARTIALS = st.fixed_dictionaries(
    {"end_of_stream": st.one_of(st.just(False), st.booleans(), NUMBERS)},
    optional={
        "response": st.one_of(st.text(), st.none(), st.dictionaries(st.text(), st.integers())),
        "error": st.one_of(st.none(), st.text(), st.dictionaries(st.text(), st.text())),
        "progress": REPORTS,
        "log": st.one_of(
            st.fixed_dictionaries({}, optional={"level": NUMBERS, "message": NUMBERS}), NUMBERS
        ),
    },
)


def _checked(body: bytes) -> None:
    answer = decode_response(body)
    assert answer.error is None or isinstance(answer.error, str)
    if answer.progress is not None:
        progress, total, _ = answer.progress
        assert math.isfinite(progress) and (total is None or math.isfinite(total))


@settings(max_examples=examples(400), deadline=None)
@given(PARTIALS)
def test_any_partial_decodes_with_finite_progress(message: dict[str, object]) -> None:
    _checked(json.dumps(message, allow_nan=True).encode())


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_decode(body: bytes) -> None:
    _checked(body)


def test_hostile_bodies_are_errors_not_crashes() -> None:
    for body in (b"[" * 100_000, b'{"a":' * 100_000, b"\xff\xfe", b"", b"1e999999"):
        assert decode_response(body).error is not None
    huge = b'{"end_of_stream": false, "progress": {"progress": 1' + b"0" * 400 + b"}}"
    assert decode_response(huge).progress is None


def test_a_request_nested_past_the_stack_is_not_json() -> None:
    for body in (b"[" * 100_000, json.dumps({"arguments": "[" * 100_000}).encode()):
        with pytest.raises(ValueError, match=r"not JSON|not a JSON string"):
            decode_request(body)
