"""One exception tree for toolctl; every class carries the exit code the CLI ends with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ToolctlError(Exception):
    """Base of every error a user can cause; the CLI prints it as one line."""

    error_code = "error"
    """A stable name for the kind of error, the ``error_code`` of a failed result (JSON
    outputs, ``--batch``, ``serve``): scripts branch on it, not on the message."""

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

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as what it holds, not through ``__init__`` (whose signature differs in
        subclasses: ``NotFound(kind, name)``), so an error crosses a process pool whole."""
        return (_restored, (type(self), self.args, dict(self.__dict__)))

    runtime = ""
    """The runtime of the call this error ended, once the call was under way."""
    duration_ms = 0.0
    """How long that call ran before this error ended it."""


def _restored(cls: type[ToolctlError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class ToolFailed(ToolctlError):
    """The tool ran and failed: non-zero exit, HTTP error status, an error response."""

    error_code = "tool_failed"

    exit_code = 1


class UsageError(ToolctlError):
    """The command line itself is wrong (a bad option value, an unreadable --args file)."""

    error_code = "usage"

    exit_code = 2


class InvalidArguments(UsageError):
    """The tool's arguments do not match its schema; nothing was run."""

    error_code = "invalid_arguments"


class RegistryError(ToolctlError):
    """The registry is invalid: `check` failed, or --strict refuses a registry with errors."""

    error_code = "registry_invalid"

    exit_code = 3


class NameConflict(RegistryError):
    """A name is already taken, or confusable with a taken one; `register` refused it."""

    error_code = "name_conflict"


class PinDrift(RegistryError):
    """A pinned MCP tool's live definition differs from its pin (the rug-pull): exit 3."""


def _printable(name: str) -> str:
    """A name as an error quotes it: each control, invisible or reordering character as
    its escape (a model's tool name with an ESC or a newline came back raw, in a message
    the library hands the model and a server logs)."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


class NotFound(ToolctlError):
    """A tool, service, action or group of that name does not exist."""

    error_code = "not_found"

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
        super().__init__(f"{kind} '{_printable(name)}' not found", hint=hint)
        self.kind = kind
        self.name = name
        self.suggestions = list(suggestions)
        self.searched = [str(directory) for directory in searched]


class TransportUnavailable(ToolctlError):
    """The broker, container engine, host or executable could not be reached."""

    error_code = "transport_unavailable"

    exit_code = 5


class PluginBroken(TransportUnavailable):
    """An installed plugin (a runner under ``toolctl.runners``) fails to load or to fit."""

    error_code = "plugin_broken"


class TransportLost(TransportUnavailable):
    """The connection went away under calls in flight (a `--batch` then ends with exit 5)."""

    error_code = "transport_lost"


class TimedOut(ToolctlError):
    """The call ran past its timeout; the process tree or container was killed."""

    error_code = "timed_out"

    exit_code = 124


class ReaderGone(ToolctlError):
    """The reader of stdout went away before the output was all written (`toolctl export |
    head -1`): exit 141, what a shell reports for any command SIGPIPE ended (128 + 13),
    said with no message."""

    error_code = "reader_gone"
    exit_code = 141

    def __init__(self) -> None:
        super().__init__("the reader of the output went away", quiet=True)


class OutputLost(ToolctlError):
    """What toolctl printed could not be written to stdout (a full disk, an I/O error)."""

    error_code = "output_lost"
    exit_code = 74


class Interrupted(ToolctlError):
    """The user pressed Ctrl-C; whatever was started has been stopped."""

    error_code = "interrupted"

    exit_code = 130
    signal = 2  # SIGINT
    word = "interrupted"


class Terminated(Interrupted):
    """toolctl got SIGTERM; whatever was started has been stopped, as for Ctrl-C."""

    error_code = "terminated"

    exit_code = 143
    signal = 15  # SIGTERM
    word = "terminated"


class HungUp(Interrupted):
    """toolctl got SIGHUP (its terminal went away); whatever was started has been stopped."""

    error_code = "hung_up"

    exit_code = 129
    signal = 1  # SIGHUP
    word = "hung up"


class QuitSignalled(Interrupted):
    """toolctl got SIGQUIT; whatever was started has been stopped."""

    error_code = "quit"

    exit_code = 131
    signal = 3  # SIGQUIT
    word = "quit"


STOPPED_BY: dict[int, type[Interrupted]] = {
    cls.signal: cls for cls in (Interrupted, Terminated, HungUp, QuitSignalled)
}
"""The error a command stopped by each signal ends with: exit 128 + the signal's number."""


class StopSignal(KeyboardInterrupt):
    """A stopping signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) turned into an exception in the
    main thread (``toolctl.processes.lifetime``), caught where Ctrl-C is, so one clean-up
    path serves them all."""

    def __init__(self, signum: int = 2) -> None:
        super().__init__(signum)
        self.signum = signum


def signal_of(cause: BaseException) -> int:
    """The signal that ``cause`` stands for: SIGINT unless it says otherwise."""
    if isinstance(cause, StopSignal):
        return cause.signum
    if isinstance(cause, Interrupted):
        return cause.signal
    return 2


def stopped_by(signum: int, message: str | None = None, *, quiet: bool = False) -> Interrupted:
    """The error for a command ``signum`` stopped; ``message`` defaults to its word."""
    cls = STOPPED_BY.get(signum, Interrupted)
    return cls(message or cls.word, quiet=quiet)


def interruption(cause: BaseException, message: str) -> Interrupted:
    """The error that ends a call stopped by ``cause`` (Ctrl-C, or a signal the lifetime
    turned into StopSignal): "interrupted" in ``message`` becomes the signal's own word."""
    cls = STOPPED_BY.get(signal_of(cause), Interrupted)
    return cls(message.replace("interrupted", cls.word, 1))


EXIT_INTERNAL = 70
"""An unexpected bug: one line on stderr and a report file, never a traceback."""
