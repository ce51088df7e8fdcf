"""toolctl.learning.evaluate: held-out recall of the next call against two baselines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.learning.support import write_transcripts
from toolctl.errors import UsageError
from toolctl.learning.evaluate import evaluate, tuned_weight
from toolctl.transcripts import Transcript, read_transcripts


def transcripts(tmp_path: Path) -> list[Transcript]:
    path = write_transcripts(tmp_path / "chat.jsonl")
    return list(read_transcripts(path.read_text().splitlines(), str(path)))


def test_the_blend_beats_both_baselines_on_conversations_whose_requests_say_what_they_want(
    tmp_path: Path,
) -> None:
    found = evaluate(transcripts(tmp_path), folds=4, top=3)
    scores = {s.model: s for s in found.scores}
    assert [s.model for s in found.scores] == ["learned", "transition", "popularity"]
    calls = scores["learned"].calls
    assert calls == sum(len(t.calls) for t in transcripts(tmp_path))
    for score in scores.values():
        assert score.recall(1) <= score.recall(2) <= score.recall(3) <= 1.0
        assert score.list_size == 3.0  # every conversation offers more than 3 tools
    assert scores["learned"].recall(1) > scores["transition"].recall(1)
    assert scores["transition"].recall(3) > scores["popularity"].recall(3)
    assert len(found.weights) == 4
    document = found.to_json()
    assert document["calls"] == calls and json.loads(json.dumps(document)) == document
    assert list(document["models"][0]["recall"]) == ["1", "2", "3"]


def test_evaluation_is_deterministic(tmp_path: Path) -> None:
    data = transcripts(tmp_path)
    assert evaluate(data, 5, 5).to_json() == evaluate(data, 5, 5).to_json()


def test_the_list_is_never_longer_than_the_tools_offered(tmp_path: Path) -> None:
    found = evaluate(transcripts(tmp_path), folds=2, top=10)
    assert all(s.list_size < 10 for s in found.scores)


def test_folds_and_top_are_checked(tmp_path: Path) -> None:
    data = transcripts(tmp_path)
    with pytest.raises(UsageError, match="--folds"):
        evaluate(data, 1, 5)
    with pytest.raises(UsageError, match="--folds"):
        evaluate(data[:3], 4, 5)
    with pytest.raises(UsageError, match="--top"):
        evaluate(data, 2, 0)


def test_the_lexical_weight_is_tuned_only_where_there_are_requests(tmp_path: Path) -> None:
    data = transcripts(tmp_path)
    assert tuned_weight(data) in (0.2, 0.35, 0.5, 0.65)
    assert tuned_weight(data[:3]) is None
