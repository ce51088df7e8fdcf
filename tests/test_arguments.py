"""The plain-schema shortcut of argument validation never accepts what fastjsonschema refuses."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from toolctl.arguments import plainly_valid
from toolctl.schemas import compile_schema

SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=4,
)
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null"])
NAMES = st.sampled_from(["a", "b", "c"])
PROPERTY = st.fixed_dictionaries(
    {"type": TYPES},
    optional={
        "description": st.text(max_size=3),
        "enum": st.lists(VALUES, max_size=3),
        "default": SCALARS,
    },
)
SCHEMA = st.fixed_dictionaries(
    {"type": st.just("object"), "properties": st.dictionaries(NAMES, PROPERTY, max_size=3)},
    optional={
        "required": st.lists(NAMES, max_size=3, unique=True),
        "additionalProperties": st.booleans(),
    },
)


def _accepted(schema: dict[str, Any], arguments: dict[str, Any]) -> bool:
    try:
        compile_schema(schema)(arguments)
    except Exception:
        return False
    return True


@settings(max_examples=examples(400), deadline=None)
@given(SCHEMA, st.dictionaries(NAMES, VALUES, max_size=3))
def test_plainly_valid_arguments_pass_the_full_validator(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    if plainly_valid(schema, arguments):
        assert _accepted(schema, arguments)


def test_the_shortcut_takes_the_common_case() -> None:
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "n": {"type": "integer", "enum": [1, 2]}},
        "required": ["text"],
        "additionalProperties": False,
    }
    assert plainly_valid(schema, {"text": "hi", "n": 2})
    assert not plainly_valid(schema, {"text": "hi", "n": True})  # a bool is no integer
    assert not plainly_valid(schema, {"n": 1})  # missing: fastjsonschema words the error
    assert not plainly_valid(schema, {"text": "hi", "x": 1})
    assert not plainly_valid({**schema, "minProperties": 1}, {"text": "hi"})


def test_a_number_typed_as_an_integer_stays_one() -> None:
    """`--arg x=1` for a number is 1 (a tool doing `range(x)` got 1.0); decimals and
    exponents are floats; what is no number is refused."""
    import json

    import pytest

    from toolctl.arguments import convert
    from toolctl.errors import InvalidArguments

    number = "number"  # the declared type, as the schema gives it
    assert [json.dumps(convert("x", raw, number)) for raw in ("1", "-3", "0", "1.5", "1e3")] == [
        "1", "-3", "0", "1.5", "1000.0",
    ]  # fmt: skip
    assert convert("x", "007", number) == 7.0  # not JSON's integer: read as a decimal
    with pytest.raises(InvalidArguments, match="expects a number"):
        convert("x", "one", number)


def test_an_error_quoting_a_value_never_shows_a_secret() -> None:
    """A bad value was quoted in clear ("expects an integer, got 'sk-live-...'"), on the
    terminal, in CI logs and to a server's clients, where the history masked it."""
    import pytest

    from toolctl.arguments import build, validate
    from toolctl.errors import InvalidArguments

    schema = {
        "type": "object",
        "properties": {"api_token": {"type": "integer"}, "n": {"type": "integer"}},
    }
    for pairs, args in (
        (["api_token=sk-live-abcdefghijklmnopqrstu"], None),
        (["n=sk-proj-abcdefghijklmnopqrstuvwx"], None),
        ([], {"api_token": "hunter2-secret-xyz"}),
        ([], {"n": "ghp_abcdefghijklmnopqrstuvwxyz0123"}),
    ):
        with pytest.raises(InvalidArguments) as raised:
            validate("t", schema, build(schema, args, pairs))
        told = str(raised.value)
        assert "***" in told, told
        assert not any(s in told for s in ("sk-", "hunter2", "ghp_")), told
    with pytest.raises(InvalidArguments, match="got 'abc'"):
        build(schema, None, ["n=abc"])


SECRET = "sk-" + "9f8e7d6c" * 4


@settings(max_examples=examples(400), deadline=None)
@given(
    st.lists(st.text(max_size=40), max_size=4),
    st.sampled_from(["", "=", ":", "K=", "K:", "K: a\n", "bad name: ", "\x00"]),
)
def test_command_line_pairs_and_headers_are_taken_or_refused_without_echo(
    items: list[str], secret_after: str
) -> None:
    """`--env`/`--elicit` KEY=VALUE and `mcp add --header` items, whatever they hold: taken
    (a header never with a line break or NUL, its name an HTTP token, none twice), or one
    line of UsageError that never quotes a value (a secret rides in one item)."""
    from toolctl.arguments import header_values, key_values
    from toolctl.errors import UsageError

    items = [*items, secret_after + SECRET]
    for parse in (key_values, header_values):
        try:
            found = parse(items, "--opt")
        except UsageError as exc:
            assert str(exc).startswith("--opt") and "\n" not in str(exc)
            assert SECRET not in str(exc)
            continue
        assert len(found) == len(items) and SECRET in "".join(found.values())
        if parse is header_values:
            assert len({name.lower() for name in found}) == len(found)
            assert not any(set(value) & set("\r\n\x00") for value in found.values())
