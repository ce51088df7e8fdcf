"""The toolkit graph (Chat2Graph's Toolkit) and ``recommend``: a bounded BFS over scored edges.

Actions are nodes with weighted Next edges (action → action) and Call edges (action → tool);
groups name tools. The graph is built from the registry's plain descriptor data and never
does I/O itself. Each action's edges are read once into adjacency maps: all up front by
``build``, or as a search reaches them when the actions come lazily from the registry
cache (``recommend`` then touches only the few thousand actions it reaches).

Rules shared by everything here: an edge without a score scores 1.0; an edge repeated in
one action counts once, with its highest score; edges to names that are not actions or
tools are left out (``check`` reports them); every output is sorted.
"""

from __future__ import annotations

import gc
import math
from collections import deque
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import groupby
from typing import Any, NamedTuple

from toolctl.errors import UsageError

NEXT = "next"
CALL = "call"
DEFAULT_SCORE = 1.0
DEFAULT_THRESHOLD = 0.5


# The three value types below are NamedTuples rather than frozen dataclasses: a big
# recommendation makes ~10^4 of them and a NamedTuple is built three times as fast.


class Edge(NamedTuple):
    """A Next (action → action) or Call (action → tool) edge with its score.

    Fields in sort order: edges compare by source, kind (call before next), then target.
    """

    source: str
    kind: str
    target: str
    score: float

    def to_json(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "kind": self.kind, "score": self.score}


class RecommendedAction(NamedTuple):
    """A kept action: its BFS hop distance and the best path from a start to it."""

    name: str
    hops: int
    path: tuple[str, ...]
    description: str


class RecommendedTool(NamedTuple):
    """A kept tool: the kept actions whose Call edge passes, and the best such score."""

    name: str
    called_by: tuple[str, ...]
    score: float
    runtime: str | None


@dataclass(frozen=True)
class Recommendation:
    """What ``recommend`` keeps; ``unknown`` lists start names that are not actions."""

    actions: tuple[RecommendedAction, ...]
    tools: tuple[RecommendedTool, ...]
    edges: tuple[Edge, ...]
    unknown: tuple[str, ...]
    starts: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The shape docs/design.md gives; every list sorted, so the output is byte-stable."""
        return {
            "actions": [
                {"name": a.name, "hops": a.hops, "path": list(a.path)} for a in self.actions
            ],
            "tools": [
                {"name": t.name, "called_by": list(t.called_by), "score": t.score}
                for t in self.tools
            ],
            "edges": [e.to_json() for e in self.edges],
        }

    def drawing(self) -> Drawing:
        tools = tuple(t.name for t in self.tools)
        return Drawing(tuple(a.name for a in self.actions), tools, {}, self.edges, self.starts)


@dataclass(frozen=True)
class Drawing:
    """Nodes and edges to draw (DOT, Mermaid, JSON); ``groups`` maps a group to its tools."""

    actions: tuple[str, ...]
    tools: tuple[str, ...]
    groups: Mapping[str, tuple[str, ...]]
    edges: tuple[Edge, ...]
    starts: tuple[str, ...] = ()


def usage_ordered(group: Mapping[str, Any]) -> list[str]:
    """A group's tools in usage order: ``usage_order`` first, then the rest as listed."""
    order = [t for t in group.get("usage_order") or [] if t in group.get("tools", [])]
    return list(dict.fromkeys([*order, *group.get("tools", [])]))


class Toolkit:
    """Actions (name → descriptor data), tools (name → runtime) and groups (name → data).

    Each action's edges are read from its data once, on first use, and kept as adjacency
    maps; ``build`` reads them all up front, so that queries only traverse. The toolkit is
    not changed by queries in any other way.
    """

    def __init__(
        self,
        actions: Mapping[str, Mapping[str, Any]],
        tools: Mapping[str, str | None],
        groups: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.actions = actions
        self.tools = tools
        self.groups = groups or {}
        self._action_names = actions.keys()  # a C-level membership test for a plain dict
        self._adjacency: dict[str, tuple[dict[str, float], dict[str, float]]] = {}

    @classmethod
    def from_data(
        cls,
        actions: Iterable[Mapping[str, Any]],
        tools: Mapping[str, str | None],
        groups: Iterable[Mapping[str, Any]] = (),
    ) -> Toolkit:
        """Build from descriptor data as the registry keeps it (``Definition.data``), with
        each tool's runtime."""
        toolkit = cls({a["name"]: a for a in actions}, tools, {g["name"]: g for g in groups})
        return toolkit.build()

    def build(self) -> Toolkit:
        """Read every action's edges now rather than on first use; returns the toolkit."""
        for name in self.actions:
            self._edges_of(name)
        return self

    def prefetch(self, actions: Iterable[str]) -> None:
        """Say which actions are about to be read. An ``actions`` mapping that loads lazily
        (one with a ``prefetch`` method, as the CLI's view of the registry cache has) then
        reads them in one batch; a plain dict needs nothing."""
        prefetch = getattr(self.actions, "prefetch", None)
        if prefetch is not None:
            prefetch(a for a in actions if a not in self._adjacency)

    def next_of(self, action: str) -> Mapping[str, float]:
        """Next edges out of ``action`` to known actions: target → highest score."""
        return self._edges_of(action)[0]

    def calls_of(self, action: str) -> Mapping[str, float]:
        """Call edges out of ``action`` to known tools: tool → highest score."""
        return self._edges_of(action)[1]

    def _edges_of(self, action: str) -> tuple[dict[str, float], dict[str, float]]:
        found = self._adjacency.get(action)
        if found is None:
            data = self.actions[action]
            found = (
                _targets(data.get("next"), "action", self._action_names),
                _targets(data.get("tools"), "tool", self.tools),
            )
            self._adjacency[action] = found
        return found

    def edges(self, actions: Iterable[str] | None = None) -> list[Edge]:
        """Every edge out of ``actions`` (default: all of them), sorted."""
        found = []
        for name in self.actions if actions is None else actions:
            found += [Edge(name, NEXT, t, s) for t, s in self.next_of(name).items()]
            found += [Edge(name, CALL, t, s) for t, s in self.calls_of(name).items()]
        return sorted(found)

    def drawing(self) -> Drawing:
        """The whole toolkit: every action, the tools actions or groups name, every group."""
        edges = self.edges()
        grouped = {
            name: tuple(t for t in usage_ordered(g) if t in self.tools)
            for name, g in self.groups.items()
        }
        tools = {e.target for e in edges if e.kind == CALL}
        tools.update(t for members in grouped.values() for t in members)
        return Drawing(
            tuple(sorted(self.actions)), tuple(sorted(tools)), _sorted(grouped), tuple(edges)
        )

    def narrowed(self, group: str) -> Drawing:
        """One group: its tools, the actions that call them, and the edges among those."""
        members = tuple(t for t in usage_ordered(self.groups[group]) if t in self.tools)
        callers = sorted(a for a in self.actions if any(t in members for t in self.calls_of(a)))
        kept = set(callers)
        edges = [
            e
            for e in self.edges(callers)
            if (e.target in members if e.kind == CALL else e.target in kept)
        ]
        return Drawing(tuple(callers), tuple(sorted(members)), {group: members}, tuple(edges))


def _targets(edges: Any, key: str, known: Container[str]) -> dict[str, float]:
    """Known targets of a list of edge tables, in name order, each with its highest score
    (an edge without one scores 1.0)."""
    found: dict[str, float] = {}
    for edge in edges or ():
        target = edge[key]
        if target in known:
            score = edge.get("score")
            if score is None:
                score = DEFAULT_SCORE
            if found.get(target, -math.inf) < score:
                found[target] = score
    return dict(sorted(found.items())) if len(found) > 1 else found


def _sorted(mapping: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    return {name: mapping[name] for name in sorted(mapping)}


def recommend(
    toolkit: Toolkit,
    starts: Sequence[str],
    hops: int = 0,
    threshold: float = DEFAULT_THRESHOLD,
) -> Recommendation:
    """Chat2Graph's recommend_subgraph, exactly as docs/design.md states it.

    ``kept`` starts as the start actions that exist; each of ``hops`` rounds adds the
    actions a Next edge scoring at least ``threshold`` leads to from the last round's new
    ones; then every Call edge of a kept action that scores at least ``threshold`` keeps its
    tool. Scores do not decay along a path. Unknown start names are returned, not raised.
    """
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
        raise UsageError(f"hops must be a whole number >= 0, got {hops!r}")
    if not 0.0 <= threshold <= 1.0:  # also refuses NaN
        raise UsageError(f"threshold must be within [0, 1], got {threshold!r}")
    given = list(dict.fromkeys(starts))
    existing = [name for name in given if name in toolkit.actions]
    with _collector_paused():
        levels = _levels(toolkit, existing, hops, threshold)
        toolkit.prefetch(levels)
        passing = {
            u: [(v, s) for v, s in toolkit.next_of(u).items() if s >= threshold and v in levels]
            for u in levels
        }
        kept = sorted(levels)
        calls = {u: {t: s for t, s in toolkit.calls_of(u).items() if s >= threshold} for u in kept}
        paths = _best_paths(existing, passing, hops)
        actions = tuple(
            RecommendedAction(name, levels[name], paths[name], _description(toolkit, name))
            for name in kept
        )
        return Recommendation(
            actions,
            _tools(toolkit, calls),
            _edge_list(passing, calls),
            tuple(name for name in given if name not in toolkit.actions),
            tuple(sorted(existing)),
        )


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for one recommendation.

    A big toolkit holds ~10^5 small dicts and lists; the ~10^4 objects a recommendation
    allocates would trigger full collections that scan all of them, which costs more than
    the search itself. Nothing here creates reference cycles.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _description(toolkit: Toolkit, name: str) -> str:
    return str(toolkit.actions[name].get("description") or "")


def _edge_list(
    passing: Mapping[str, list[tuple[str, float]]], calls: Mapping[str, dict[str, float]]
) -> tuple[Edge, ...]:
    """The kept edges in ``Toolkit.edges()`` order: by source, kind, then target.

    ``calls`` is keyed in name order and adjacency is kept in name order, so no sort.
    """
    edges: list[Edge] = []
    for source, targets in calls.items():
        edges += [Edge(source, CALL, t, s) for t, s in targets.items()]
        edges += [Edge(source, NEXT, v, s) for v, s in passing[source]]
    return tuple(edges)


def _levels(toolkit: Toolkit, starts: list[str], hops: int, threshold: float) -> dict[str, int]:
    """The bounded BFS: each kept action and the round that first reached it."""
    levels = dict.fromkeys(starts, 0)
    frontier = list(starts)
    for level in range(1, hops + 1):
        reached: dict[str, None] = {}
        toolkit.prefetch(frontier)
        for action in frontier:
            for target, score in toolkit.next_of(action).items():
                if score >= threshold and target not in levels:
                    reached[target] = None
        if not reached:
            break
        levels.update(dict.fromkeys(reached, level))
        frontier = list(reached)
    return levels


def _tools(toolkit: Toolkit, calls: Mapping[str, dict[str, float]]) -> tuple[RecommendedTool, ...]:
    """Each called tool with its callers (``calls`` is keyed in name order) and best score."""
    callers: dict[str, list[str]] = {}
    best: dict[str, float] = {}
    for source, targets in calls.items():
        for tool, score in targets.items():
            if tool in callers:
                callers[tool].append(source)
                if score > best[tool]:
                    best[tool] = score
            else:
                callers[tool] = [source]
                best[tool] = score
    runtimes = toolkit.tools
    return tuple(
        RecommendedTool(name, tuple(callers[name]), best[name], runtimes.get(name))
        for name in sorted(callers)
    )


def _best_paths(
    starts: list[str], passing: Mapping[str, list[tuple[str, float]]], hops: int
) -> dict[str, tuple[str, ...]]:
    """For each kept action, the best walk to it from a start.

    Candidates are walks of at most ``hops`` passing Next edges. The best has the highest
    lowest score on it; then the fewest edges; then the smallest sequence of names. Found
    exactly by adding edges from the highest score down and keeping, per action, its
    (fewest edges, smallest names) walk so far: an action is settled the first time any
    walk of at most ``hops`` edges reaches it, and the score just added is then its path's
    lowest. A start's path is the start alone.
    """
    start_set = set(starts)
    edges = sorted(
        (
            (score, source, target)
            for source, targets in passing.items()
            for target, score in targets
            if target not in start_set
        ),
        reverse=True,
    )
    label: dict[str, tuple[int, tuple[str, ...]]] = {s: (0, (s,)) for s in starts}
    successors: dict[str, list[str]] = {}
    paths: dict[str, tuple[str, ...]] = {s: (s,) for s in starts}
    for _, batch in groupby(edges, key=lambda edge: edge[0]):
        pending: deque[tuple[str, str]] = deque()
        for _, source, target in batch:
            successors.setdefault(source, []).append(target)
            if source in label:
                pending.append((source, target))
        for name in _relax(pending, label, successors, hops):
            paths[name] = label[name][1]
    return paths


def _relax(
    pending: deque[tuple[str, str]],
    label: dict[str, tuple[int, tuple[str, ...]]],
    successors: Mapping[str, list[str]],
    hops: int,
) -> list[str]:
    """Propagate better (edges, names) labels; returns the actions labelled for the first time."""
    fresh: list[str] = []
    while pending:
        source, target = pending.popleft()
        length, path = label[source]
        if length >= hops:
            continue
        candidate = (length + 1, (*path, target))
        current = label.get(target)
        if current is None or candidate < current:
            if current is None:
                fresh.append(target)
            label[target] = candidate
            pending.extend((target, after) for after in successors.get(target, ()))
    return fresh


def describe(toolkit: Toolkit, drawing: Drawing) -> dict[str, Any]:
    """A drawing as JSON data: nodes with what a reader needs, then the edges; all sorted."""
    return {
        "actions": [
            {"name": a, "description": toolkit.actions[a].get("description") or ""}
            for a in drawing.actions
        ],
        "tools": [{"name": t, "runtime": toolkit.tools.get(t)} for t in drawing.tools],
        "groups": [{"name": g, "tools": list(tools)} for g, tools in drawing.groups.items()],
        "edges": [e.to_json() for e in drawing.edges],
    }
