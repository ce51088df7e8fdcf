"""The rules for descriptor names: what is valid, and when two names are confusable."""

from __future__ import annotations

KINDS = ("tool", "service", "action", "group")
TABLES = (*KINDS, "trust")
"""Every table a registry file may hold: the kinds, and ``[[trust]]`` (the keys whose
announcements are believed, ``toolctl.registry.trust``), which defines no name."""
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
"""A valid name, for pydantic's ``pattern`` and Python's ``re.fullmatch`` (never
``re.match``: its ``$`` lets a final newline through)."""


MAX_NAME = 128
NAME_RULE = "letters, digits, '-', '_' and '.', starting with a letter or digit"


def name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a registry name, said for a user (None: nothing):
    the one reason, so a long name is not told to use the letters it uses."""
    import re

    if re.fullmatch(NAME_PATTERN, name):
        return None
    if not name:
        return "a name cannot be empty"
    if len(name) > MAX_NAME and re.fullmatch(NAME_PATTERN, name[:MAX_NAME]):
        return f"{len(name)} characters; a name has at most {MAX_NAME}"
    return f"use {NAME_RULE}"


def fold(name: str) -> str:
    """The form two names share when a reader could mistake one for the other.

    Case is folded and ``-``, ``_`` and ``.`` are treated alike, so ``Read_File``,
    ``read.file`` and ``read-file`` all fold to ``read-file``.
    """
    return name.casefold().replace("_", "-").replace(".", "-")  # translate() is 4x slower


FUNCTION_NAME = r"^[A-Za-z0-9_-]{1,64}$"
"""What OpenAI accepts as a function name (a registry name may also hold '.' and be longer)."""


def function_name(name: str) -> str | None:
    """The name a tool goes by where only ``FUNCTION_NAME`` is accepted (OpenAI's function
    calling): the name itself when it fits, else the name with each ``.`` as ``_``
    (``everything.echo`` → ``everything_echo``); None for a name over 64 characters.

    The rule is reversible in the registry: ``.``, ``_`` and ``-`` fold alike, so no two
    names in force can map to one function name, and a function name leads back to the one
    tool in force whose name maps to it (``toolctl run`` and ``serve`` accept it).
    """
    import re

    mapped = name.replace(".", "_")
    return mapped if re.match(FUNCTION_NAME, mapped) else None
