"""`toolctl history`: the calls the run history keeps, newest first; `history import FILE`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    subcommand,
)


def install(app: typer.Typer) -> None:
    group = typer.Typer(no_args_is_help=False)
    group.callback(invoke_without_command=True)(history_command)
    group.command("import")(import_command)
    app.add_typer(group, name="history")


def history_command(
    context: typer.Context,
    tool: ToolFilter = None,
    outcome: OutcomeFilter = None,
    caller: CallerFilter = None,
    session: SessionFilter = None,
    since: SinceFilter = None,
    until: UntilFilter = None,
    limit: Annotated[
        int, typer.Option(min=1, max=1_000_000, metavar="N", help="Calls to show.")
    ] = 20,
    json: JsonOption = False,
) -> None:
    """Show recent calls from the run history (newest first); `history import FILE` adds
    chat transcripts to it.

    Every call through toolctl leaves a row in $XDG_STATE_HOME/toolctl/history.sqlite3
    (see docs/records.md); filters combine. Exit codes: 0 ok, 2 bad option, 74 the
    history file cannot be read (damaged, not a database).
    """
    if subcommand(context):
        return
    from toolctl.records.reports import recent_calls, selection
    from toolctl.terminal.records import print_calls

    settings = settings_for(None)
    chosen = selection(tool, outcome, caller, session, since, until)
    calls = recent_calls(settings, chosen, limit, reporter(settings))
    filtered = any(v not in (None, []) for v in (tool, outcome, caller, session, since, until))
    print_calls(calls, as_json=json, color=settings.color, filtered=filtered)


def import_command(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="OpenAI chat JSONL ('-': stdin).")],
    record_arguments: Annotated[
        bool,
        typer.Option("--record-arguments", help="Keep the calls' arguments and answers, masked."),
    ] = False,
    json: JsonOption = False,
) -> None:
    """Import chat transcripts (OpenAI chat format, JSON Lines: one {"messages": [...]}
    conversation a line, tool calls in "tool_calls") as sessions of calls (caller
    "import"). Exit codes: 0 ok, 2 unreadable file, a line that is not a conversation
    (nothing is imported), or no conversation at all, 74 the history file cannot be
    written."""
    from toolctl.records.transcripts import import_transcripts, transcript_lines
    from toolctl.terminal import render

    settings = settings_for(None, record_arguments=record_arguments)
    imported = import_transcripts(settings, transcript_lines(file), str(file))
    shown = render.display_path(file)
    line = f"imported {imported.calls} call(s) in {imported.sessions} session(s) from {shown}"
    render.outcome(imported.to_json(), line, as_json=json)
