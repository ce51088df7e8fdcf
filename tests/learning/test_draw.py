"""toolctl.learning.draw: the learned graph as DOT, and Graphviz turning DOT into pictures."""

from __future__ import annotations

import os
import shutil

import pytest

from toolctl.errors import TransportUnavailable
from toolctl.learning.draw import graphviz, learned_dot
from toolctl.learning.model import learn
from toolctl.transcripts import Call


def runs(*names: str) -> list[list[Call]]:
    return [[Call(n, {}, None, "", True) for n in run.split()] for run in names]


def test_edges_are_as_wide_as_they_are_likely() -> None:
    dot = learned_dot(learn(runs("cd ls", "cd ls", "cd ls", "cd cat")))
    assert '"cd" -> "ls" [label="0.75", penwidth=5.00];' in dot
    assert '"cd" -> "cat" [label="0.25", penwidth=2.00];' in dot
    assert '"^" -> "cd" [label="1.00", penwidth=6.50];' in dot
    assert dot == learned_dot(learn(runs("cd cat", "cd ls", "cd ls", "cd ls")))


def test_rare_transitions_are_left_out() -> None:
    dot = learned_dot(learn(runs(*["a b"] * 30, "a c")))
    assert '"a" -> "b"' in dot and '"a" -> "c"' not in dot


def test_without_graphviz_on_path_it_is_transport_unavailable() -> None:
    with pytest.raises(TransportUnavailable, match="Graphviz 'dot' not found"):
        graphviz("digraph {}", "svg", path="")


def test_graphviz_draws_svg_and_png() -> None:
    if shutil.which("dot") is None:
        if os.environ.get("TOOLCTL_REQUIRE_ENGINES") == "1":
            pytest.fail("Graphviz 'dot' is absent; TOOLCTL_REQUIRE_ENGINES=1 needs it")
        pytest.skip("Graphviz 'dot' is absent (scripts/setup-graphviz.sh installs it)")
    dot = learned_dot(learn(runs("cd ls", "cd cat")))
    svg = graphviz(dot, "svg", os.environ["PATH"])
    assert b"<svg" in svg and b"stroke-width" in svg
    assert graphviz(dot, "png", os.environ["PATH"]).startswith(b"\x89PNG")
