"""toolctl.learning.blend: learned transitions, the request and the static graph, ranked."""

from __future__ import annotations

from toolctl.graph import Toolkit
from toolctl.learning.blend import adaptive_tools, graph_probabilities, rank_next
from toolctl.learning.bm25 import tool_text
from toolctl.learning.model import learn
from toolctl.transcripts import Call

CANDIDATES = {
    "cd": tool_text("cd", "Change the current directory", {}),
    "ls": tool_text("ls", "List the files of the current directory", {}),
    "cat": tool_text("cat", "Show the content of a file", {}),
    "post_tweet": tool_text("post_tweet", "Post a tweet on Twitter", {}),
}


def sessions(*runs: str) -> list[list[Call]]:
    return [[Call(name, {}, None, "", True) for name in run.split()] for run in runs]


MODEL = learn(sessions("cd ls cat", "cd ls cat", "cd ls", "cd cat"))


def test_transitions_rank_the_next_tools() -> None:
    best = rank_next(MODEL, ["cd"], CANDIDATES, top=2)
    assert [s.name for s in best] == ["ls", "cat"]
    assert best[0].score > best[1].score


def test_the_request_lifts_the_tool_it_names() -> None:
    best = rank_next(MODEL, ["cd"], CANDIDATES, query="post a tweet about it", top=4)
    without = rank_next(MODEL, ["cd"], CANDIDATES, top=4)
    assert [s.name for s in best].index("post_tweet") < [s.name for s in without].index(
        "post_tweet"
    )


def test_only_the_candidates_are_ranked_and_ties_go_by_name() -> None:
    best = rank_next(MODEL, ["cd"], {"zeta": "zeta", "alpha": "alpha"}, top=5)
    assert [s.name for s in best] == ["alpha", "zeta"]


TOOLKIT = Toolkit.from_data(
    [
        {
            "name": "browse",
            "tools": [{"tool": "cd", "score": 0.9}, {"tool": "ls", "score": 0.5}],
            "next": [{"action": "share", "score": 0.8}],
        },
        {"name": "share", "tools": [{"tool": "post_tweet"}]},
    ],
    {name: "local" for name in CANDIDATES},
)


def test_the_static_graph_suggests_what_the_actions_around_the_last_tool_call() -> None:
    p = graph_probabilities(TOOLKIT, ["cd"], CANDIDATES)
    assert set(p) == {"ls", "post_tweet"} and p["post_tweet"] > p["ls"]  # 0.8 x 1.0 > 0.5
    assert graph_probabilities(TOOLKIT, ["cat"], CANDIDATES) == {}
    empty = learn([])
    assert rank_next(empty, ["cd"], CANDIDATES, toolkit=TOOLKIT, top=1)[0].name == "post_tweet"


def test_adaptive_tools_are_the_pinned_ones_in_force_then_the_top_k() -> None:
    shown = adaptive_tools(MODEL, ["cd"], CANDIDATES, 2, pinned=["cat", "gone", "cat"])
    assert shown == ["cat", "ls", "cd"]
    assert adaptive_tools(MODEL, [], CANDIDATES, 1) == ["cd"]
