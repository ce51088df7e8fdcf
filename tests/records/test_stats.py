"""Percentiles, per-tool statistics and the histogram of `toolctl stats`."""

from __future__ import annotations

import random
import statistics

from toolctl.records.stats import histogram, percentile, summarize


def test_percentiles_match_the_standard_librarys_inclusive_quantiles() -> None:
    rng = random.Random(7)
    for size in (2, 3, 10, 101, 1000):
        values = sorted(rng.expovariate(1 / 50) for _ in range(size))
        cuts = statistics.quantiles(values, n=100, method="inclusive")
        for fraction, cut in ((0.50, cuts[49]), (0.95, cuts[94]), (0.99, cuts[98])):
            assert abs(percentile(values, fraction) - cut) < 1e-3


def test_edge_cases_of_percentiles() -> None:
    assert percentile([], 0.5) == 0.0
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([1.0, 3.0], 0.5) == 2.0


def test_summary_per_tool() -> None:
    rows = [
        ("b", "ok", 10.0, "http"),
        ("a", "ok", 1.0, "local"),
        ("a", "failed", 3.0, "local"),
        ("a", "timeout", 100.0, "local"),
    ]
    a, b = summarize(rows)
    assert (a.tool, a.calls, a.ok, a.slowest, a.p50) == ("a", 3, 1, 100.0, 3.0)
    assert round(a.success_rate, 3) == 0.333 and a.to_json()["success_rate"] == 0.3333
    assert (b.tool, b.runtime, b.calls, b.success_rate) == ("b", "http", 1, 1.0)


def test_calls_that_never_ran_count_but_hold_no_duration() -> None:
    """Imported calls (0 ms) and refused ones pulled the percentiles down and showed the
    tool's runtime as `transcript`."""
    rows = [
        ("greet", "ok", 20.0, "local"),
        ("greet", "ok", 22.0, "local"),
        ("greet", "invalid", 0.0, "local"),
        *[("greet", "ok", 0.0, "transcript")] * 40,
        ("typed", "invalid", 0.0, "local"),
    ]
    greet, typed = summarize(rows)
    assert (greet.runtime, greet.calls, greet.ok, greet.p50, greet.slowest) == (
        "local",
        43,
        42,
        21.0,
        22.0,
    )
    assert (typed.calls, typed.ok, typed.p50, typed.slowest) == (1, 0, 0.0, 0.0)


def test_histogram_bins_run_from_the_first_to_the_last_used() -> None:
    bins = histogram([3.0, 4.0, 40.0, 90_000.0])
    assert [b.calls for b in bins] == [2, 0, 0, 1, *[0] * 9, 1]
    assert (bins[0].low, bins[0].high, bins[0].label) == (2.0, 5.0, "≤ 5 ms")
    assert bins[-1].high is None and bins[-1].label == "> 60 s"
    assert histogram([]) == []
