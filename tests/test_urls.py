"""The one check of the http(s) URLs descriptors give: any text gets an answer (a reason,
or None for a URL urllib and httpx can take apart), never an exception."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from toolctl.urls import hide_passwords, url_problem

PIECES = st.sampled_from(
    ["http://", "https://", "ftp://", "[", "]", "::1", ":", "@", "/", "%", "${env:H}", " ", "h"]
)


@settings(max_examples=examples(500), deadline=None)
@given(st.one_of(st.text(max_size=40), st.lists(PIECES, max_size=8).map("".join)))
def test_any_text_gets_a_reason_or_is_a_url_that_can_be_taken_apart(url: str) -> None:
    problem = url_problem(url)
    assert problem is None or (isinstance(problem, str) and problem)
    if problem is None and "${env:" not in url:
        parts = urlsplit(url)
        assert parts.scheme in ("http", "https") and parts.hostname
        assert parts.port is None or 0 <= parts.port <= 65535


@pytest.mark.parametrize(
    "url", ["http://${env:HOST}/x", "http://h:${env:PORT}/x", "https://[::1]:8080/", "http://h/"]
)
def test_urls_that_are_fine(url: str) -> None:
    assert url_problem(url) is None


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("see https://h/x?token=abc&page=2", "see https://h/x?token=***&page=2"),
        ("https://h/x?apiKey=abc#id_token=j.w.t", "https://h/x?apiKey=***#id_token=***"),
        ("https://h/x?key=${env:KEY}&sig=***", "https://h/x?key=${env:KEY}&sig=***"),
        ("https://h/x?token_type=bearer&scope=a", "https://h/x?token_type=bearer&scope=a"),
        ("no url: a?token=abc", "no url: a?token=abc"),
        ("https://h/x?api%5Fkey=abc&a%20b=1", "https://h/x?api%5Fkey=***&a%20b=1"),
    ],
)
def test_secret_parameters_of_a_printed_url_are_hidden(text: str, shown: str) -> None:
    assert hide_passwords(text) == shown
