"""What every door opens first: the selection it serves and the dispatcher over it.

``serve`` (HTTP), ``mcp serve`` (stdio) and ``worker --tool`` (Pulsar) each serve a
selection of the registry through one ``Dispatcher``; ``open_front`` opens it as a command
does (skipped files warned about, ``--strict`` enforced), reports the selection's warnings,
and turns the MCP SDK's and uvicorn's logging into one stderr line per message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolctl.serve.catalog import Selection

if TYPE_CHECKING:
    from toolctl.reporting import Reporter
    from toolctl.serve.dispatch import Dispatcher, LogLine
    from toolctl.settings import Settings


def selection(
    group: list[str] | None,
    tool: list[str] | None,
    action: list[str] | None,
    hops: int,
    threshold: float,
) -> Selection:
    """The tools to serve: a group's, named ones, or what ``recommend`` gives from actions
    (``hops`` and ``threshold`` go with ``action`` only: UsageError otherwise)."""
    from toolctl.errors import UsageError

    if (hops or threshold != 0.5) and not action:
        raise UsageError("--hops and --threshold go with --action")
    return Selection(tuple(group or ()), tuple(tool or ()), tuple(action or ()), hops, threshold)


def open_front(
    settings: Settings,
    reporter: Reporter,
    chosen: Selection,
    concurrency: int,
    queue: int | None = None,
    log: LogLine | None = None,
) -> Dispatcher:
    """The dispatcher for a server, after the warnings a command gives about the registry."""
    from toolctl.registry import open_registry
    from toolctl.serve.dispatch import open_dispatcher

    open_registry(settings, reporter, full=True)  # warns about skipped files, --strict
    dispatcher = open_dispatcher(
        settings,
        chosen,
        concurrency=concurrency,
        queue=64 * concurrency if queue is None else queue,
        log=log,
    )
    for warning in dispatcher.catalog.snapshot.warnings:
        reporter.warn(warning)
    sdk_logs_as_lines()
    import gc

    gc.freeze()  # what start-up built lives to the end: keep it out of every GC pass
    return dispatcher


LOGGED_LENGTH = 300
"""Characters of a library's warning a server's log keeps (a client's bad request could
otherwise fill it: the SDK's validation error lists every field it tried)."""


def _not_a_client_gone(record: Any) -> bool:
    """False for the SDK's report that the stream of a session's GET closed under it
    (``ClosedResourceError``, ``BrokenResourceError``): its client ended the session or
    went away, as every client does ("Error in standalone SSE writer" at each end)."""
    if record.exc_info and record.getMessage() == "Error in standalone SSE writer":
        import anyio

        return not isinstance(
            record.exc_info[1], anyio.ClosedResourceError | anyio.BrokenResourceError
        )
    return True


def sdk_logs_as_lines() -> None:
    """The MCP SDK's, uvicorn's and any library's warnings as one stderr line each, never
    a traceback nor a multi-line dump: what a client sends cannot garble the log (the
    SDK logs a request it cannot validate on the root logger, with pydantic's 70 lines)."""
    import logging

    class OneLine(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            lines = record.getMessage().splitlines() or [""]
            first = lines[0][:LOGGED_LENGTH] + ("..." if len(lines[0]) > LOGGED_LENGTH else "")
            more = f" (+{len(lines) - 1} more line(s))" if len(lines) > 1 else ""
            return f"toolctl: {record.name}: {first}{more}"

    handler = logging.StreamHandler()
    handler.setFormatter(OneLine())
    handler.addFilter(_not_a_client_gone)
    for name in ("mcp", "uvicorn", ""):  # "": the root logger, what logging.warning() uses
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(logging.WARNING)
        logger.propagate = False
