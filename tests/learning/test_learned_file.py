"""toolctl.learning.learned_file and store: the reviewable TOML file, byte-stable, round-tripped."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from toolctl.errors import RegistryError, UsageError
from toolctl.learning.learned_file import dumps, learnable, loads
from toolctl.learning.model import Proposal, learn
from toolctl.learning.store import read_learned, write_learned
from toolctl.transcripts import Call


def calls(run: str, failed: str = "") -> list[Call]:
    return [Call(n, {}, None, "", n not in failed.split()) for n in run.split()]


DATA = [calls("cd ls cat"), calls("cd ls read.me", failed="read.me"), calls("cd ls cat")]


def test_the_file_is_sorted_toml_that_reads_back_to_the_same_model() -> None:
    model = learn(DATA, lexical_weight=0.35)
    text = dumps(model)
    document = tomllib.loads(text)
    assert document["format"] == 1 and document["lexical_weight"] == 0.35
    # 3 of 3 + 3 + 2 + 0.25 (the failed read.me counts a quarter)
    assert document["tools"]["cd"] == {"calls": 3, "failed": 0, "score": 0.3636}
    assert document["next"]["ls"]["read.me"] == {"calls": 1, "failed": 1, "score": 0.1111}
    assert list(document["next"]) == sorted(document["next"])
    assert '[next."cd ls"]' in text and '"read.me" = {' in text
    again = loads(text, "f")
    assert again == model and dumps(again) == text


def test_the_same_sessions_in_another_order_of_arrival_give_the_same_bytes() -> None:
    assert dumps(learn(DATA)) == dumps(learn(list(reversed(DATA))))


def test_proposals_are_written_with_the_current_score_for_review() -> None:
    model = learn(DATA)
    from dataclasses import replace

    model = replace(
        model,
        proposals=(
            Proposal("call", "browse", "cd", 1.0, 0.5),
            Proposal("next", "browse", "read", 0.25),
        ),
    )
    text = dumps(model)
    assert '[[proposed.call]]\nfrom = "browse"\nto = "cd"\nscore = 1.0\ncurrent = 0.5\n' in text
    assert '[[proposed.next]]\nfrom = "browse"\nto = "read"\nscore = 0.25\n' in text
    assert loads(text, "f").proposals == model.proposals


def test_a_name_with_a_space_cannot_be_learned() -> None:
    with pytest.raises(UsageError, match="has a space"):
        dumps(learn([calls("a"), [Call("two words", {}, None, "", True)]]))


@pytest.mark.parametrize(
    "text",
    [
        "format = 2\n",
        "not toml [",
        "format = 1\n",
        "format = 1\nsessions = 'x'\norder=1\nmin_support=1\nfailure_weight=0.1\nlexical_weight=0.1\n",
    ],
)
def test_a_file_that_is_not_a_learned_file_is_a_registry_error(text: str) -> None:
    with pytest.raises(RegistryError, match=r"^x/toolctl.learned: not a learned file"):
        loads(text, "x/toolctl.learned")


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("sessions = ", "inf"),
        ("sessions = ", "1e400"),
        ("order = ", "-1"),
        ("min_support = ", "1.5"),
        ("failure_weight = ", "nan"),
        ("lexical_weight = ", "-0.5"),
        ("fail = { calls = ", "inf"),
    ],
)
def test_a_hand_edited_number_no_learning_writes_is_a_registry_error(line: str, value: str) -> None:
    """`inf` or `1e400` ended `recommend --after` with exit 70 (OverflowError); NaN and
    negatives were taken silently."""
    text = dumps(learn([calls("fail")]))
    start = text.index("\n" + line) + 1
    end = text.index(",", start) if line.endswith("{ calls = ") else text.index("\n", start)
    edited = text[:start] + line + value + text[end:]
    with pytest.raises(RegistryError, match=r"^x/toolctl.learned: not a learned file"):
        loads(edited, "x/toolctl.learned")


@pytest.mark.parametrize(
    ("old", "new", "told"),
    [
        ("calls = 1,", f"calls = {'9' * 400},", "calls = 99999999999999999999... (400 characters)"),
        ("calls = 1, failed = 0", "calls = 1, failed = 2", "fail: failed = 2 is more than"),
        ("failure_weight = 0.25", "failure_weight = 7.0", "failure_weight = 7.0 is not a"),
        ("lexical_weight = 0.5", "lexical_weight = 5", "lexical_weight = 5 is not a"),
        ("score = 0.5\n", "score = nan\n", "score = nan is not a finite number"),
        ("current = 0.25", "current = 'high'", "current = 'high' is not a number"),
        ('from = "browse"', "from = 1", "from and to must be names"),
    ],
)
def test_a_number_too_big_for_the_scores_or_out_of_place_is_a_registry_error(
    old: str, new: str, told: str
) -> None:
    """A 400-digit count passed as a count and overflowed float arithmetic (exit 70);
    a weight above 1, more failures than calls or a NaN proposal were taken silently."""
    from dataclasses import replace

    proposal = Proposal("call", "browse", "fail", 0.5, 0.25)
    text = dumps(replace(learn([calls("fail")]), proposals=(proposal,)))
    assert old in text
    with pytest.raises(RegistryError, match=r"^x/toolctl.learned: not a learned file") as err:
        loads(text.replace(old, new, 1), "x/toolctl.learned")
    assert told in str(err.value) and "\n" not in str(err.value)


def test_a_name_toml_cannot_hold_is_not_learnable() -> None:
    """A lone surrogate (a JSON escape in a transcript) was written as an escape no TOML
    reader takes: `graph learn` wrote a file `recommend` then refused."""
    assert learnable("cat") and learnable("read.me") and learnable("é")
    assert not any(learnable(name) for name in ("", "my tool", "a\tb", "x\ud800"))


def test_writing_is_atomic_and_reading_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "reg" / "toolctl.learned"
    write_learned(path, dumps(learn(DATA)))
    write_learned(path, dumps(learn(DATA[:1])))
    assert read_learned(path).sessions == 1
    assert [p.name for p in path.parent.iterdir()] == ["toolctl.learned"]  # no temp file left
    with pytest.raises(UsageError, match="cannot read the learned file"):
        read_learned(tmp_path / "missing")
