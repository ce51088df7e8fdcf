"""`toolctl stats`: per tool, calls, success rate, p50/p95/p99 and the slowest; a histogram."""

from __future__ import annotations

import typer

from toolctl.cli.common import (
    CallerFilter,
    JsonOption,
    OutcomeFilter,
    SessionFilter,
    SinceFilter,
    ToolFilter,
    UntilFilter,
)


def install(app: typer.Typer) -> None:
    app.command("stats")(stats_command)


def stats_command(
    tool: ToolFilter = None,
    outcome: OutcomeFilter = None,
    caller: CallerFilter = None,
    session: SessionFilter = None,
    since: SinceFilter = None,
    until: UntilFilter = None,
    json: JsonOption = False,
) -> None:
    """Summarise the run history per tool (calls, success rate, latency percentiles in
    ms, the slowest call) and draw the latency histogram of the selected calls.
    Exit codes: 0 ok, 2 bad option, 74 the history file cannot be read (damaged, not a
    database)."""
    from toolctl.cli.common import settings_for
    from toolctl.records.reports import selection, tool_stats
    from toolctl.terminal import render
    from toolctl.terminal.records import STATS_COLUMNS, print_histogram, stats_rows

    settings = settings_for(None)
    chosen = selection(tool, outcome, caller, session, since, until)
    report = tool_stats(settings, chosen)
    from toolctl.records.history import Filter, has_calls, history_path, take_warnings

    if json:
        render.print_json(report.to_json())
    elif not report.tools:
        if chosen != Filter() and has_calls(history_path(settings.state_dir)):
            render.note("no calls match the filters (see 'toolctl history --help')")
        else:
            render.note("no calls recorded yet (see 'toolctl history --help')")
    else:
        render.print_table(STATS_COLUMNS, stats_rows(report.tools), color=settings.color)
        print_histogram(report.bins, color=settings.color)
    for message in take_warnings():  # rows skipped as odd
        render.warn(message)
