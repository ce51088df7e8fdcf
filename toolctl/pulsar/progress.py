"""A Pulsar request's progress and log partials: what a handler reports while it runs
(``report_progress``, ``report_log``) and the reporter that sends them until the answer."""

from __future__ import annotations

import contextvars
from collections.abc import Callable

from toolctl.pulsar.wire import encode_log, encode_progress


class ProgressReporter:
    """Sends one request's progress and log partials, until its final answer is sent."""

    __slots__ = ("_live", "_send")

    def __init__(self, send: Callable[[bytes], None]) -> None:
        self._send = send
        self._live = True

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._live:
            self._send(encode_progress(progress, total, message))

    def log(self, level: str, message: str) -> None:
        if self._live:
            self._send(encode_log(level, message))

    def close(self) -> None:
        """The final answer is next: anything reported later is dropped."""
        self._live = False


REPORTER: contextvars.ContextVar[ProgressReporter | None] = contextvars.ContextVar(
    "toolctl_pulsar_reporter", default=None
)
"""The reporter of the request being handled, when it takes progress (else None)."""


def report_progress(
    progress: float, total: float | None = None, message: str | None = None
) -> None:
    """Report the current request's progress from its handler (nothing if not asked for)."""
    reporter = REPORTER.get()
    if reporter is not None:
        reporter.progress(progress, total, message)


def report_log(level: str, message: str) -> None:
    """Send a log message of the current request's handler (nothing if not asked for)."""
    reporter = REPORTER.get()
    if reporter is not None:
        reporter.log(level, message)


def close_reporter(reporter: ProgressReporter | None) -> None:
    if reporter is not None:
        reporter.close()
