"""toolctl.learning.bm25: the request's words against each tool's name, description, arguments."""

from __future__ import annotations

from toolctl.learning.bm25 import BM25, tool_text, words

TOOLS = {
    "mv": tool_text(
        "mv",
        "Move a file or directory from one location to another.",
        {"properties": {"source": {"description": "Source name"}, "destination": {}}},
    ),
    "grep": tool_text(
        "grep", "Search for lines matching a pattern in a file.", {"properties": {"pattern": {}}}
    ),
    "get_stock_info": tool_text("get_stock_info", "Get the details of a stock.", {}),
}


def test_words_split_names_and_stem_lightly() -> None:
    assert words("getStockInfo moves MATCHING files_here") == [
        "get",
        "stock",
        "info",
        "mov",
        "match",
        "fil",
        "her",
    ]
    assert len({*words("move moving moved moves")}) == 1


def test_the_tool_whose_words_the_request_uses_ranks_first() -> None:
    index = BM25(TOOLS)
    scores = index.scores("Moving the report into the archive directory")
    assert max(scores, key=scores.__getitem__) == "mv"
    scores = index.scores("find the lines with a pattern")
    assert max(scores, key=scores.__getitem__) == "grep"
    assert index.scores("stock details", ["grep"]) == {"grep": 0.0}


def test_a_request_sharing_no_word_scores_zero_everywhere() -> None:
    assert set(BM25(TOOLS).scores("zzz qqq").values()) == {0.0}
    assert BM25({}).scores("anything") == {}
