"""A finding: one thing ``check`` reports, where it is (file:line) and which rule found it.

The one type for it everywhere: a file that does not parse (the loader), a cross-definition
problem (the lint, stored by the index), a symlink leaving a registry directory, a
difference from ``toolctl.lock``, and what ``check --live`` finds on an MCP server. It sits
at the bottom with errors and models, so the registry and ``toolctl.mcp`` both report with
it without importing each other.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

Severity = Literal["error", "warning"]

PARSE = "parse"
"""The code of a finding that made the loader skip a file or an entry."""


# A NamedTuple rather than a frozen dataclass: the loader makes these on every command, and
# a frozen dataclass costs ~0.6 ms to define against ~0.1 ms for a NamedTuple.


class Finding(NamedTuple):
    """What a rule found at file:line. ``skipped`` findings (a file or entry left out of the
    registry) also warn on every command; under ``--strict`` a shadow counts as an error."""

    severity: Severity
    code: str
    file: str
    line: int
    message: str
    skipped: bool = False
