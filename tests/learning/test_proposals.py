"""toolctl.learning.proposals: Call/Next edge scores for actions, from the history."""

from __future__ import annotations

from toolctl.graph import Toolkit
from toolctl.learning.model import Proposal, learn
from toolctl.learning.proposals import propose
from toolctl.transcripts import Call

TOOLKIT = Toolkit.from_data(
    [
        {
            "name": "inspect",
            "tools": [{"tool": "count", "score": 0.9}, {"tool": "stats", "score": 0.7}],
            "next": [{"action": "transform", "score": 0.8}],
        },
        {"name": "transform", "tools": [{"tool": "reverse", "score": 0.8}, {"tool": "shout"}]},
        {"name": "publish", "tools": [{"tool": "slugify"}]},
    ],
    {t: "local" for t in ("count", "stats", "reverse", "shout", "slugify", "unused")},
)


def run(names: str, failed: str = "") -> list[Call]:
    return [Call(n, {}, None, "", n not in failed.split()) for n in names.split()]


def test_call_and_next_scores_follow_the_weighted_history() -> None:
    history = [run("count reverse")] * 3 + [
        run("count slugify"),
        run("stats shout", failed="shout"),
    ]
    proposals = propose(TOOLKIT, learn(history))
    assert proposals == tuple(sorted(proposals))
    calls = {(p.source, p.target): (p.score, p.current) for p in proposals if p.kind == "call"}
    assert calls == {
        ("inspect", "count"): (1.0, 0.9),
        ("inspect", "stats"): (0.25, 0.7),
        ("transform", "reverse"): (1.0, 0.8),
        ("transform", "shout"): (0.08, 1.0),  # one failed call counts 0.25 of 3
        ("publish", "slugify"): (1.0, 1.0),
    }
    nexts = [p for p in proposals if p.kind == "next"]
    assert nexts == [
        Proposal("next", "inspect", "publish", 0.31, None),  # 1 over 3 + 0.25 (the failed shout)
        Proposal("next", "inspect", "transform", 1.0, 0.8),
    ]


def test_no_history_proposes_nothing() -> None:
    assert propose(TOOLKIT, learn([])) == ()
