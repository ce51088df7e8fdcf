"""What `toolctl history` and `toolctl stats` share: the filter options and the views."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from toolctl.records.history import CallRecord, Filter
    from toolctl.records.stats import Bin, ToolStats

ToolFilter = Annotated[str | None, typer.Option("--tool", metavar="NAME", help="Only this tool.")]
OutcomeFilter = Annotated[
    str | None,
    typer.Option(
        metavar="OUTCOME",
        help="Only calls that ended so: ok, failed, invalid, timeout, unavailable, ...",
    ),
]
CallerFilter = Annotated[
    str | None,
    typer.Option(metavar="CALLER", help="Only calls from: cli, batch, serve, mcp, worker, import."),
]
SessionFilter = Annotated[str | None, typer.Option(metavar="ID", help="Only this session.")]
SinceFilter = Annotated[
    str | None,
    typer.Option(metavar="WHEN", help="Only calls since WHEN: 30m, 2h, 7d, 1w ago, or a date."),
]
UntilFilter = Annotated[
    str | None, typer.Option(metavar="WHEN", help="Only calls before WHEN (as --since).")
]


def selection(
    tool: str | None,
    outcome: str | None,
    caller: str | None,
    session: str | None,
    since: str | None,
    until: str | None,
) -> Filter:
    """The Filter the options describe; a malformed time is a usage error (exit 2)."""
    from toolctl.records.history import Filter
    from toolctl.records.reports import parse_when

    return Filter(
        tool,
        outcome,
        caller,
        session,
        parse_when(since, "--since") if since else None,
        parse_when(until, "--until") if until else None,
    )


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
    from toolctl.cli.render import fancy

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


def transcript_lines(file: Path) -> Iterable[str]:
    """The lines of a transcript file, or of stdin for "-"; an unreadable file is exit 2."""
    from toolctl.errors import UsageError

    if str(file) == "-":
        return sys.stdin
    try:
        return file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read {file}: {exc.strerror}") from exc
