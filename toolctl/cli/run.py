"""`toolctl run NAME`: one call (or a --batch of calls) to a tool, by name.

No ``from __future__ import annotations`` here: typer reads the command's signature five
times while building it, and string annotations would be compiled and evaluated (every
``typer.Option(...)`` in them) at each read, ~4 ms of each `toolctl run`.
"""

from typing import TYPE_CHECKING, Annotated

import typer

from toolctl import arguments as tool_args
from toolctl.cli.common import (
    AnnouncedOption,
    JsonOption,
    PulsarUrlOption,
    RegistryOption,
    StrictOption,
    complete_arguments,
    complete_tools,
    settings_for,
)

if TYPE_CHECKING:
    from toolctl.calls import Caller
    from toolctl.cli.render import TerminalSink
    from toolctl.runners.base import ToolSpec


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
            help="One argument; the value is converted to the declared type.",
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
        typer.Option(help="Seconds (above 0, at most 86400); overrides the descriptor's timeout."),
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
        str | None, typer.Option(help="User sent to Pulsar services (default: your login name).")
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
        int, typer.Option(min=1, max=1024, help="Calls in flight with --batch.")
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

    Exit codes: 0 ok, 1 the tool failed, 2 bad arguments, 4 unknown tool, 5 transport
    unavailable, 124 timed out, 130 interrupted, 143 terminated.
    """
    from toolctl import calls
    from toolctl.cli import _write_records, render
    from toolctl.cli.common import open_registry
    from toolctl.errors import ToolFailed
    from toolctl.processes.lifetime import Lifetime

    cap = tool_args.parse_size(max_output, "--max-output") if max_output is not None else None
    settings = settings_for(
        registry,
        strict,
        verbose=verbose,
        pulsar_url=pulsar_url,
        user=user,
        record_arguments=record_arguments,
        announced=announced,
    )
    sink = render.TerminalSink(settings, show_output=not json, events=verbose)
    sink.answers = tool_args.key_values(elicit or [], "--elicit")
    caller = calls.Caller(settings, open_registry(settings), origin=calls.cli_origin(settings))
    with Lifetime(raising=True) as lifetime, caller:
        lifetime.at_once(_write_records)  # a second signal ends at once, records written
        spec = calls.resolve(caller.registry, name, allow_staging=allow_staging)
        if batch is not None:
            return _batch(caller, spec, batch, bool(arg or args), concurrency, timeout, sink, cap)
        given = tool_args.read_args_option(args) if args is not None else None
        if dry_run:
            plan = caller.describe(spec, given, pairs=arg or [], timeout=timeout)
            return render.print_plan(spec.name, plan, as_json=json)
        result = caller.call(
            spec, given, pairs=arg or [], timeout=timeout, sink=sink, max_output=cap
        )
    render.print_result(result, as_json=json, already_streamed=sink.streamed)
    if not result.success:
        raise ToolFailed("the tool failed", quiet=True)


def _batch(
    caller: "Caller",
    spec: "ToolSpec",
    lines: str,
    given: bool,
    concurrency: int,
    timeout: float | None,
    sink: "TerminalSink",
    cap: int | None,
) -> None:
    """One call per line of ``lines`` (a file, or - for stdin), results as JSON lines;
    ``given``: arguments given on the command line too, which a batch refuses."""
    import gc

    from toolctl.cli import render
    from toolctl.errors import ToolFailed, UsageError

    if given:
        raise UsageError("--batch reads the arguments from its lines; drop --arg/--args")
    gc.freeze()  # what start-up built lives to the end: keep it out of every GC pass
    results = caller.batch(
        spec,
        render.open_lines(lines),
        concurrency=concurrency,
        timeout=timeout,
        sink=sink,
        max_output=cap,
    )
    if not render.print_results(results, render.batch_progress(lines, sink.settings.color)):
        raise ToolFailed("the tool failed", quiet=True)
