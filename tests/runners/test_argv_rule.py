"""One placeholder rule for option injection (issue #24 item 10): an argv item that starts
with '-' because of a text value is refused, however many placeholders share the item."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from toolctl.errors import InvalidArguments
from toolctl.runners.argv import render_argv

NAMES = ("a", "b", "c")
PIECES = st.lists(st.sampled_from(["{a}", "{b}", "{c}", "x", "-", "=", "{{"]), max_size=5)
VALUES = st.text(alphabet="-ab=o ", max_size=4)


@settings(max_examples=examples(300), derandomize=True, deadline=None)
@given(pieces=PIECES, values=st.fixed_dictionaries({n: VALUES for n in NAMES}))
def test_an_item_starts_with_a_dash_only_by_the_templates_own_text(
    pieces: list[str], values: dict[str, str]
) -> None:
    item = "".join(pieces)
    try:
        argv = render_argv(["tool", item], values, frozenset(NAMES))
    except InvalidArguments:
        return
    marked = {name: f"Z{value}" if value else "" for name, value in values.items()}
    first = render_argv(["tool", item], marked, frozenset(NAMES))[1:2]
    if argv[1:] and argv[1].startswith("-"):  # the dash must be the template's own text
        assert not first[0].startswith("Z"), (item, values, argv)


@pytest.mark.parametrize("item", ["{a}{b}", "{b}{a}", "{a}{a}{b}", "{a}x{b}"])
def test_two_placeholders_are_refused_like_one(item: str) -> None:
    values = {"a": "", "b": "-o./PWNED"}
    if item == "{a}x{b}":
        assert render_argv(["t", item], values, frozenset(values)) == ["t", "x-o./PWNED"]
        return
    with pytest.raises(InvalidArguments, match="'b' starts with '-'"):
        render_argv(["t", item], values, frozenset(values))


@pytest.mark.parametrize(
    ("values", "refused"),
    [
        ({"n": -1, "b": "n"}, True),  # -1n: an option cluster
        ({"n": -1, "b": ""}, False),  # -1: a negative number
        ({"n": -2.5, "b": ""}, False),
        ({"n": 1, "b": "-x"}, False),  # starts with 1
    ],
)
def test_a_negative_number_is_a_value_only_on_its_own(
    values: dict[str, object], refused: bool
) -> None:
    names = frozenset(values)
    if refused:
        with pytest.raises(InvalidArguments, match="'n' starts with '-'"):
            render_argv(["t", "{n}{b}"], values, names)
    else:
        assert render_argv(["t", "{n}{b}"], values, names) == ["t", f"{values['n']}{values['b']}"]
