"""Click's and typer's usage errors in toolctl's one error style: ``toolctl: error: …``.

Typer draws usage errors in a boxed rich panel, with escapes even under ``NO_COLOR``; the
entry point runs the command with ``standalone_mode=False`` and passes each click error here
instead, so an unknown option reads like every other toolctl error, with a did-you-mean.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_NO_SUCH_COMMAND = re.compile(
    r"No such command '(?P<name>.+?)'\.(?: Did you mean '(?P<close>.+?)'\?)?"
)


COMMANDS_OPTIONS = frozenset(
    {"--registry", "-r", "--json", "--strict", "--announced", "--pulsar-url", "--verbose"}
)
"""Options many commands take and ``toolctl`` itself does not: given before the command."""


SYNONYMS = {
    "rm": "unregister",
    "remove": "unregister",
    "delete": "unregister",
    "ls": "list",
    "info": "show",
    "describe": "show",
    "exec": "run",
    "call": "run",
    "invoke": "run",
    "lint": "check",
    "validate": "check",
    "version": "--version",
    "status": "service status",
    "ps": "service status",
    "up": "service up",
    "start": "service up",
    "down": "service down",
    "stop": "service down",
    "add": "register",
    "install": "mcp install",
}
"""Commands other CLIs name so, and what toolctl calls them (at the top level: a word a
group lacks may be another group's)."""

GROUP_SYNONYMS = {
    "service": {"start": "up", "stop": "down", "list": "status", "ls": "status", "ps": "status"},
    "broker": {"up": "start", "down": "stop", "run": "start"},
    "trust": {"ls": "list", "rm": "remove", "delete": "remove", "revoke": "remove"},
    "mcp": {"server": "serve", "auth": "login"},
}
"""The same within a group: `service stop` is `service down`, `broker up` `broker start`."""


def message(exc: Any, args: Sequence[str] = ()) -> str:
    """One line for a click exception: what was wrong, a did-you-mean or where help is
    (``args``: the command line, for the command an error without a context is about)."""
    import difflib

    from typer._click import exceptions as click

    if not isinstance(exc, click.ClickException):
        return "aborted"
    command = _command(exc, args)
    if isinstance(exc, click.NoSuchOption):
        name, context = exc.option_name, getattr(exc, "ctx", None)
        top = context is not None and context.parent is None
        if name in COMMANDS_OPTIONS and top:
            where = f"(toolctl COMMAND {name})"
            return f"{name} is a command's option: put it after the command {where}"
        meant = difflib.get_close_matches(name, [o for o in COMMANDS_OPTIONS if o[1] == "-"], 1)
        typo = bool(meant) and _typo(name, f"'{meant[0]}'")
        if top and typo and not (exc.possibilities or ()):  # `toolctl --jsn list`
            where = f"it goes after the command: toolctl COMMAND {meant[0]}"
            return f"unknown option '{name}' (did you mean '{meant[0]}'? {where})"
        close = did_you_mean(exc.option_name, exc.possibilities or ())
        if command == "toolctl run" and name.startswith("--") and not _typo(name, close):
            also = f"a tool's arguments go in --arg {name[2:]}=VALUE"  # `--n 1`, `--who x`
            close = f"{close[:-2]}? or {also})" if close else f" ({also})"
        return f"unknown option '{exc.option_name}'{close or _help(command)}"
    text = " ".join(exc.format_message().split())
    found = _NO_SUCH_COMMAND.fullmatch(text)
    if found:
        context = getattr(exc, "ctx", None)
        top = context is None or context.parent is None
        group = {} if context is None else GROUP_SYNONYMS.get(context.info_name, {})
        synonym = SYNONYMS.get(found["name"]) if top else group.get(found["name"])
        close = synonym or found["close"] or ""
        suggestion = f" (did you mean '{close}'?)" if close else _help(command)
        return f"unknown command '{found['name']}'{suggestion}"
    text = text[:1].lower() + text[1:]
    text = text.removesuffix(".")
    choice = _NOT_ONE_OF.search(text)
    if choice:  # `--client cursr`: the closest choice, as for commands and options
        text += did_you_mean(choice["value"], re.findall(r"'([^']*)'", choice["choices"]))
    extra = _EXTRA.fullmatch(text)
    if extra and command == "toolctl run" and "=" in extra["first"]:
        return f"{text} (did you mean --arg {extra['first']}?)"
    if isinstance(exc, click.UsageError):
        return text + _help(command)
    return text


_NOT_ONE_OF = re.compile(r"'(?P<value>[^']*)' is not one of (?P<choices>'.*')$")
_EXTRA = re.compile(r"got unexpected extra argument(?:\(s\)|s)? \((?P<first>[^ )]+)[^)]*\)")


def _command(exc: Any, args: Sequence[str]) -> str:
    """The command an error is about: its context's, else the command line's first word
    that names one (click raises some parsing errors without a context)."""
    context = getattr(exc, "ctx", None)
    if context is not None:
        return str(context.command_path)
    name = next((a for a in args if not a.startswith("-")), None)  # parsed: a command's
    return f"toolctl {name}" if name else "toolctl"


def is_help(exc: Any) -> bool:
    """Click's "no arguments, so the help" error (a group named without a subcommand)."""
    from typer._click import exceptions as click

    return isinstance(exc, getattr(click, "NoArgsIsHelpError", ()))


def did_you_mean(word: str, choices: Any) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _typo(name: str, close: str) -> bool:
    """Whether ``close`` (a did-you-mean) is ``name`` mistyped, not a guess (``--vrbose``
    is ``--verbose``; ``--n`` is hardly ``--json``)."""
    import difflib

    found = re.search(r"'(.+)'", close)
    if found is None:
        return False
    return difflib.SequenceMatcher(None, name, found[1]).ratio() >= 0.8


def _help(command: str) -> str:
    return f"; see '{command} -h'"
