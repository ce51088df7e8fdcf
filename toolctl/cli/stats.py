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
    reporter,
    settings_for,
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
    from toolctl.records.reports import selection, tool_stats
    from toolctl.terminal.records import print_stats

    settings = settings_for(None)
    chosen = selection(tool, outcome, caller, session, since, until)
    report = tool_stats(settings, chosen, reporter(settings))
    print_stats(report, as_json=json, color=settings.color)
