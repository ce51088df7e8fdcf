"""recommend() on small hand-made toolkits: exactly the semantics docs/design.md gives."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from toolctl.errors import UsageError
from toolctl.graph import Toolkit, recommend, usage_ordered

Edges = dict[str, float | None]


def action(name: str, next: Edges | None = None, tools: Edges | None = None) -> dict[str, Any]:
    """Descriptor data as the registry keeps it; a None score means 'no score given'."""

    def edges(key: str, given: Edges | None) -> list[dict[str, Any]]:
        out = []
        for target, score in (given or {}).items():
            out.append({key: target} if score is None else {key: target, "score": score})
        return out

    return {
        "name": name,
        "description": f"the {name} step",
        "next": edges("action", next),
        "tools": edges("tool", tools),
    }


def kit(*actions: dict[str, Any], tools: tuple[str, ...] = ("T", "U", "V")) -> Toolkit:
    return Toolkit.from_data(actions, {t: "local" for t in tools})


def summary(toolkit: Toolkit, starts: list[str], hops: int = 0, threshold: float = 0.5) -> Any:
    result = recommend(toolkit, starts, hops, threshold)
    return {a.name: (a.hops, "".join(a.path)) for a in result.actions}


def edge_set(toolkit: Toolkit, starts: list[str], **options: Any) -> set[tuple[str, str, str]]:
    result = recommend(toolkit, starts, **options)
    return {(e.source, e.kind, e.target) for e in result.edges}


def test_hops_zero_keeps_the_starts_and_their_tools_only() -> None:
    toolkit = kit(action("A", {"B": 0.9}, {"T": 0.9}), action("B", {}, {"U": 0.9}))
    result = recommend(toolkit, ["A"])
    assert [a.name for a in result.actions] == ["A"]
    assert [t.name for t in result.tools] == ["T"]
    assert edge_set(toolkit, ["A"]) == {("A", "call", "T")}
    # two starts joined by an edge: the edge is among kept actions, so it is returned
    assert edge_set(toolkit, ["A", "B"]) == {
        ("A", "call", "T"),
        ("A", "next", "B"),
        ("B", "call", "U"),
    }


def test_a_chain_is_followed_exactly_hops_deep() -> None:
    toolkit = kit(
        action("A", {"B": 1.0}), action("B", {"C": 1.0}), action("C", {"D": 1.0}), action("D")
    )
    assert summary(toolkit, ["A"], hops=2) == {"A": (0, "A"), "B": (1, "AB"), "C": (2, "ABC")}
    assert ("C", "next", "D") not in edge_set(toolkit, ["A"], hops=2)
    assert summary(toolkit, ["A"], hops=10)["D"] == (3, "ABCD")


def test_cycles_and_self_loops_end_and_keep_their_edges() -> None:
    toolkit = kit(action("A", {"A": 1.0, "B": 0.9}), action("B", {"A": 0.8}))
    assert summary(toolkit, ["A"], hops=50) == {"A": (0, "A"), "B": (1, "AB")}
    assert edge_set(toolkit, ["A"], hops=50) == {
        ("A", "next", "A"),
        ("A", "next", "B"),
        ("B", "next", "A"),
    }


def test_a_score_equal_to_the_threshold_keeps_the_edge() -> None:
    toolkit = kit(
        action("A", {"B": 0.5, "C": 0.49}, {"T": 0.5, "U": 0.49}), action("B"), action("C")
    )
    result = recommend(toolkit, ["A"], hops=1, threshold=0.5)
    assert [a.name for a in result.actions] == ["A", "B"]
    assert [t.name for t in result.tools] == ["T"]
    assert recommend(toolkit, ["A"], hops=1, threshold=0.0).tools[1].name == "U"
    assert [a.name for a in recommend(toolkit, ["A"], hops=1, threshold=1.0).actions] == ["A"]


def test_a_shared_tool_is_called_only_by_the_callers_above_the_threshold() -> None:
    toolkit = kit(action("A", {"B": 0.9}, {"T": 0.6}), action("B", {}, {"T": 0.3}))
    result = recommend(toolkit, ["A"], hops=1)
    (tool,) = result.tools
    assert (tool.name, tool.called_by, tool.score, tool.runtime) == ("T", ("A",), 0.6, "local")
    assert ("B", "call", "T") not in edge_set(toolkit, ["A"], hops=1)


def test_a_diamond_where_only_one_side_passes() -> None:
    toolkit = kit(
        action("S", {"L": 0.9, "R": 0.2}),
        action("L", {"E": 0.9}),
        action("R", {"E": 0.9}),
        action("E"),
    )
    assert summary(toolkit, ["S"], hops=2) == {"S": (0, "S"), "L": (1, "SL"), "E": (2, "SLE")}


def test_the_best_path_has_the_highest_lowest_score_then_fewest_hops_then_names() -> None:
    wide = kit(
        action("S", {"L": 0.6, "R": 0.9}),
        action("L", {"E": 0.9}),
        action("R", {"E": 0.7}),
        action("E"),
    )
    assert summary(wide, ["S"], hops=2)["E"] == (2, "SRE")
    tie = kit(
        action("S", {"R": 0.8, "L": 0.8}),
        action("L", {"E": 0.8}),
        action("R", {"E": 0.8}),
        action("E"),
    )
    assert summary(tie, ["S"], hops=2)["E"] == (2, "SLE")
    short = kit(action("S", {"E": 0.9, "M": 0.9}), action("M", {"E": 0.9}), action("E"))
    assert summary(short, ["S"], hops=2)["E"] == (1, "SE")


def test_the_best_path_may_be_longer_than_the_hop_distance() -> None:
    toolkit = kit(action("S", {"E": 0.6, "M": 0.9}), action("M", {"E": 0.9}), action("E"))
    assert summary(toolkit, ["S"], hops=2)["E"] == (1, "SME")
    assert summary(toolkit, ["S"], hops=1)["E"] == (1, "SE")


def test_a_best_path_need_not_extend_the_best_path_to_its_predecessor() -> None:
    # Best to U is S-X-U (0.9); to V it is S-U-V: same lowest score 0.5, one hop fewer.
    toolkit = kit(
        action("S", {"X": 0.9, "U": 0.6}),
        action("X", {"U": 0.9}),
        action("U", {"V": 0.5}),
        action("V"),
    )
    paths = summary(toolkit, ["S"], hops=3)
    assert paths["U"] == (1, "SXU")
    assert paths["V"] == (2, "SUV")


def test_several_starts_each_start_is_its_own_path() -> None:
    toolkit = kit(action("A", {"B": 0.9, "C": 0.6}), action("B", {"C": 0.9}), action("C"))
    assert summary(toolkit, ["B", "A"], hops=2) == {"A": (0, "A"), "B": (0, "B"), "C": (1, "BC")}


def test_unknown_starts_are_reported_and_skipped() -> None:
    toolkit = kit(action("A"))
    result = recommend(toolkit, ["nope", "A", "nope", "gone"])
    assert result.unknown == ("nope", "gone")
    assert [a.name for a in result.actions] == ["A"]
    empty = recommend(toolkit, ["nope"])
    assert (empty.actions, empty.tools, empty.edges, empty.unknown) == ((), (), (), ("nope",))


def test_an_edge_without_a_score_scores_one() -> None:
    toolkit = kit(action("A", {"B": None}, {"T": None}), action("B"))
    result = recommend(toolkit, ["A"], hops=1, threshold=1.0)
    assert [a.name for a in result.actions] == ["A", "B"]
    assert [(t.name, t.score) for t in result.tools] == [("T", 1.0)]


def test_edges_to_unknown_names_are_left_out_and_repeats_keep_the_best_score() -> None:
    data = action("A", {"ghost": 1.0, "B": 0.2}, {"phantom": 1.0, "T": 0.2})
    data["next"].append({"action": "B", "score": 0.7})
    data["tools"].append({"tool": "T", "score": 0.8})
    toolkit = kit(data, action("B"))
    result = recommend(toolkit, ["A"], hops=1)
    assert [(e.target, e.score) for e in result.edges] == [("T", 0.8), ("B", 0.7)]


@pytest.mark.parametrize(
    ("hops", "threshold"), [(-1, 0.5), (1, 1.5), (1, -0.1), (1, math.nan), (True, 0.5)]
)
def test_bad_options_are_usage_errors(hops: Any, threshold: float) -> None:
    with pytest.raises(UsageError):
        recommend(kit(action("A")), ["A"], hops, threshold)


def test_output_does_not_depend_on_the_order_of_the_input() -> None:
    actions = [
        action("A", {"C": 0.7, "B": 0.7}, {"U": 0.7, "T": 0.9}),
        action("B", {"D": 0.7}, {"T": 0.6}),
        action("C", {"D": 0.7}, {"V": 0.8}),
        action("D", {"A": 0.9}),
    ]
    forward = recommend(kit(*actions), ["A"], hops=3).to_json()
    backward = recommend(kit(*reversed(actions)), ["A"], hops=3).to_json()
    assert forward == backward
    assert [a["name"] for a in forward["actions"]] == ["A", "B", "C", "D"]
    assert forward["actions"][3] == {"name": "D", "hops": 2, "path": ["A", "B", "D"]}


def brute_force(
    toolkit: Toolkit, starts: list[str], hops: int, threshold: float
) -> dict[str, tuple[int, str]]:
    """Every walk of at most ``hops`` passing edges; the best per action by the stated order."""
    best: dict[str, tuple[Any, ...]] = {}
    distance: dict[str, int] = {}
    walks: list[tuple[tuple[str, ...], float]] = [
        ((s,), math.inf) for s in starts if s in toolkit.actions
    ]
    for length in range(hops + 1):
        for path, low in walks:
            key = (-low, len(path), path)
            end = path[-1]
            distance.setdefault(end, length)
            if end not in best or key < best[end]:
                best[end] = key
        walks = [
            ((*path, target), min(low, score))
            for path, low in walks
            for target, score in toolkit.next_of(path[-1]).items()
            if score >= threshold
        ]
    return {name: (distance[name], "".join(key[2])) for name, key in best.items()}


def test_best_paths_match_an_exhaustive_search_on_random_graphs() -> None:
    rng = random.Random(7)
    names = list("ABCDEFG")
    for _ in range(300):
        actions = []
        for name in names:
            targets = rng.sample(names, rng.randint(0, 4))
            actions.append(
                action(name, {t: rng.choice([0.3, 0.5, 0.6, 0.8, 1.0]) for t in targets})
            )
        toolkit = kit(*actions)
        starts = rng.sample(names, rng.randint(1, 2))
        hops, threshold = rng.randint(0, 4), rng.choice([0.0, 0.5, 0.7])
        assert summary(toolkit, starts, hops, threshold) == brute_force(
            toolkit, starts, hops, threshold
        ), (starts, hops, threshold, actions)


def test_drawings_of_the_whole_toolkit_and_of_one_group() -> None:
    groups = [
        {"name": "g", "tools": ["U", "T", "ghost"], "usage_order": ["T"]},
        {"name": "h", "tools": ["V"], "usage_order": []},
    ]
    toolkit = Toolkit.from_data(
        [action("A", {"B": 0.9}, {"T": 0.9}), action("B", {"C": 0.4}, {"U": 0.2}), action("C")],
        {"T": "local", "U": "http", "V": None, "W": "local"},
        groups,
    )
    whole = toolkit.drawing()
    assert whole.actions == ("A", "B", "C")
    assert whole.tools == ("T", "U", "V")  # W: nothing calls or groups it
    assert dict(whole.groups) == {"g": ("T", "U"), "h": ("V",)}
    narrow = toolkit.narrowed("g")
    assert (narrow.actions, narrow.tools) == (("A", "B"), ("T", "U"))
    assert [(e.source, e.target) for e in narrow.edges] == [("A", "T"), ("A", "B"), ("B", "U")]
    assert usage_ordered(groups[0]) == ["T", "U", "ghost"]


def test_recommend_touches_only_the_actions_it_reaches() -> None:
    touched: set[str] = set()

    class Watched(dict[str, Any]):
        def __getitem__(self, key: str) -> Any:
            touched.add(key)
            return super().__getitem__(key)

    chain = [action(f"a{i}", {f"a{i + 1}": 1.0}) for i in range(100)]
    toolkit = Toolkit(Watched({a["name"]: a for a in chain}), {})
    recommend(toolkit, ["a0"], hops=2)
    assert touched == {f"a{i}" for i in range(3)}
