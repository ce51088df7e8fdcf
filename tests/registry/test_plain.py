"""Plain tools without pydantic: the same data, key order and JSON as through the model."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.conftest import examples
from toolctl.models import MODELS, normalise
from toolctl.registry.index.parsing import dumps
from toolctl.registry.plain import plain_text, plain_tool

TEXT = st.text(max_size=8)
NAMES = st.one_of(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,6}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,6}", fullmatch=True),
    st.sampled_from(["", "-x", "a\n", "a b", "é", "x" * 128, "x" * 129, "a.b_c-D"]),
    st.integers(),
)
ANY = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), TEXT, st.lists(TEXT, max_size=2))
NUMBERS = st.one_of(
    st.integers(-2, 100_000),
    st.floats(0, 90_000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 0.0, 86_400, 86_400.0, 86_400.5, 1e-300, True, False, "60"]),
)


FIELDS = [
    "name",
    "description",
    "category",
    "tags",
    "timeout",
    "title",
    "state",
    "local",
    "container",
    "local.command",
    "local.input",
    "local.env",
    "local.cwd",
    "local.shell",
]


@st.composite
def entries(draw: st.DrawFn) -> dict[str, Any]:
    """A plain tool, and half the time one of its fields set to anything at all."""
    local: dict[str, Any] = {"command": draw(st.lists(TEXT, min_size=1, max_size=3))}
    optional_local: tuple[tuple[str, st.SearchStrategy[Any]], ...] = (
        ("input", st.sampled_from(["json", "none"])),
        ("env", st.dictionaries(TEXT, TEXT, max_size=3)),
        ("cwd", TEXT),
    )
    for key, strategy in optional_local:
        if draw(st.booleans()):
            local[key] = draw(strategy)
    entry: dict[str, Any] = {
        "name": draw(NAMES.filter(lambda n: isinstance(n, str))),
        "local": local,
    }
    optional: tuple[tuple[str, st.SearchStrategy[Any]], ...] = (
        ("description", TEXT),
        ("category", TEXT),
        ("tags", st.lists(TEXT, max_size=3)),
        ("timeout", NUMBERS),
    )
    for key, strategy in optional:
        if draw(st.booleans()):
            entry[key] = draw(strategy)
    if draw(st.booleans()):
        field = draw(st.sampled_from(FIELDS))
        value = draw(st.one_of(ANY, NUMBERS, st.sampled_from(["json", "none", "JSON"])))
        if field.startswith("local."):
            local[field.removeprefix("local.")] = value
        else:
            entry[field] = value
    return entry


def through_the_model(entry: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return normalise("tool", MODELS["tool"].model_validate(entry))
    except ValidationError:
        return None


@settings(max_examples=examples(600), deadline=None)
@given(entries())
def test_a_plain_tool_is_what_the_model_makes_of_it(entry: dict[str, Any]) -> None:
    fast = plain_tool(entry)
    if fast is None:
        return  # not plain: the model decides, as before
    slow = through_the_model(entry)
    assert slow is not None, "the fast path accepted what the model refuses"
    assert json.dumps(fast) == json.dumps(slow)  # key order included, at every level
    assert plain_text(fast) == dumps(slow)


def test_the_common_shapes_are_plain() -> None:
    bench = {"name": "tool-1", "description": "bench tool 1", "local": {"command": ["true"]}}
    full = {
        **bench,
        "category": "text",
        "tags": ["a", "b"],
        "timeout": 10,
        "local": {"command": ["x", "{a}"], "input": "none", "env": {"K": "${env:K}"}, "cwd": "."},
    }
    for entry in (bench, full):
        fast = plain_tool(entry)
        assert fast is not None and json.dumps(fast) == json.dumps(through_the_model(entry))
    assert plain_tool({**bench, "timeout": True}) is None
    assert plain_tool({**bench, "timeout": float("nan")}) is None
    assert plain_tool({**bench, "name": "a\n"}) is None
    assert plain_tool({**bench, "arguments": []}) is None
    odd: list[dict[str, Any]] = [
        {"input": "JSON"},
        {"shell": True},
        {"env": {"K": 1}},
        {"command": []},
    ]
    for local in odd:
        assert plain_tool({**bench, "local": {"command": ["x"], **local}}) is None
