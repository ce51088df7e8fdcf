"""What `toolctl history` and `toolctl stats` show: the calls' and the tools' tables, the
latency histogram."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolctl.terminal import render

if TYPE_CHECKING:
    from toolctl.records.history import CallRecord
    from toolctl.records.reports import StatsReport
    from toolctl.records.stats import Bin, ToolStats


def print_calls(
    calls: Sequence[CallRecord], *, as_json: bool, color: bool, filtered: bool = False
) -> None:
    """`history`: the calls, newest first, as a table or as JSON; a note when there is
    none (``filtered``: the filters left them all out), as `stats` says it."""
    if as_json:
        render.print_json({"calls": [call.to_json() for call in calls]})
        return
    empty = "no calls match the filters" if filtered else "no calls recorded yet"
    render.print_table(CALL_COLUMNS, call_rows(calls), color=color, empty=empty)


def print_stats(report: StatsReport, *, as_json: bool, color: bool) -> None:
    """`stats`: the tools' table and the latency histogram, as text or as JSON; a note
    when no call is selected, saying whether the filters left them all out."""
    if as_json:
        render.print_json(report.to_json())
    elif report.filtered_out:
        render.note("no calls match the filters (see 'toolctl stats --help')")
    elif not report.tools:
        render.note("no calls recorded yet (see 'toolctl stats --help')")
    else:
        render.print_table(STATS_COLUMNS, stats_rows(report.tools), color=color)
        print_histogram(report.bins, color=color)


def call_rows(calls: Sequence[CallRecord]) -> list[list[str]]:
    return [
        [
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(call.time)),
            call.tool,
            call.caller,
            call.outcome,
            str(call.exit_code),
            f"{call.duration_ms:.1f}",
            call.session or "-",
            (call.trace_id or "-")[:16],
        ]
        for call in calls
    ]


CALL_COLUMNS = ["TIME", "TOOL", "CALLER", "OUTCOME", "EXIT", "MS", "SESSION", "TRACE"]
STATS_COLUMNS = ["TOOL", "RUNTIME", "CALLS", "OK", "P50 MS", "P95 MS", "P99 MS", "SLOWEST MS"]


def stats_rows(tools: Sequence[ToolStats]) -> list[list[str]]:
    return [
        [
            t.tool,
            t.runtime,
            str(t.calls),
            f"{t.success_rate:.0%}",
            f"{t.p50:.1f}",
            f"{t.p95:.1f}",
            f"{t.p99:.1f}",
            f"{t.slowest:.1f}",
        ]
        for t in tools
    ]


def print_histogram(bins: Sequence[Bin], *, color: bool, width: int = 40) -> None:
    """The latency histogram: one bar per bin, drawn with rich on a terminal."""
    from toolctl.terminal.render import fancy

    if not bins:
        return
    most = max(b.calls for b in bins)
    labels = [b.label for b in bins]
    pad = max(len(label) for label in labels)
    lines = []
    for label, b in zip(labels, bins, strict=True):
        length = round(b.calls / most * width) if b.calls else 0
        lines.append((label.rjust(pad), length, b.calls))
    if fancy(sys.stdout, color):
        from rich.console import Console
        from rich.text import Text

        console = Console()
        console.print(Text("latency", style="bold"))
        for label, length, calls in lines:
            console.print(Text.assemble(f"{label} ", ("█" * length, "cyan"), f" {calls}"))
        return
    sys.stdout.write("\nlatency\n")
    for label, length, calls in lines:
        sys.stdout.write(
            " ".join(part for part in (label, "#" * length, str(calls)) if part) + "\n"
        )
