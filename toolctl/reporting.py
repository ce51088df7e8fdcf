"""How library code reports progress to whoever called it, without printing.

A use case (an import, a server starting, a broker in the foreground) takes a ``Reporter``
and says what it is doing through it, as a runner reports through its ``Sink``: the
command line passes one that writes ``toolctl: ...`` lines on stderr (``cli/render.py``),
a library user passes their own, or ``QUIET``. Data is never reported: it is returned.
"""

from __future__ import annotations

import contextlib
from typing import Protocol


class Reporter(Protocol):
    """Where a use case says what it does: notes, warnings, a wait in progress."""

    def note(self, message: str) -> None:
        """Something done or worth knowing ("imported tool 'x' into f.toml")."""

    def warn(self, message: str) -> None:
        """Something left out or suspicious; the work goes on."""

    def progress(self, message: str) -> contextlib.AbstractContextManager[object]:
        """Around a wait that may be long (a spinner on a terminal)."""


class Quiet:
    """A Reporter that says nothing."""

    def note(self, message: str) -> None:
        pass

    def warn(self, message: str) -> None:
        pass

    def progress(self, message: str) -> contextlib.AbstractContextManager[object]:
        return contextlib.nullcontext()


QUIET = Quiet()
