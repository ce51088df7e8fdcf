"""`toolctl run NAME`: one call (or a --batch of calls) to a tool, by name.

No ``from __future__ import annotations`` here: typer reads the command's signature five
times while building it, and string annotations would be compiled and evaluated (every
``typer.Option(...)`` in them) at each read, ~4 ms of each `toolctl run`.
"""

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from toolctl import arguments as tool_args
from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, settings_for


def install(app: typer.Typer) -> None:
    app.command("run")(run_command)


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM stops the call as Ctrl-C does (everything it started is ended), exit 143."""
    from toolctl.errors import TerminateSignal

    def terminate(signum: int, frame: object) -> None:
        raise TerminateSignal()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The tool to run.")],
    arg: Annotated[
        list[str] | None,
        typer.Option(
            "--arg",
            "-a",
            metavar="KEY=VALUE",
            help="One argument; the value is converted to the declared type.",
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
    pulsar_url: Annotated[
        str | None,
        typer.Option(
            "--pulsar-url",
            metavar="URL",
            help="Pulsar broker (default $TOOLCTL_PULSAR_URL or pulsar://localhost:6650).",
        ),
    ] = None,
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
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Run a tool by name; print its output (or the whole result with --json).

    Exit codes: 0 ok, 1 the tool failed, 2 bad arguments, 4 unknown tool, 5 transport
    unavailable, 124 timed out, 130 interrupted, 143 terminated.
    """
    from toolctl import calls
    from toolctl.cli import render
    from toolctl.cli.common import open_registry
    from toolctl.errors import ToolFailed, UsageError

    cap = tool_args.parse_size(max_output, "--max-output") if max_output is not None else None
    settings = settings_for(
        registry,
        strict,
        verbose=verbose,
        pulsar_url=pulsar_url,
        user=user,
        record_arguments=record_arguments,
    )
    sink = render.TerminalSink(settings, show_output=not json, events=verbose)
    origin = calls.cli_origin(settings)
    registry_ = open_registry(settings)
    with sigterm_interrupts(), calls.Caller(settings, registry_, origin=origin) as caller:
        spec = calls.resolve(caller.registry, name, allow_staging=allow_staging)
        if batch is not None:
            if arg or args:
                raise UsageError("--batch reads the arguments from its lines; drop --arg/--args")
            import gc

            gc.freeze()  # what start-up built lives to the end: keep it out of every GC pass
            results = caller.batch(
                spec,
                render.open_lines(batch),
                concurrency=concurrency,
                timeout=timeout,
                sink=sink,
                max_output=cap,
            )
            if not render.print_results(results):
                raise ToolFailed("the tool failed", quiet=True)
            return
        given = tool_args.read_args_option(args) if args is not None else None
        if dry_run:
            plan = caller.describe(spec, given, pairs=arg or [], timeout=timeout)
            render.print_plan(spec.name, plan, as_json=json)
            return
        result = caller.call(
            spec, given, pairs=arg or [], timeout=timeout, sink=sink, max_output=cap
        )
    render.print_result(result, as_json=json, already_streamed=sink.streamed)
    if not result.success:
        raise ToolFailed("the tool failed", quiet=True)
