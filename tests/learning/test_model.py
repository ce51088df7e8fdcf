"""toolctl.learning.model: counting by context, support, success weighting, Witten-Bell."""

from __future__ import annotations

import math

from toolctl.learning.model import START, Tally, learn
from toolctl.transcripts import Call


def session(*names: str, failed: tuple[int, ...] = ()) -> list[Call]:
    return [Call(n, {}, None, "", i not in failed) for i, n in enumerate(names)]


def test_every_call_is_counted_under_each_context_up_to_the_order() -> None:
    model = learn([session("a", "b", "c"), session("a", "b", "d")], order=2, min_support=1)
    assert model.sessions == 2 and model.calls == 6
    assert model.tools == {"a": Tally(2), "b": Tally(2), "c": Tally(1), "d": Tally(1)}
    assert model.contexts[(START,)] == {"a": Tally(2)}
    assert model.contexts[("b",)] == {"c": Tally(1), "d": Tally(1)}
    assert model.contexts[("a", "b")] == {"c": Tally(1), "d": Tally(1)}
    assert (START, "a", "b") not in model.contexts  # longer than the order


def test_longer_contexts_are_kept_only_where_the_data_supports_them() -> None:
    model = learn([session("a", "b", "c"), session("x", "b", "d")], order=2, min_support=2)
    assert ("b",) in model.contexts  # one call of context is always kept
    assert ("a", "b") not in model.contexts and ("x", "b") not in model.contexts
    assert (START, "a") not in model.contexts


def test_probabilities_sum_to_one_over_the_candidates_and_favour_what_followed() -> None:
    model = learn([session("a", "b")] * 5 + [session("a", "c")])
    p = model.probabilities(["a"], ["b", "c", "z"])
    assert math.isclose(sum(p.values()), 1.0)
    assert p["b"] > p["c"] > p["z"] > 0
    assert model.probabilities(["a"], []) == {}


def test_a_longer_context_decides_where_it_was_seen() -> None:
    # after "a": b or c equally; but after "x a" always c, after "y a" always b
    data = [session("x", "a", "c")] * 4 + [session("y", "a", "b")] * 4
    model = learn(data, order=2)
    after_x = model.probabilities(["x", "a"], ["b", "c"])
    after_y = model.probabilities(["y", "a"], ["b", "c"])
    assert after_x["c"] > 0.8 and after_y["b"] > 0.8


def test_a_tool_that_keeps_failing_after_x_is_a_worse_suggestion() -> None:
    good = [session("x", "ok")] * 3
    bad = [session("x", "flaky", failed=(1,))] * 3
    model = learn(good + bad)
    assert model.contexts[("x",)]["flaky"] == Tally(3, 3)
    p = model.probabilities(["x"], ["flaky", "ok"])
    assert p["ok"] > p["flaky"]
    same = learn(good + [session("x", "flaky")] * 3).probabilities(["x"], ["flaky", "ok"])
    assert math.isclose(same["ok"], same["flaky"])


def test_learning_is_deterministic() -> None:
    data = [session("a", "b", "c", "a", "b"), session("c", "a"), session("b", "b", "b")]
    assert learn(data) == learn(list(reversed(list(reversed(data)))))
    assert learn(data).probabilities(["b"], ["a", "b", "c"]) == learn(data).probabilities(
        ["b"], ["a", "b", "c"]
    )
