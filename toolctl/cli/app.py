"""The typer application: one module per command or command group, assembled here.

Only the module of the command being run is imported and turned into a click command:
building all of them costs ~25 ms, a fifth of a whole `toolctl run` of a local tool. Help
and unknown commands get the full application.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from toolctl import __version__
from toolctl.terminal.completion import complete_commands

COMMAND_MODULES = {
    "init": "init",
    "new": "new",
    "where": "where",
    "register": "register",
    "unregister": "unregister",
    "list": "listing",
    "show": "show",
    "check": "check",
    "lock": "lock",
    "run": "run",
    "service": "service",
    "worker": "worker",
    "broker": "broker",
    "recommend": "recommend",
    "graph": "graph",
    "export": "export",
    "import": "importing",
    "mcp": "mcp",
    "serve": "serve",
    "history": "history",
    "keygen": "keygen",
    "trust": "trust",
    "adopt": "adopt",
    "stats": "stats",
}
"""Every command name and the module under toolctl.cli that installs it."""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"toolctl {__version__}")
        raise typer.Exit()


class _Group(typer.core.TyperGroup):
    """The root group: a stopping signal that ends a command before anything below caught
    it (Ctrl-C while the registry loads, SIGTERM during `import mcp`) is told like every
    other error, in one line and with its own exit code. Typer 0.28 turns it into a silent
    exit 130, SIGTERM included.
    A reader of stdout gone away is exit 141 (click would make it 1, "the tool failed")."""

    def invoke(self, ctx: Any) -> Any:
        from toolctl.processes.lifetime import Lifetime

        try:
            # SIGTERM, SIGHUP and SIGQUIT end every command as Ctrl-C does (its clean-up
            # runs: an MCP server `import mcp` started is stopped), never Python's silent
            # death; a long-running command holds a lifetime of its own inside this one
            with Lifetime(raising=True):
                return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            from toolctl.errors import signal_of, stopped_by

            raise stopped_by(signal_of(exc)) from None
        except BrokenPipeError:
            from toolctl.errors import ReaderGone

            raise ReaderGone() from None

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        from toolctl.terminal.help import format_sections

        format_sections(self, ctx, formatter)


def build_app(modules: Sequence[str], *, completion: bool = False) -> typer.Typer:
    """A Typer app holding the commands of the given toolctl.cli modules; ``completion``:
    with ``--install-completion``/``--show-completion`` and the shells' completion."""
    app = typer.Typer(
        name="toolctl",
        cls=_Group,
        help="A first-wins registry and runner for agent tools.",
        no_args_is_help=True,
        add_completion=completion,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120},
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", "-V", callback=_version, is_eager=True, help="Print the version."
        ),
    ) -> None:
        """Keep, check, run and recommend agent tools.

        Exit codes: 0 ok, 1 the tool failed, 2 usage or invalid arguments, 3 registry
        invalid or name conflict, 4 not found, 5 transport unavailable, 124 timed out,
        130 interrupted, 70 internal error.
        """

    for name in modules:
        importlib.import_module(f"toolctl.cli.{name}").install(app)
    if completion:  # the whole app: `help` is listed (the entry point answers it)
        app.command("help")(_help)
    return app


def _help(
    command: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[COMMAND]...", show_default=False, autocompletion=complete_commands
        ),
    ] = None,
) -> None:
    """Show a command's help: `toolctl help run` is `toolctl run --help`."""


def plain_help(cli: Any) -> Any:
    from toolctl.terminal.help import plain_help as made_plain

    return made_plain(cli)


def command(args: Sequence[str] = ()) -> Any:
    """The click command for a command line: just its own command when it names one."""
    name = next((a for a in args if not a.startswith("-")), None)
    if name in COMMAND_MODULES and not {"-h", "--help"} & set(args[: args.index(name)]):
        modules: list[str] = [COMMAND_MODULES[name]]
    else:  # help, an unknown command, a shell asking for completions: the whole app
        modules = list(dict.fromkeys(COMMAND_MODULES.values()))
        return plain_help(typer.main.get_command(build_app(modules, completion=True)))
    cli: Any = typer.main.get_command(build_app(modules))
    if {"-h", "--help"} & set(args) or getattr(cli.commands.get(name), "commands", None):
        return plain_help(cli)  # help may show: asked for, or a group's without a subcommand
    return cli
