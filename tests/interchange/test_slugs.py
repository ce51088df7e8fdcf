"""Foreign names as registry names: stable slugs, titles kept, collisions reported."""

from __future__ import annotations

import random
import re
import string

from toolctl.interchange.slugs import MAX_LENGTH, named, slug
from toolctl.names import NAME_PATTERN


def test_valid_names_stay_and_others_become_slugs() -> None:
    assert slug("tell-joke") == "tell-joke"
    assert slug("DocumentReader") == "DocumentReader"
    assert slug("browser using action") == "browser-using-action"
    assert slug("create parallel subtasks (Map) action") == "create-parallel-subtasks-map-action"
    assert slug("  Knowledge query  ") == "knowledge-query"
    assert slug("Café ☕ au lait") == "cafe-au-lait"
    assert re.fullmatch(r"x-[0-9a-f]{8}", slug("☕☕"))


def test_long_names_are_cut_with_a_hash_that_keeps_them_apart() -> None:
    base = "a very long action name " * 5
    first, second = slug(base + "one"), slug(base + "two")
    assert len(first) <= MAX_LENGTH and len(second) <= MAX_LENGTH
    assert first != second
    assert first[:-9] == second[:-9]
    assert slug(base + "one") == first  # stable
    assert slug("x" * 65) != "x" * 65  # valid, but longer than OpenAI accepts


def test_named_keeps_the_foreign_name_as_title_only_when_it_changed() -> None:
    assert named({"description": "d"}, "browser using action") == {
        "name": "browser-using-action",
        "title": "browser using action",
        "description": "d",
    }
    assert named({"description": "d"}, "tell-joke") == {"name": "tell-joke", "description": "d"}


def test_any_string_becomes_a_valid_stable_name() -> None:
    pattern = re.compile(NAME_PATTERN)
    chance = random.Random(12)
    alphabet = string.printable + "äöü中文☕\u200b\U0001f600"
    for _ in range(2000):
        name = "".join(chance.choice(alphabet) for _ in range(chance.randint(0, 90)))
        made = slug(name)
        assert pattern.match(made), (name, made)
        assert len(made) <= MAX_LENGTH
        assert slug(name) == made


def test_a_final_newline_makes_a_name_a_slug() -> None:
    assert slug("calc\n") != "calc\n" and "\n" not in slug("calc\n")


def test_a_look_alike_letter_becomes_the_letter_it_imitates() -> None:
    """Cyrillic and Greek letters drawn like ASCII ones are mapped, never dropped: a
    look-alike of 'hello' slugs to 'hello' (which first-wins then refuses as taken), not
    to a new name 'hllo' titled like the one it imitates."""
    cyrillic_e, cyrillic_a, cyrillic_es, greek_o = "\u0435", "\u0430", "\u0441", "\u03bf"
    assert slug(f"h{cyrillic_e}llo") == "hello"
    assert slug(f"d{cyrillic_a}ta") == "data"
    assert slug(f"sv{cyrillic_es}") == "svc"
    assert slug(f"hell{greek_o}") == "hello"
    assert slug("\uff48\uff45\uff4c\uff4c\uff4f") == "hello"  # fullwidth, as before
