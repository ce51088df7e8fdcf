"""The line protocol a process tool reports with on its stderr: progress and log messages.

    toolctl:progress 50/100 halfway there     progress, an optional /total and message
    toolctl:log info Tool processing data     an MCP logging level, then the message

A line that is not the protocol is stderr as before. Where the caller captures stderr (a
server), each protocol line becomes the sink's ``progress`` or ``log`` (an MCP door sends
them to its client as notifications); where the child writes to the terminal itself
(``toolctl run``), the lines are shown as they are, which reads well enough.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolctl.runners.base import Event, Sink, WaitIndicator

PREFIX = "toolctl:"
LEVELS = frozenset(
    {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
)
MAX_LINE = 64 * 1024
"""A longer line is passed through as stderr without waiting for its end."""


class ProtocolSink(Sink):
    """A sink in front of another that reads the protocol out of stderr chunks."""

    stderr_fd = None

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._pending = ""
        self.answers: Mapping[str, str] = sink.answers
        self.reports = sink.reports

    def event(self, event: Event) -> None:
        self._sink.event(event)

    def output(self, text: str) -> None:
        self._sink.output(text)

    def warning(self, message: str) -> None:
        self._sink.warning(message)

    def waiting(self, message: str, delay: float = 0.2) -> WaitIndicator:
        return self._sink.waiting(message, delay)

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self._sink.progress(progress, total, message)

    def log(self, level: str, message: str) -> None:
        self._sink.log(level, message)

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        return self._sink.ask(method, params)

    def stderr(self, text: str) -> None:
        if not self._pending and PREFIX not in text:
            self._sink.stderr(text)  # the common case: no protocol in sight
            return
        *lines, self._pending = (self._pending + text).split("\n")
        passed = "".join(line + "\n" for line in lines if not self._read(line))
        if self._pending and not _may_be_protocol(self._pending):
            passed, self._pending = passed + self._pending, ""
        if passed:
            self._sink.stderr(passed)

    def _read(self, line: str) -> bool:
        """Report one protocol line; False when the line is not one."""
        parsed = parse_line(line)
        if parsed is None:
            return False
        kind, values = parsed
        if kind == "progress":
            self._sink.progress(*values)
        else:
            self._sink.log(*values)
        return True


def _may_be_protocol(partial: str) -> bool:
    head = partial[: len(PREFIX)]
    return PREFIX.startswith(head) and len(partial) <= MAX_LINE


def parse_line(line: str) -> tuple[str, Any] | None:
    """``("progress", (progress, total, message))``, ``("log", (level, message))`` or None."""
    if not line.startswith(PREFIX):
        return None
    kind, _, rest = line[len(PREFIX) :].rstrip("\r").partition(" ")
    if kind == "progress":
        amount, _, message = rest.strip().partition(" ")
        done, _, total = amount.partition("/")
        try:
            numbers = float(done), float(total) if total else None
        except ValueError:
            return None
        return "progress", (*numbers, message.strip() or None)
    if kind == "log":
        level, _, message = rest.strip().partition(" ")
        if level not in LEVELS:
            return None
        return "log", (level, message)
    return None
