"""Options more than one command takes, and the one way commands get Settings, a Registry
and a Reporter. (No command module imports another: what they share lives here.)"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolctl.settings import Settings

if TYPE_CHECKING:
    from toolctl.registry.index import Registry
    from toolctl.terminal.render import TerminalReporter


# -- shell completion from the registry in force -------------------------------------------
# What typer calls for a value being typed, only while a shell asks for completions
# (``_TOOLCTL_COMPLETE`` set); here rather than in a module of their own, so that a command
# that runs pays nothing for them.
def _completion_settings(ctx: Any) -> Settings | None:
    """What completion reads, or None when settings cannot be had (a broken toolctl.toml,
    a bad TOOLCTL_* value): a shell asking for completions gets none, never an error."""
    from toolctl.errors import ToolctlError

    try:
        return settings_for(ctx.params.get("registry"))
    except (ToolctlError, OSError):
        return None


def _complete_names(kind: str) -> Any:
    def complete(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
        from toolctl.registry.query import complete_names

        settings = _completion_settings(ctx)
        return [] if settings is None else complete_names(settings, kind, incomplete)

    complete.__name__ = f"complete_{kind}"
    return complete


complete_tools = _complete_names("tool")
complete_services = _complete_names("service")
complete_actions = _complete_names("action")
complete_groups = _complete_names("group")


def complete_arguments(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """``--arg NAME=``: the argument names of the tool named on the line so far."""
    from toolctl.registry.query import complete_arguments as arguments_of

    # `run NAME --arg <TAB>`: click stops parsing at the --arg that lacks its value, before
    # NAME is assigned, and leaves NAME among the context's extra args
    tool = ctx.params.get("name") or next(iter(ctx.args), None)
    settings = _completion_settings(ctx)
    if not tool or "=" in incomplete or settings is None:
        return []
    return arguments_of(settings, tool, incomplete)


def complete_kinds(incomplete: str) -> list[str]:
    return [k for k in ("tool", "service", "action", "group") if k.startswith(incomplete)]


def complete_anything(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """`show NAME`: names of every kind (of ``--kind`` when given)."""
    from toolctl.registry.query import complete_names

    kind = ctx.params.get("kind")
    chosen = [kind.rstrip("s")] if kind else ["tool", "service", "action", "group"]
    settings = _completion_settings(ctx)
    if settings is None:
        return []
    return sorted({item for k in chosen for item in complete_names(settings, k, incomplete)})


def complete_of_kind(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """`unregister KIND NAME`: names of the kind given before."""
    from toolctl.registry.query import complete_names

    kind = str(ctx.params.get("kind") or "").rstrip("s")
    settings = _completion_settings(ctx)
    if kind not in ("tool", "service", "action", "group") or settings is None:
        return []
    return complete_names(settings, kind, incomplete)


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
HopsOption = Annotated[int, typer.Option(min=0, help="With --action: rounds of Next edges.")]
ThresholdOption = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="With --action: lowest edge score followed.")
]
ConcurrencyOption = Annotated[
    int, typer.Option(min=1, max=1024, help="Calls running at once; more wait in a queue.")
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
    typer.Option("--pin", metavar="TOOL", help="With --adaptive: a tool always listed."),
]
ServedPulsarOption = Annotated[
    str | None,
    typer.Option("--pulsar-url", metavar="URL", help="Pulsar broker for Pulsar tools."),
]


def output_format(json: bool, format: str, default: str) -> str:
    """The format to print in: ``--json`` is ``--format json``, and with another --format it
    is a usage error rather than a silent choice."""
    if json and format not in (default, "json"):
        from toolctl.errors import UsageError

        raise UsageError(f"--json and --format {format} cannot be combined")
    return "json" if json else format


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
