"""The examples each command's help ends with, by command path; and the help made plain.

Help is click's plain format, not typer's rich panels: it reflows to the terminal (up to
120 columns), keeps docstrings' paragraphs as paragraphs rather than their line breaks,
and prints no escapes, piped or not.
"""

from __future__ import annotations

import functools
from typing import Any

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": ("toolctl list", "toolctl run word-count --arg text='hello world'", "toolctl help run"),
    "init": ("toolctl init", "toolctl init ~/my-project"),
    "where": ("toolctl where", "toolctl where --json"),
    "register": ("toolctl register greet.toml", "toolctl register --replace greet.toml"),
    "unregister": ("toolctl unregister tool greet", "toolctl unregister group text-tools"),
    "list": ("toolctl list", "toolctl list services", "toolctl list --category text --json"),
    "show": ("toolctl show word-count", "toolctl show text-api --kind service"),
    "check": (
        "toolctl check --strict",
        "toolctl check new-tool.toml",
        "toolctl check --format sarif > toolctl.sarif",
    ),
    "lock": ("toolctl lock", "toolctl check --locked"),
    "run": (
        "toolctl run word-count --arg text='hello world'",
        'toolctl run word-count --args \'{"text": "hi"}\' --json',
        "toolctl run word-count --batch lines.jsonl --concurrency 8",
        "toolctl run slugify --arg title='A B' --dry-run",
    ),
    "worker": ("toolctl worker joke-service", "toolctl worker --tool word-count --detach"),
    "recommend": (
        "toolctl recommend --action read-input --hops 2",
        "toolctl recommend --after word-count",
    ),
    "export": ("toolctl export --format mcp", "toolctl export --format openai --group text-tools"),
    "import": (
        "toolctl import mcp text-mcp",
        "toolctl import mcp-config ~/.cursor/mcp.json",
        "toolctl import trustgraph config.json",
    ),
    "serve": ("toolctl serve", "toolctl serve --group text-tools --port 8080 --detach"),
    "stats": ("toolctl stats", "toolctl stats --since 7d --json"),
    "history": ("toolctl history", "toolctl history --tool word-count --outcome failed"),
    "history import": ("toolctl history import chats.jsonl",),
    "new": ("toolctl new tool greet",),
    "service": ("toolctl service status", "toolctl service up text-api"),
    "broker": ("toolctl broker start", "toolctl broker status"),
    "mcp": ("toolctl mcp serve", "toolctl mcp install --client claude-desktop"),
    "new tool": ("toolctl new tool greet", "toolctl register greet.toml"),
    "service up": ("toolctl service up text-api",),
    "service down": ("toolctl service down text-api", "toolctl service down --all"),
    "service status": ("toolctl service status", "toolctl service status text-api"),
    "broker start": ("toolctl broker start",),
    "broker status": ("toolctl broker status",),
    "broker stop": ("toolctl broker stop",),
    "graph": ("toolctl graph", "toolctl graph --format svg > toolkit.svg"),
    "graph learn": ("toolctl graph learn", "toolctl graph learn --from-transcripts chats.jsonl"),
    "graph evaluate": ("toolctl graph evaluate chats.jsonl --folds 5",),
    "mcp serve": ("toolctl mcp serve", "toolctl mcp serve --group text-tools"),
    "mcp install": (
        "toolctl mcp install --client claude-desktop",
        "toolctl mcp install --client vscode --group text-tools --name text",
        "toolctl mcp install --client cursor --print",
    ),
    "mcp login": ("toolctl mcp login docs", "toolctl mcp login docs --no-browser"),
    "keygen": ("toolctl keygen ~/.config/toolctl/jokes.key",),
    "trust": (
        "toolctl trust add PUBLIC_KEY --services 'joke-*'",
        "toolctl trust list",
        "toolctl trust remove PUBLIC_KEY",
    ),
    "trust list": ("toolctl trust list", "toolctl trust list --json"),
    "trust remove": (
        "toolctl trust remove PUBLIC_KEY",
        "toolctl trust remove any --services 'lab-*'",
    ),
    "trust add": (
        "toolctl trust add PUBLIC_KEY --services 'joke-*'",
        "toolctl trust add any --services 'lab-*'",
    ),
    "adopt": (
        "toolctl adopt tell-joke --announced pulsar://broker:6650",
        "toolctl adopt joke-service -o joke-service.toml",
    ),
    "mcp add": (
        "toolctl mcp add time -- uvx mcp-server-time",
        "toolctl mcp add docs --url https://example.com/mcp",
        'toolctl mcp add gh --url https://example.com/mcp -H "Authorization: Bearer $TOKEN"',
    ),
}


SUMMARIES: dict[str, str] = {
    "init": "Make a project: toolctl.toml and a registry",
    "new": "Scaffold a descriptor to edit",
    "new tool": "Write NAME.toml (and a script) for a new tool",
    "where": "Show where toolctl looks and writes",
    "help": "Show a command's help",
    "list": "List the definitions in force",
    "show": "Show a definition, where it wins, what it shadows",
    "check": "Check descriptors: fields, references, names",
    "lock": "Write toolctl.lock, which check --locked holds to",
    "register": "Validate descriptors and add them to the registry",
    "unregister": "Remove a definition from the registry",
    "run": "Run a tool by name",
    "service": "Start, stop and show managed services",
    "service up": "Start a managed service",
    "service down": "Stop a managed service",
    "service status": "List what toolctl runs in the background",
    "worker": "Serve a service's handler or a tool on Pulsar",
    "broker": "Start, stop and show the embedded Pulsar broker",
    "broker start": "Start the broker; print its URL",
    "broker status": "Whether the broker runs, and where",
    "broker stop": "Stop the broker toolctl started",
    "serve": "Serve the registry over HTTP: REST and MCP",
    "mcp": "Serve over MCP, set clients up, add MCP servers",
    "mcp serve": "Serve the tools in force over MCP on stdio",
    "mcp login": "Log in to an MCP server that asks for OAuth",
    "mcp install": "Add `toolctl mcp serve` to an MCP client's config",
    "mcp add": "Add an MCP server and import its tools",
    "recommend": "Recommend actions and tools from the graph",
    "graph": "Draw the toolkit graph; learn and evaluate it",
    "graph learn": "Learn next-tool scores from calls and sessions",
    "graph evaluate": "Measure next-call recall on held-out sessions",
    "import": "Import tools from MCP servers and other formats",
    "export": "Print the tools in force for another system",
    "history": "Show recent calls from the run history",
    "history import": "Import chat transcripts into the run history",
    "stats": "Summarise the run history per tool",
    "trust": "The keys whose announcements this registry believes",
    "trust add": "Trust a key to announce some services",
    "trust list": "List the keys trusted on the search path",
    "trust remove": "Stop trusting a key",
    "keygen": "Write a new Ed25519 key to sign announcements",
    "adopt": "Write an announced tool into a registry file",
}
"""Each command's line in its group's listing (click cut the docstrings' first sentences
mid-word at 80 columns): at most SUMMARY_WIDTH characters, whole."""
SUMMARY_WIDTH = 52
"""The longest summary: it fits 80 columns beside the longest command name."""

SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Start", ("init", "new", "where", "help")),
    ("Keep the registry", ("list", "show", "check", "lock", "register", "unregister")),
    ("Run tools", ("run", "service", "worker", "broker")),
    ("Serve agents", ("serve", "mcp")),
    ("Recommend", ("recommend", "graph")),
    ("Exchange", ("import", "export")),
    ("Records", ("history", "stats")),
    ("Announcements", ("trust", "keygen", "adopt")),
)
"""How `toolctl --help` lists the commands, as gh does: in sections, in this order."""


def format_sections(group: Any, context: Any, formatter: Any) -> None:
    """The root group's commands, under SECTIONS (a command in none: under "Other")."""
    shown = {name for name in group.list_commands(context) if not group.commands[name].hidden}
    placed = {name for _, names in SECTIONS for name in names}
    for title, names in (*SECTIONS, ("Other", tuple(sorted(shown - placed)))):
        rows = [(n, group.commands[n].get_short_help_str(limit=200)) for n in names if n in shown]
        if rows:
            with formatter.section(title):
                formatter.write_dl(rows)


def plain_help(command: Any, path: str = "") -> Any:
    """``command`` and every command below it with plain help ending in its examples."""
    if hasattr(command, "rich_markup_mode"):
        command.rich_markup_mode = None
    if path in SUMMARIES:
        command.short_help = SUMMARIES[path]
    examples = EXAMPLES.get(path)
    if examples and not command.epilog:
        # \b: click keeps the lines of this paragraph as they are
        command.epilog = "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in examples)
    for param in getattr(command, "params", ()):
        if param.param_type_name == "argument":  # NAME, not typer's {NAME}
            param.get_usage_pieces = functools.partial(_usage_pieces, param)
    for name, sub in (getattr(command, "commands", None) or {}).items():
        plain_help(sub, f"{path} {name}".strip())
    return command


def usage_piece(argument: Any) -> str:
    """An argument in a usage line as click, gh and uv write it: ``NAME`` when required,
    ``[NAME]`` when not, ``...`` after one that repeats. (typer 0.28 writes a required one
    as ``{NAME}``, which reads like a set of choices.)"""
    name = str(argument.metavar or (argument.name or "").upper())
    name = f"{name}..." if argument.nargs == -1 and not name.endswith("...") else name
    return name if argument.required or name.startswith("[") else f"[{name}]"


def _usage_pieces(argument: Any, context: Any) -> list[str]:
    return [usage_piece(argument)]
