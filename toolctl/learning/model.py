"""Next-tool scores learned from sessions of calls: a variable-order Markov model.

A session is the calls one agent made, in order. ``learn`` counts, for every context (the
last 1..``order`` tools before a call, ``^`` standing for the session's start), how often
each tool came next, and how often it then failed. A failed call counts ``failure_weight``
of a call (0.25): a tool that keeps failing after X is a worse suggestion after X. A context
longer than one call is kept only when the data supports it (seen ``min_support`` times).

``probabilities`` interpolates the contexts with Witten-Bell smoothing, from the longest one
seen down to popularity and then uniform over the candidates: each level keeps
``n / (n + types)`` of its own estimate, so a context seen often with few distinct
successors counts most. Pure and deterministic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple, Protocol

START = "^"
ORDER = 3
MIN_SUPPORT = 2
FAILURE_WEIGHT = 0.25
LEXICAL_WEIGHT = 0.5  # a priori, when no request text was there to tune it on

Context = tuple[str, ...]


class Step(Protocol):
    """What learning needs of a call: the tool's name and whether it succeeded."""

    @property
    def tool(self) -> str: ...

    @property
    def success(self) -> bool | None: ...


class Tally(NamedTuple):
    """How often a tool was called (in a context), and how many of those calls failed.

    A NamedTuple rather than a frozen dataclass: learning makes ~10^5 of them, and a
    NamedTuple is built three times as fast.
    """

    calls: int
    failed: int = 0

    def weight(self, failure_weight: float) -> float:
        return self.calls - self.failed * (1.0 - failure_weight)


@dataclass(frozen=True)
class LearnedModel:
    """Tallies by context; ``tools`` is the context-free one (popularity)."""

    tools: Mapping[str, Tally]
    contexts: Mapping[Context, Mapping[str, Tally]]
    sessions: int = 0
    order: int = ORDER
    min_support: int = MIN_SUPPORT
    failure_weight: float = FAILURE_WEIGHT
    lexical_weight: float = LEXICAL_WEIGHT
    proposals: tuple[Proposal, ...] = ()

    @property
    def calls(self) -> int:
        return sum(t.calls for t in self.tools.values())

    @cached_property
    def _levels(self) -> dict[Context, dict[str, float]]:
        weighted = {(): self.tools, **self.contexts}
        share = self.failure_weight
        return {
            context: {t: w for t, tally in tallies.items() if (w := tally.weight(share)) > 0}
            for context, tallies in weighted.items()
        }

    def weights(self, context: Context) -> Mapping[str, float]:
        """The success-weighted calls after ``context`` (``()``: overall), zero ones left out."""
        return self._levels.get(context, {})

    def probabilities(self, history: Sequence[str], candidates: Sequence[str]) -> dict[str, float]:
        """P(next = c | history) for each candidate; sums to 1 over ``candidates``."""
        if not candidates:
            return {}
        p = dict.fromkeys(candidates, 1.0 / len(candidates))
        seen = [START, *history][-self.order :]
        for length in range(len(seen) + 1):
            weights = self._levels.get(tuple(seen[len(seen) - length :]))
            if not weights:
                continue
            present = {c: weights[c] for c in candidates if c in weights}
            total = sum(present.values())
            if total <= 0:
                continue
            keep = total / (total + len(present))
            p = {c: keep * present.get(c, 0.0) / total + (1 - keep) * p[c] for c in candidates}
        return p


@dataclass(frozen=True, order=True)
class Proposal:
    """A Call (action → tool) or Next (action → action) edge score the history suggests."""

    kind: str
    source: str
    target: str
    score: float
    current: float | None = field(default=None, compare=False)


def learn(
    sessions: Iterable[Sequence[Step]],
    *,
    order: int = ORDER,
    min_support: int = MIN_SUPPORT,
    failure_weight: float = FAILURE_WEIGHT,
    lexical_weight: float = LEXICAL_WEIGHT,
) -> LearnedModel:
    """Count every call under each of its contexts; keep the contexts the data supports."""
    calls: Counter[tuple[Context, str]] = Counter()
    failed: Counter[tuple[Context, str]] = Counter()
    count = 0
    for session in sessions:
        count += 1
        seen: list[str] = [START]
        for step in session:
            longest = min(order, len(seen))
            keys = [(tuple(seen[len(seen) - n :]), step.tool) for n in range(longest + 1)]
            calls.update(keys)
            if step.success is False:
                failed.update(keys)
            seen.append(step.tool)
    support: Counter[Context] = Counter()
    for (context, _), n in calls.items():
        support[context] += n
    tools: dict[str, Tally] = {}
    contexts: dict[Context, dict[str, Tally]] = {}
    for key, n in calls.items():  # in the order first seen: deterministic; the file sorts
        context, tool = key
        if not context:
            tools[tool] = Tally(n, failed.get(key, 0))
        elif len(context) == 1 or support[context] >= min_support:
            if context not in contexts:
                contexts[context] = {}
            contexts[context][tool] = Tally(n, failed.get(key, 0))
    return LearnedModel(tools, contexts, count, order, min_support, failure_weight, lexical_weight)
