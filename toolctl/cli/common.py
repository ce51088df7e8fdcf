"""Options more than one command takes, and the one way commands get Settings, a Registry
and a Reporter. (No command module imports another: what they share lives here.)"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from toolctl.settings import Settings
from toolctl.terminal.completion import (
    complete_actions,
    complete_groups,
    complete_tools,
)

if TYPE_CHECKING:
    from toolctl.registry.index import Registry
    from toolctl.terminal.render import TerminalReporter


RegistryOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--registry",
        "-r",
        metavar="DIR",
        help="Registry directory; repeat for a search path (first wins). Default: "
        "$TOOLCTL_REGISTRY, else the project's (toolctl.toml) then the user registry.",
    ),
]
StrictOption = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Refuse to work while the registry has errors or shadows (also TOOLCTL_STRICT=1).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (sorted, byte-stable).")]
PulsarUrlOption = Annotated[
    str | None,
    typer.Option(
        "--pulsar-url",
        metavar="URL",
        help="Pulsar broker (default $TOOLCTL_PULSAR_URL or pulsar://localhost:6650).",
    ),
]
AnnouncedOption = Annotated[
    str | None,
    typer.Option(
        "--announced",
        metavar="PULSAR_URL",
        help="Also read the tools workers announce on this broker (after every directory; "
        "default: [announcements] in toolctl.toml or config.toml).",
    ),
]
# what `history` and `stats` select from the run history
# (each may be repeated: `--tool a --tool b` is a call of either)
ToolFilter = Annotated[
    list[str] | None,
    typer.Option(
        "--tool",
        metavar="NAME",
        help="Only this tool; repeat for several.",
        autocompletion=complete_tools,
    ),
]
OutcomeFilter = Annotated[
    list[str] | None,
    typer.Option(
        metavar="OUTCOME",
        help="Only calls that ended so: ok, failed, invalid, timeout, unavailable, ...; "
        "repeat for several.",
    ),
]
CallerFilter = Annotated[
    list[str] | None,
    typer.Option(
        metavar="CALLER",
        help="Only calls from: cli, batch, serve, mcp, worker, import; repeat for several.",
    ),
]
SessionFilter = Annotated[
    list[str] | None, typer.Option(metavar="ID", help="Only this session; repeat for several.")
]
SinceFilter = Annotated[
    str | None,
    typer.Option(metavar="WHEN", help="Only calls since WHEN: 30m, 2h, 7d, 1w ago, or a date."),
]
UntilFilter = Annotated[
    str | None, typer.Option(metavar="WHEN", help="Only calls before WHEN (as --since).")
]
ReadyFileOption = Annotated[Path | None, typer.Option(hidden=True)]
DetachOption = Annotated[
    bool, typer.Option("--detach", help="Run in the background; return once it serves.")
]

# what a server serves (`serve`, `mcp serve`)
GroupOption = Annotated[
    list[str] | None,
    typer.Option(
        "--group",
        "-g",
        metavar="GROUP",
        help="Serve this group's tools.",
        autocompletion=complete_groups,
    ),
]
ToolOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tool", "-t", metavar="NAME", help="Serve this tool.", autocompletion=complete_tools
    ),
]
ActionOption = Annotated[
    list[str] | None,
    typer.Option(
        "--action",
        "-a",
        metavar="ACTION",
        help="Serve the tools `recommend` gives from this start action.",
        autocompletion=complete_actions,
    ),
]
HopsOption = Annotated[
    int, typer.Option(min=0, metavar="N", help="With --action: rounds of Next edges.")
]
ThresholdOption = Annotated[
    float,
    typer.Option(
        min=0.0, max=1.0, metavar="SCORE", help="With --action: lowest edge score followed."
    ),
]
ConcurrencyOption = Annotated[
    int,
    typer.Option(min=1, max=1024, metavar="N", help="Calls running at once; more wait in a queue."),
]
AdaptiveOption = Annotated[
    int | None,
    typer.Option(
        "--adaptive",
        metavar="K",
        min=1,
        help="List each MCP session only its K likeliest next tools (the learned graph), "
        "ranked again after every call (list_changed).",
    ),
]
PinOption = Annotated[
    list[str] | None,
    typer.Option(
        "--pin",
        metavar="TOOL",
        help="With --adaptive: a tool always listed.",
        autocompletion=complete_tools,
    ),
]
ServedPulsarOption = Annotated[
    str | None,
    typer.Option("--pulsar-url", metavar="URL", help="Pulsar broker for Pulsar tools."),
]


def given(context: typer.Context, option: str) -> bool:
    """Whether the option of that parameter name was given (not left to its default)."""
    source = context.get_parameter_source(option)
    return source is not None and source.name != "DEFAULT"


def output_format(context: typer.Context, json: bool, format: str) -> str:
    """The format to print in: ``--json`` is ``--format json``, and with another --format
    given it is a usage error rather than a silent choice (the default one too)."""
    if json and format != "json" and given(context, "format"):
        from toolctl.errors import UsageError

        raise UsageError(f"--json and --format {format} cannot be combined")
    return "json" if json else format


def subcommand(context: typer.Context) -> bool:
    """Whether a group's own command is on its way to a subcommand (it then does nothing).
    An option of the group given before the subcommand (`history --json import`) is a
    usage error: it was dropped without a word, and a script got text and exit 0."""
    name = context.invoked_subcommand
    if name is None:
        return False
    for param in context.command.params:
        if param.param_type_name == "option" and param.name and given(context, param.name):
            from toolctl.errors import UsageError

            flag = max(param.opts, key=len)
            sub = context.command.get_command(context, name)  # type: ignore[attr-defined]
            takes = any(flag in p.opts for p in getattr(sub, "params", ()))
            raise UsageError(
                f"{flag} before '{name}' is an option of '{context.info_name}' alone",
                hint=f"put it after '{name}'" if takes else f"'{name}' does not take it",
            )
    return True


def settings_for(registry: list[Path] | None, strict: bool = False, **extra: object) -> Settings:
    return Settings.load(registry or (), strict=strict, **extra)  # type: ignore[arg-type]


def reporter(settings: Settings | None = None, *, notes: bool = True) -> TerminalReporter:
    """Where a use case reports: ``toolctl:`` lines on stderr (``notes`` False: warnings
    only, for a command printing --json)."""
    from toolctl.terminal.render import TerminalReporter

    color = settings.color if settings is not None else True
    return TerminalReporter(color=color, notes=notes)


def open_registry(settings: Settings, *, full: bool = False) -> Registry:
    """The registry, after warning about skipped files and enforcing --strict."""
    from toolctl.registry import open_registry

    return open_registry(settings, reporter(settings), full=full)
