"""Call and Next edge scores for a registry's actions, proposed from what the history shows.

In Chat2Graph's terms an action's Call edges say which tools it uses and how much; its Next
edges say which action comes after it. From a learned model (success-weighted calls and
first-order transitions):

* Call A → t (only the edges A already has: which tools an action uses is a human choice):
  t's weighted calls over those of A's most used tool, so A's main tool scores 1.0;
* Next A → B (any two different actions): the weighted transitions from a tool A calls to a
  tool B calls, over those of A's strongest successor, so A's most likely next scores 1.0.

Each proposal carries the current score of the edge, if there is one, for review. Nothing
here writes a descriptor: the proposals go into the learned file for a person to apply.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from toolctl.graph import CALL, NEXT, Toolkit
from toolctl.learning.model import START, LearnedModel, Proposal

DIGITS = 2  # as hand-written Chat2Graph scores are


def propose(toolkit: Toolkit, model: LearnedModel) -> tuple[Proposal, ...]:
    """Every Call and Next proposal with a positive score, sorted (kind, source, target)."""
    used = model.weights(())
    callers: dict[str, list[str]] = defaultdict(list)
    proposals: list[Proposal] = []
    for action in sorted(toolkit.actions):
        calls = toolkit.calls_of(action)
        for tool in calls:
            callers[tool].append(action)
        best = max((used.get(t, 0.0) for t in calls), default=0.0)
        if best > 0:
            proposals += [
                Proposal(CALL, action, t, round(used[t] / best, DIGITS), calls[t])
                for t in calls
                if used.get(t, 0.0) > 0
            ]
    proposals += _next(toolkit, model, callers)
    return tuple(sorted(proposals))


def _next(
    toolkit: Toolkit, model: LearnedModel, callers: Mapping[str, list[str]]
) -> list[Proposal]:
    flows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for context in model.contexts:
        if len(context) != 1 or context[0] == START:
            continue
        for before in callers.get(context[0], ()):
            for tool, weight in model.weights(context).items():
                for after in callers.get(tool, ()):
                    if after != before:
                        flows[before][after] += weight
    proposals = []
    for before, targets in flows.items():
        best = max(targets.values())
        current = toolkit.next_of(before)
        proposals += [
            Proposal(NEXT, before, after, round(w / best, DIGITS), current.get(after))
            for after, w in targets.items()
        ]
    return proposals
