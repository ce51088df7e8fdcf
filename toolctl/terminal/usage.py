"""Click's and typer's usage errors in toolctl's one error style: ``toolctl: error: …``.

Typer draws usage errors in a boxed rich panel, with escapes even under ``NO_COLOR``; the
entry point runs the command with ``standalone_mode=False`` and passes each click error here
instead, so an unknown option reads like every other toolctl error, with a did-you-mean.
"""

from __future__ import annotations

import re
from typing import Any

_NO_SUCH_COMMAND = re.compile(
    r"No such command '(?P<name>.+?)'\.(?: Did you mean '(?P<close>.+?)'\?)?"
)


COMMANDS_OPTIONS = frozenset(
    {"--registry", "-r", "--json", "--strict", "--announced", "--pulsar-url", "--verbose"}
)
"""Options many commands take and ``toolctl`` itself does not: given before the command."""


def message(exc: Any) -> str:
    """One line for a click exception: what was wrong, a did-you-mean or where help is."""
    from typer._click import exceptions as click

    if not isinstance(exc, click.ClickException):
        return "aborted"
    if isinstance(exc, click.NoSuchOption):
        name, context = exc.option_name, getattr(exc, "ctx", None)
        if name in COMMANDS_OPTIONS and context is not None and context.parent is None:
            where = f"(toolctl COMMAND {name})"
            return f"{name} is a command's option: put it after the command {where}"
        close = did_you_mean(exc.option_name, exc.possibilities or ())
        return f"unknown option '{exc.option_name}'{close or _help(exc)}"
    text = " ".join(exc.format_message().split())
    found = _NO_SUCH_COMMAND.fullmatch(text)
    if found:
        close = found["close"]
        suggestion = f" (did you mean '{close}'?)" if close else _help(exc)
        return f"unknown command '{found['name']}'{suggestion}"
    text = text[:1].lower() + text[1:]
    text = text.removesuffix(".")
    if isinstance(exc, click.UsageError):
        return text + _help(exc)
    return text


def is_help(exc: Any) -> bool:
    """Click's "no arguments, so the help" error (a group named without a subcommand)."""
    from typer._click import exceptions as click

    return isinstance(exc, getattr(click, "NoArgsIsHelpError", ()))


def did_you_mean(word: str, choices: Any) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _help(exc: Any) -> str:
    context = getattr(exc, "ctx", None)
    path = context.command_path if context is not None else "toolctl"
    return f"; see '{path} -h'"
