"""toolctl.learning.draw: the learned graph as DOT, and Graphviz turning DOT into pictures."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

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


def test_a_dot_past_its_time_is_stopped_with_all_it_started(tmp_path: Path) -> None:
    """A `dot` that never answers (here a wrapper that starts a helper, then waits) is
    stopped with its helper at the timeout: TimedOut (exit 124), nothing left running."""
    import random
    import subprocess
    import time

    from toolctl.errors import TimedOut

    mark = f"9321.{random.randrange(10**6, 10**7)}"  # a sleep no other process runs
    wrapper = tmp_path / "dot"
    wrapper.write_text(f"#!/bin/sh\nsleep {mark} &\nsleep {mark}\n")
    wrapper.chmod(0o755)
    path = f"{tmp_path}:/usr/bin:/bin"
    started = time.monotonic()
    with pytest.raises(TimedOut, match="took more than 1 s and was stopped"):
        graphviz("digraph {}", "svg", path=path, timeout=1)
    assert time.monotonic() - started < 20
    time.sleep(0.2)
    found = subprocess.run(["pgrep", "-f", f"sleep {mark}"], capture_output=True, text=True)
    for pid in found.stdout.split():  # never left to the machine, even when the test fails
        subprocess.run(["kill", "-9", pid], check=False)
    assert found.stdout.split() == [], "a process dot started outlived it"
