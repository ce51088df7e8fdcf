"""Numbers about calls: per-tool counts, success rates, percentiles, a latency histogram.

Pure functions over (tool, outcome, duration, runtime) rows; `toolctl stats` renders them.
Percentiles interpolate linearly between the closest ranks (numpy's default), so p50 of
two calls is their mean and p99 of one call is that call.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from toolctl.records import NEVER_RAN

EDGES_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000)
"""Upper bounds of the histogram's bins, in ms (a last bin holds everything slower)."""


class ToolStats(NamedTuple):
    """One tool's calls: how many, how many succeeded, how long they took (ms)."""

    tool: str
    runtime: str
    calls: int
    ok: int
    p50: float
    p95: float
    p99: float
    slowest: float

    @property
    def success_rate(self) -> float:
        return self.ok / self.calls if self.calls else 0.0

    def to_json(self) -> dict[str, Any]:
        data = self._asdict()
        data["success_rate"] = round(self.success_rate, 4)
        return data


class Bin(NamedTuple):
    """Calls whose duration is in (low, high] ms; ``high`` is None for the last bin."""

    low: float
    high: float | None
    calls: int

    @property
    def label(self) -> str:
        if self.high is None:
            return f"> {_ms(self.low)}"
        return f"≤ {_ms(self.high)}"

    def to_json(self) -> dict[str, Any]:
        return {"low_ms": self.low, "high_ms": self.high, "calls": self.calls}


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile of sorted values, interpolated (0.0 for none)."""
    if not ordered:
        return 0.0
    place = (len(ordered) - 1) * fraction
    low, high = math.floor(place), math.ceil(place)
    value = ordered[low] + (ordered[high] - ordered[low]) * (place - low)
    return round(value, 3)


IMPORTED = "transcript"
"""The runtime of a call read from a transcript (`history import`): no duration either."""


def ran(outcome: str, runtime: str) -> bool:
    """Whether a call ran, so its duration says how long a tool takes."""
    return outcome not in NEVER_RAN and runtime != IMPORTED


def summarize(rows: Iterable[tuple[str, str, float, str]]) -> list[ToolStats]:
    """Per-tool statistics of (tool, outcome, duration ms, runtime) rows, sorted by tool:
    every call counts, the durations of those that ran alone make the percentiles."""
    calls: dict[str, int] = {}
    durations: dict[str, list[float]] = {}
    ok: dict[str, int] = {}
    runtimes: dict[str, str] = {}
    for tool, outcome, duration, runtime in rows:
        calls[tool] = calls.get(tool, 0) + 1
        ok[tool] = ok.get(tool, 0) + (outcome == "ok")
        taken = durations.setdefault(tool, [])
        if ran(outcome, runtime):
            taken.append(float(duration))
            runtimes[tool] = runtime  # the latest: a tool may have moved to another runtime
        else:
            runtimes.setdefault(tool, runtime)
    found = []
    for tool, taken in sorted(durations.items()):
        taken.sort()
        found.append(
            ToolStats(
                tool,
                runtimes[tool],
                calls[tool],
                ok[tool],
                percentile(taken, 0.50),
                percentile(taken, 0.95),
                percentile(taken, 0.99),
                round(taken[-1], 3) if taken else 0.0,
            )
        )
    return found


def histogram(durations: Iterable[float], edges: Sequence[float] = EDGES_MS) -> list[Bin]:
    """Counts of durations per bin, from the first non-empty bin to the last non-empty."""
    counts = [0] * (len(edges) + 1)
    for duration in durations:
        counts[_bin_of(duration, edges)] += 1
    used = [i for i, n in enumerate(counts) if n]
    if not used:
        return []
    bins = []
    for i in range(used[0], used[-1] + 1):
        low = 0.0 if i == 0 else float(edges[i - 1])
        high = float(edges[i]) if i < len(edges) else None
        bins.append(Bin(low, high, counts[i]))
    return bins


def _bin_of(duration: float, edges: Sequence[float]) -> int:
    for i, edge in enumerate(edges):
        if duration <= edge:
            return i
    return len(edges)


def _ms(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:g} s"
    return f"{value:g} ms"
