"""A tool's command line from its argv template: each item substituted on its own, never
through a shell, refusing what argv cannot carry or what would reach the tool as an option."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from toolctl.arguments import PLACEHOLDER
from toolctl.errors import InvalidArguments

MAX_ARG_BYTES = 131_072
"""Linux's limit on one argv item (MAX_ARG_STRLEN, with its NUL): longer is E2BIG."""


def render_argv(
    template: Sequence[str],
    arguments: Mapping[str, Any],
    declared: frozenset[str] = frozenset(),
    allow_option: frozenset[str] = frozenset(),
) -> list[str]:
    """Substitute ``{name}`` in each item on its own; never through a shell.

    An item that is exactly ``{name}`` for a declared argument left out is dropped; ``{{``
    and ``}}`` are literal braces; a placeholder naming no declared argument stays as is.

    Refused (InvalidArguments, exit 2, naming the argument): a value with a NUL (argv
    cannot hold one), an item longer than ``MAX_ARG_BYTES``, and an item that starts with
    ``-`` because of a text value, or of a number that text follows (the tool would read
    it as an option): one rule however
    many placeholders share the item (``{dir}{file}`` as much as ``{file}``), unless the
    template's own text puts the ``-`` there, the leading argument is in ``allow_option``,
    or an earlier item of the template is ``--``.
    """
    argv: list[str] = []
    options_end = False
    for item in template:
        whole = PLACEHOLDER.fullmatch(item)
        if whole and whole.group(1) in declared and arguments.get(whole.group(1)) is None:
            continue
        used: list[str] = []
        rendered = PLACEHOLDER.sub(functools.partial(_fill, arguments, declared, used), item)
        for name in used:
            if "\0" in _fill_value(arguments[name]):
                raise InvalidArguments(
                    f"argument '{name}' contains a NUL character, which a command line "
                    'cannot carry (send it as JSON on stdin instead: input = "json")'
                )
        if len(rendered.encode("utf-8", "surrogateescape")) >= MAX_ARG_BYTES:
            who = f"argument '{used[0]}'" if used else "the command"
            raise InvalidArguments(
                f"{who} makes a command-line item longer than the system allows "
                f"({MAX_ARG_BYTES // 1024} KiB); send it as JSON on stdin instead"
            )
        leader = _leader(item, arguments, used) if rendered.startswith("-") else None
        if (
            leader is not None
            and not options_end
            and leader not in allow_option
            and (isinstance(arguments[leader], str) or not _a_number(rendered))
        ):
            raise InvalidArguments(
                f"argument '{leader}' starts with '-' and would reach the tool as an option "
                f"({rendered[:40]!r}); the descriptor can allow it with allow_option = true "
                "on that argument, or a '--' earlier in the command"
            )
        if item == "--":
            options_end = True
        argv.append(rendered)
    return argv


def _leader(item: str, arguments: Mapping[str, Any], used: list[str]) -> str | None:
    """The argument whose value begins an item that starts with a placeholder: the first
    one filled with something, however many placeholders share the item. None when the
    item's literal text comes first (``--out={file}``: the template made it an option)."""
    first = PLACEHOLDER.search(item)
    if first is None or first.start() != 0 or first.group(0) in ("{{", "}}"):
        return None
    return next((name for name in used if _fill_value(arguments[name])), None)


def _fill(
    arguments: Mapping[str, Any],
    declared: frozenset[str],
    used: list[str],
    match: re.Match[str],
) -> str:
    token = match.group(0)
    if token in ("{{", "}}"):
        return token[0]
    name = match.group(1)
    value = arguments.get(name)
    if value is None:
        return "" if name in declared or name in arguments else token
    used.append(name)
    return _fill_value(value)


def _fill_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _a_number(item: str) -> bool:
    """A negative number as a whole item (``-1``, ``-2.5``): a value, which tools read as
    one; ``-1n`` (a number then text) is an option cluster."""
    try:
        float(item)
    except ValueError:
        return False
    return True
