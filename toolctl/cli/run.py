"""`toolctl run NAME`: one call (or a --batch of calls) to a tool, by name.

No ``from __future__ import annotations`` here: typer reads the command's signature five
times while building it, and string annotations would be compiled and evaluated (every
``typer.Option(...)`` in them) at each read, ~4 ms of each `toolctl run`.
"""

from typing import Annotated

import typer

from toolctl import arguments as tool_args
from toolctl.cli.common import (
    AnnouncedOption,
    JsonOption,
    PulsarUrlOption,
    RegistryOption,
    StrictOption,
    open_registry,
    settings_for,
)
from toolctl.terminal.completion import complete_arguments, complete_tools


def install(app: typer.Typer) -> None:
    app.command("run")(run_command)


def run_command(
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="The tool to run.", autocompletion=complete_tools)
    ],
    arg: Annotated[
        list[str] | None,
        typer.Option(
            "--arg",
            "-a",
            metavar="KEY=VALUE",
            help="One argument, converted to its declared type; repeat an array's for its items.",
            autocompletion=complete_arguments,
        ),
    ] = None,
    args: Annotated[
        str | None,
        typer.Option(
            "--args",
            metavar="JSON|@FILE|-",
            help="All arguments as a JSON object, from a file, or from stdin.",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            metavar="SECONDS",
            help="Seconds (above 0, at most 86400); overrides the descriptor's timeout.",
        ),
    ] = None,
    max_output: Annotated[
        str | None,
        typer.Option(
            "--max-output",
            metavar="SIZE",
            help="Bytes of output the result holds (e.g. 1MiB; default: the tool's "
            "max_output, 16MiB); the rest is dropped and counted, streaming passes it all.",
        ),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            metavar="NAME", help="User sent to Pulsar services (default: your login name)."
        ),
    ] = None,
    pulsar_url: PulsarUrlOption = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the resolved invocation (secrets masked) and run nothing."
        ),
    ] = False,
    batch: Annotated[
        str | None,
        typer.Option(
            metavar="FILE|-",
            help="JSON Lines of argument objects; one result line per input line, in order.",
        ),
    ] = None,
    concurrency: Annotated[
        int, typer.Option(min=1, max=1024, metavar="N", help="Calls in flight with --batch.")
    ] = 1,
    allow_staging: Annotated[
        bool,
        typer.Option(
            "--allow-staging", help="Run a tool whose state is staging, disabled or deprecated."
        ),
    ] = False,
    elicit: Annotated[
        list[str] | None,
        typer.Option(
            "--elicit",
            metavar="KEY=VALUE",
            help="An answer to an MCP server's elicitation (nobody is asked: answers that "
            "cover its required fields accept it, else it is declined).",
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Log each call on stderr (TOOLCTL_LOG=json for JSON lines)."
        ),
    ] = False,
    record_arguments: Annotated[
        bool,
        typer.Option(
            "--record-arguments",
            help="Keep the arguments and output in the run history, secrets masked "
            "(also TOOLCTL_RECORD_ARGUMENTS=1).",
        ),
    ] = False,
    registry: RegistryOption = None,
    announced: AnnouncedOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Run a tool by name; print its output (or the whole result with --json).

    Exit codes: 0 ok, 1 the tool failed, 2 bad arguments, 3 refused by the registry (a
    look-alike name, a changed MCP pin, --strict), 4 unknown tool, 5 transport unavailable,
    74 output lost, 124 timed out, 130 interrupted, 143 terminated.
    """
    from toolctl.calls.command import RunRequest, run_request
    from toolctl.cli import write_records
    from toolctl.terminal import render

    render.RUN_JSON = json and not batch
    cap = tool_args.parse_size(max_output, "--max-output") if max_output is not None else None
    settings = settings_for(
        registry, strict, verbose=verbose, pulsar_url=pulsar_url, user=user,
        record_arguments=record_arguments, announced=announced,
    )  # fmt: skip
    answers = tool_args.key_values(elicit or [], "--elicit")
    sink = render.TerminalSink(settings, show_output=not json, events=verbose, answers=answers)
    request = RunRequest(
        name, arg or [], args=args, batch=batch, concurrency=concurrency, timeout=timeout,
        max_output=cap, allow_staging=allow_staging, dry_run=dry_run,
    )  # fmt: skip
    with run_request(
        settings, open_registry(settings), request, sink, at_once=write_records
    ) as done:
        from toolctl.terminal import running  # not before: an unknown tool never needs it

        ok = running.print_run(done, sink, as_json=json, source=batch)
    running.ended(sink, ok)
