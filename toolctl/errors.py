"""One exception tree for toolctl; every class carries the exit code the CLI ends with."""

from __future__ import annotations

from collections.abc import Sequence


class ToolctlError(Exception):
    """Base of every error a user can cause; the CLI prints it as one line."""

    exit_code = 1
    quiet: bool
    """True when the message has been shown already (the tool's own error, a failed check's
    findings): the CLI ends with the exit code and prints nothing more."""

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        details: Sequence[str] = (),
        quiet: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = list(details)
        self.quiet = quiet

    def __str__(self) -> str:
        return f"{self.message}; {self.hint}" if self.hint else self.message


class ToolFailed(ToolctlError):
    """The tool ran and failed: non-zero exit, HTTP error status, an error response."""

    exit_code = 1


class UsageError(ToolctlError):
    """The command line itself is wrong (a bad option value, an unreadable --args file)."""

    exit_code = 2


class InvalidArguments(UsageError):
    """The tool's arguments do not match its schema; nothing was run."""


class RegistryError(ToolctlError):
    """The registry is invalid: `check` failed, or --strict refuses a registry with errors."""

    exit_code = 3


class NameConflict(RegistryError):
    """A name is already taken, or confusable with a taken one; `register` refused it."""


class NotFound(ToolctlError):
    """A tool, service, action or group of that name does not exist."""

    exit_code = 4

    def __init__(
        self,
        kind: str,
        name: str,
        suggestions: Sequence[str] = (),
        *,
        hint: str | None = None,
        searched: Sequence[object] = (),
    ) -> None:
        if suggestions:
            hint = f"did you mean: {', '.join(suggestions)}?"
        if searched:
            where = f"searched {', '.join(map(str, searched))}"
            hint = f"{hint} ({where})" if hint else where
        super().__init__(f"{kind} '{name}' not found", hint=hint)
        self.kind = kind
        self.name = name
        self.suggestions = list(suggestions)
        self.searched = [str(directory) for directory in searched]


class TransportUnavailable(ToolctlError):
    """The broker, container engine, host or executable could not be reached."""

    exit_code = 5


class PluginBroken(TransportUnavailable):
    """An installed plugin (a runner under ``toolctl.runners``) fails to load or to fit."""


class TransportLost(TransportUnavailable):
    """The connection went away under calls in flight (a `--batch` then ends with exit 5)."""


class TimedOut(ToolctlError):
    """The call ran past its timeout; the process tree or container was killed."""

    exit_code = 124


class Interrupted(ToolctlError):
    """The user pressed Ctrl-C; whatever was started has been stopped."""

    exit_code = 130


class Terminated(Interrupted):
    """toolctl got SIGTERM; whatever was started has been stopped, as for Ctrl-C."""

    exit_code = 143


class TerminateSignal(KeyboardInterrupt):
    """SIGTERM turned into an exception in the main thread (by the CLI), caught where
    Ctrl-C is, so one clean-up path serves both."""


def interruption(cause: BaseException, message: str) -> Interrupted:
    """The error that ends a call stopped by ``cause``: Terminated for SIGTERM, else Interrupted."""
    if isinstance(cause, TerminateSignal | Terminated):
        return Terminated(message.replace("interrupted", "terminated", 1))
    return Interrupted(message)


EXIT_INTERNAL = 70
"""An unexpected bug: one line on stderr and a report file, never a traceback."""
