"""The next tools ranked: learned transitions blended with the static graph and the request.

    score(t) = (1 - l - g) * P_learned(t | calls so far)
             + l * P_request(t)          (BM25 of the request, softmax over the candidates)
             + g * P_graph(t)            (Call/Next edges from the actions calling the last tool)

``l`` is the model's ``lexical_weight`` (tuned by cross-validation when it was learned from
transcripts with requests, else 0.5); ``g`` is ``GRAPH_WEIGHT`` (0.2, fixed a priori). A part
with nothing to say (no request, no action calling the last tool) gets no weight. Only the
candidates passed in (the tools in force) are ever ranked; ties go by name.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from toolctl.graph import Toolkit
from toolctl.learning.bm25 import BM25
from toolctl.learning.model import LearnedModel

GRAPH_WEIGHT = 0.2
SHARPNESS = 3.0  # softmax temperature of the BM25 part: the best match gets e^3 x a non-match


class Scored(NamedTuple):
    name: str
    score: float


def request_probabilities(index: BM25, query: str, candidates: Sequence[str]) -> dict[str, float]:
    """BM25 of ``query`` turned into a distribution over the candidates; {} with no match."""
    scores = index.scores(query, candidates) if query else {}
    best = max(scores.values(), default=0.0)
    if best <= 0:
        return {}
    raw = {c: math.exp(SHARPNESS * s / best) for c, s in scores.items()}
    total = sum(raw.values())
    return {c: v / total for c, v in raw.items()}


def graph_probabilities(
    toolkit: Toolkit | None, history: Sequence[str], candidates: Collection[str]
) -> dict[str, float]:
    """The static graph's view of what follows the last call, as a distribution.

    An action that calls the last tool suggests its other tools (their Call score) and the
    tools of the actions its Next edges lead to (Next score x Call score); a tool keeps its
    best such score. {} when no action calls the last tool.
    """
    if toolkit is None or not history:
        return {}
    last = history[-1]
    best: dict[str, float] = {}
    for action in toolkit.actions:
        calls = toolkit.calls_of(action)
        if last not in calls:
            continue
        reached = [(t, s) for t, s in calls.items() if t != last]
        for after, step in toolkit.next_of(action).items():
            reached += [(t, step * s) for t, s in toolkit.calls_of(after).items()]
        for tool, score in reached:
            if tool in candidates and score > best.get(tool, 0.0):
                best[tool] = score
    total = sum(best.values())
    return {t: s / total for t, s in best.items()} if total > 0 else {}


def blend(
    learned: Mapping[str, float],
    request: Mapping[str, float],
    graph: Mapping[str, float],
    lexical_weight: float,
) -> dict[str, float]:
    """The weighted sum of the three parts over the learned part's candidates."""
    lexical = lexical_weight if request else 0.0
    static = GRAPH_WEIGHT if graph else 0.0
    own = 1.0 - lexical - static
    return {
        c: own * p + lexical * request.get(c, 0.0) + static * graph.get(c, 0.0)
        for c, p in learned.items()
    }


def ranked(scores: Mapping[str, float], top: int) -> list[Scored]:
    """The ``top`` best, highest score first, ties by name."""
    order = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [Scored(name, score) for name, score in order[:top]]


def rank_next(
    model: LearnedModel,
    history: Sequence[str],
    candidates: Mapping[str, str],
    *,
    query: str = "",
    toolkit: Toolkit | None = None,
    top: int = 5,
    index: BM25 | None = None,
) -> list[Scored]:
    """The ``top`` next tools after ``history``; ``candidates`` maps each tool in force to
    its text (see ``bm25.tool_text``). ``index`` may be passed to reuse one across calls."""
    names = sorted(candidates)
    learned = model.probabilities(history, names)
    request = request_probabilities(index or BM25(candidates), query, names) if query else {}
    graph = graph_probabilities(toolkit, history, candidates)
    return ranked(blend(learned, request, graph, model.lexical_weight), top)


def adaptive_tools(
    model: LearnedModel,
    calls: Sequence[str],
    candidates: Mapping[str, str],
    top: int,
    *,
    pinned: Sequence[str] = (),
    query: str = "",
    toolkit: Toolkit | None = None,
) -> list[str]:
    """The tools a session is shown after ``calls``: the pinned ones in force, then the
    ``top`` best of the rest. What `mcp serve --adaptive K` lists after each call."""
    shown = [name for name in dict.fromkeys(pinned) if name in candidates]
    rest = {name: text for name, text in candidates.items() if name not in shown}
    best = rank_next(model, calls, rest, query=query, toolkit=toolkit, top=top)
    return shown + [s.name for s in best]
