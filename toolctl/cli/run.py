"""`toolctl run NAME`: one call (or a --batch of calls) to a tool, by name."""

from __future__ import annotations

from typing import Annotated

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, settings_for


def install(app: typer.Typer) -> None:
    app.command("run")(run_command)


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
        float | None, typer.Option(min=0.001, help="Seconds; overrides the descriptor's timeout.")
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
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Run a tool by name; print its output (or the whole result with --json).

    Exit codes: 0 ok, 1 the tool failed, 2 bad arguments, 4 unknown tool, 5 transport
    unavailable, 124 timed out, 130 interrupted.
    """
    from toolctl import arguments as tool_args
    from toolctl.cli import render
    from toolctl.cli.common import open_registry
    from toolctl.errors import UsageError
    from toolctl.runners import execute, resolve_tool
    from toolctl.runners.base import RunContext, load_runner

    settings = settings_for(registry, strict, verbose=verbose, pulsar_url=pulsar_url, user=user)
    spec = resolve_tool(open_registry(settings), name, allow_staging=allow_staging)
    runner = load_runner(spec.runtime, settings)
    context = RunContext(settings, timeout or float(spec.data["timeout"]), settings.user)
    sink = render.event_sink(settings) if verbose else None
    try:
        if batch is not None:
            if arg or args:
                raise UsageError("--batch reads the arguments from its lines; drop --arg/--args")
            import gc

            from toolctl.runners.batch import run_batch

            gc.freeze()  # what start-up built lives to the end: keep it out of every GC pass

            failed = False
            with render.JsonLines() as out:
                for result in run_batch(
                    runner,
                    spec,
                    render.open_lines(batch),
                    context,
                    concurrency=concurrency,
                    on_event=sink,
                ):
                    out.write(result.to_json())
                    failed = failed or not result.success
            raise typer.Exit(1 if failed else 0)
        schema = spec.data["schema"]
        given = tool_args.read_args_option(args) if args is not None else None
        arguments = tool_args.build(schema, given, arg or [])
        tool_args.validate(spec.name, schema, arguments)
        if dry_run:
            plan = runner.describe(spec, arguments, context)
            render.print_json(plan) if json else render.print_fields(
                f"tool {spec.name}", render.flatten(plan)
            )
            return
        if not json:
            context.stream = render.write_stdout
        context.stderr = render.write_stderr
        context.wait = lambda message: render.spinner(message, color=settings.color)
        result = execute(runner, spec, arguments, context, on_event=sink)
    finally:
        runner.close()
    render.print_result(result, as_json=json, already_streamed=context.streamed)
    if not result.success:
        raise typer.Exit(1)
