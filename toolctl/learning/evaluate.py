"""Held-out evaluation of next-call prediction on transcripts, against two baselines.

Conversation ``i`` goes to fold ``i mod folds``. For each fold, the models learn from the
other folds and rank, before every call of a held-out conversation, the candidates: the
tools that conversation offered (its ``tools``), or, for a conversation without a list,
every tool called anywhere in the file. A hit is the called tool within the first k.

* ``popularity``: the tools by how often they were called in training.
* ``transition``: first-order transitions (the last call, or the start of the conversation),
  ties and unseen contexts broken by popularity.
* ``learned``: ``blend.rank_next`` with the learned model, no static graph; its lexical
  weight is chosen by cross-validation inside the training folds only (``tune``), never on
  the held-out fold.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from toolctl.errors import UsageError
from toolctl.learning.blend import blend, ranked, request_probabilities
from toolctl.learning.bm25 import BM25, tool_text
from toolctl.learning.model import START, LearnedModel, learn
from toolctl.transcripts import Transcript

WEIGHTS = (0.2, 0.35, 0.5, 0.65)  # the lexical weights cross-validation chooses among
MODELS = ("learned", "transition", "popularity")

Ranker = Callable[[Transcript, list[str], str], list[str]]


@dataclass(frozen=True)
class Score:
    """One model's hits at each k = 1..top over ``calls`` held-out calls."""

    model: str
    hits: tuple[int, ...]
    calls: int
    shown: int

    def recall(self, k: int) -> float:
        return self.hits[k - 1] / self.calls if self.calls else 0.0

    @property
    def list_size(self) -> float:
        return self.shown / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class Evaluation:
    folds: int
    top: int
    conversations: int
    scores: tuple[Score, ...]
    weights: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "folds": self.folds,
            "top": self.top,
            "conversations": self.conversations,
            "calls": self.scores[0].calls if self.scores else 0,
            "lexical_weights": list(self.weights),
            "models": [
                {
                    "name": s.model,
                    "recall": {str(k): round(s.recall(k), 4) for k in range(1, self.top + 1)},
                    "list_size": round(s.list_size, 4),
                }
                for s in self.scores
            ],
        }


class Candidates:
    """The tools each conversation may be offered, and a BM25 index over their texts."""

    def __init__(self, transcripts: Sequence[Transcript]) -> None:
        called = sorted({c.tool for t in transcripts for c in t.calls})
        self._everything = {name: name for name in called}
        self._indexes: dict[int, tuple[dict[str, str], BM25]] = {}
        self._texts = {
            id(t): {s.name: tool_text(s.name, s.description, s.parameters) for s in t.tools}
            for t in transcripts
            if t.tools
        }

    def of(self, transcript: Transcript) -> tuple[dict[str, str], BM25]:
        key = id(transcript)
        if key not in self._indexes:
            texts = self._texts.get(key, self._everything)
            self._indexes[key] = (texts, BM25(texts))
        return self._indexes[key]


def evaluate(transcripts: Sequence[Transcript], folds: int, top: int) -> Evaluation:
    """Recall@1..top of the three models, ``folds``-fold cross-validated."""
    if len(transcripts) < 2:  # no --folds could do: one to learn from, one to test on
        raise UsageError(
            f"evaluating needs at least 2 conversations; the files hold {len(transcripts)}"
        )
    if folds < 2 or folds > len(transcripts):
        raise UsageError(f"--folds must be between 2 and the {len(transcripts)} conversations")
    if top < 1:
        raise UsageError("--top must be at least 1")
    candidates = Candidates(transcripts)
    hits = {name: [0] * top for name in MODELS}
    shown = Counter[str]()
    weights = []
    total = 0
    for fold in range(folds):
        train = [t for i, t in enumerate(transcripts) if i % folds != fold]
        test = [t for i, t in enumerate(transcripts) if i % folds == fold]
        weight = tune(train, candidates, top, max(2, min(folds - 1, len(train))))
        weights.append(weight)
        rankers = rankers_for(train, candidates, weight)
        for transcript in test:
            history: list[str] = []
            for call in transcript.calls:
                total += 1
                for name, rank in rankers.items():
                    found = rank(transcript, history, call.query)[:top]
                    shown[name] += len(found)
                    if call.tool in found:
                        for k in range(found.index(call.tool), top):
                            hits[name][k] += 1
                history.append(call.tool)
    scores = tuple(Score(name, tuple(hits[name]), total, shown[name]) for name in MODELS)
    return Evaluation(folds, top, len(transcripts), scores, tuple(weights))


def rankers_for(
    train: Sequence[Transcript], candidates: Candidates, weight: float
) -> dict[str, Ranker]:
    """The three models learned from ``train``, each as (transcript, history, query) → list."""
    model = learn((t.calls for t in train), lexical_weight=weight)
    popular = {t: tally.calls for t, tally in model.tools.items()}
    following: dict[str, Counter[str]] = defaultdict(Counter)
    for transcript in train:
        names = [START, *(c.tool for c in transcript.calls)]
        for before, after in pairwise(names):
            following[before][after] += 1

    def popularity(transcript: Transcript, history: list[str], query: str) -> list[str]:
        texts, _ = candidates.of(transcript)
        return [s.name for s in ranked({c: popular.get(c, 0) for c in texts}, len(texts))]

    def transition(transcript: Transcript, history: list[str], query: str) -> list[str]:
        texts, _ = candidates.of(transcript)
        after = following.get(history[-1] if history else START, Counter())
        scores = {c: after[c] * 1e9 + popular.get(c, 0) for c in texts}
        return [s.name for s in ranked(scores, len(texts))]

    def learned(transcript: Transcript, history: list[str], query: str) -> list[str]:
        texts, index = candidates.of(transcript)
        names = sorted(texts)
        request = request_probabilities(index, query, names)
        scores = blend(model.probabilities(history, names), request, {}, weight)
        return [s.name for s in ranked(scores, len(names))]

    return {"learned": learned, "transition": transition, "popularity": popularity}


def tune(train: Sequence[Transcript], candidates: Candidates, top: int, folds: int) -> float:
    """The lexical weight of ``WEIGHTS`` with the most hits@top by ``folds``-fold
    cross-validation within ``train``; the smaller weight on a tie."""
    hits = dict.fromkeys(WEIGHTS, 0)
    for fold in range(folds):
        inner = [t for i, t in enumerate(train) if i % folds != fold]
        model = learn(t.calls for t in inner)
        for transcript in (t for i, t in enumerate(train) if i % folds == fold):
            _count_hits(model, transcript, candidates, top, hits)
    return max(WEIGHTS, key=lambda w: (hits[w], -w))


def _count_hits(
    model: LearnedModel,
    transcript: Transcript,
    candidates: Candidates,
    top: int,
    hits: dict[float, int],
) -> None:
    texts, index = candidates.of(transcript)
    names = sorted(texts)
    history: list[str] = []
    for call in transcript.calls:
        learned = model.probabilities(history, names)
        request = request_probabilities(index, call.query, names)
        for weight in hits:
            best = ranked(blend(learned, request, {}, weight), top)
            hits[weight] += any(s.name == call.tool for s in best)
        history.append(call.tool)


def tuned_weight(transcripts: Sequence[Transcript], top: int = 5, folds: int = 5) -> float | None:
    """The lexical weight for a model learned from all of ``transcripts``, by cross-validation
    over them; None when there are too few conversations or no request text to tune on."""
    if len(transcripts) < folds or not any(c.query for t in transcripts for c in t.calls):
        return None
    return tune(transcripts, Candidates(transcripts), top, folds)
