"""What every call leaves behind: a row in the run history, metrics, a trace span.

The rooms inside:

* ``history``: the run history, SQLite under the state directory (WAL, many writers,
  bounded by count and age); reading it for `toolctl history` and `toolctl stats`.
* ``journal``: the records of this process waiting to be written; written in a batch by a
  background thread (servers, batches) or once the command's output is out (one call), so
  opening SQLite is never between a call and its result. Never fails a call: a history
  that cannot be written costs one warning.
* ``recorder``: a call's record from its start to its end (history row, metrics, span).
* ``tracing``: W3C ``traceparent`` ids for every call; spans exported over OTLP only when
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (``otel``: nothing of OpenTelemetry is imported
  otherwise).
* ``metrics``: Prometheus counters, a duration histogram, calls in flight and a worker's
  backlog (``prometheus-client``, imported by servers and workers only).
* ``masking``: secrets out of stored arguments and output.
* ``stats``: percentiles and histograms of durations; ``transcripts``: chat transcripts
  turned into history.

This module is on every `toolctl run`'s path: it holds only small values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

CALLERS = ("cli", "batch", "serve", "mcp", "worker", "import")
"""Who made a call: `toolctl run`, `run --batch`, the REST gateway, an MCP client (stdio or
/mcp), a Pulsar worker, or a transcript imported with `history import`."""

OUTCOMES = {
    0: "ok",
    1: "failed",
    2: "invalid",
    3: "refused",
    4: "not_found",
    5: "unavailable",
    70: "error",
    74: "output_lost",  # the call's output could not be written (a full disk)
    124: "timeout",
    129: "interrupted",  # SIGHUP
    130: "interrupted",  # SIGINT
    131: "interrupted",  # SIGQUIT
    141: "interrupted",  # the reader of the output went away (as SIGPIPE ends a pipeline)
    143: "interrupted",  # SIGTERM
}
"""A call's outcome by the exit code `toolctl run` would have ended with."""
NEVER_RAN = frozenset({"invalid", "not_found", "refused"})
"""Outcomes of calls that never ran (refused before they started): no duration to count,
in `stats` or in the duration histogram of /metrics."""


def outcome_of(exit_code: int) -> str:
    return OUTCOMES.get(exit_code, "error")


class Origin(NamedTuple):
    """Where a call comes from: who made it, in which session, inside which trace.

    ``traceparent`` is the W3C header of the caller's span (a client of `serve`, a Pulsar
    request's property), or None: the call starts a trace. ``call_id`` is the id the
    caller gave this tool call (an MCP request id, an OpenAI ``tool_call`` id).
    """

    caller: str = "cli"
    session: str | None = None
    traceparent: str | None = None
    call_id: str | None = None


def write_all(warn: Callable[[str], None] | None = None) -> None:
    """Write the calls' records still held, the spans first (a warning about them is told
    with the history's), then the history rows; ``warn`` hears of a history that failed.
    Nothing is imported when this process made no call."""
    import sys

    if "toolctl.records.journal" not in sys.modules:
        return
    from toolctl.records.journal import flush_all
    from toolctl.records.tracing import shutdown_all

    shutdown_all()
    flush_all(warn)


def lost_on_signal() -> str | None:
    """What a signal ending the process now would lose of the calls' records, said in one
    line (None: nothing): the run history waits up to 30 s for another writer's lock,
    after the result is printed, and a command stopped then lost its row without a word."""
    import sys

    if "toolctl.records.journal" not in sys.modules:
        return None
    from toolctl.records.journal import unwritten

    count = unwritten()
    if not count:
        return None
    return (
        f"toolctl: warning: stopped while the run history waited for another writer: "
        f"{count} call record(s) lost\n"
    )


__all__ = ["CALLERS", "OUTCOMES", "Origin", "lost_on_signal", "outcome_of", "write_all"]
