"""Calling a tool by name, the one way: resolve → build and validate → runner → ToolResult.

Every front door calls tools through here: ``toolctl run`` (one call, ``--dry-run``,
``--batch``), ``toolctl worker --tool`` and the servers under ``toolctl.serve``.

The API::

    call(settings, registry, name, arguments=None, *, pairs=(), timeout=None, user=None,
         sink=None) -> ToolResult
        One call. ``name`` is a tool name (first wins; unknown: NotFound, exit 4; a tool's
        function name as an OpenAI export spells it, ``a_b`` for ``a.b``, is accepted) or a
        ToolSpec from ``resolve``. ``arguments`` is a JSON object; ``pairs`` are ``--arg
        k=v`` strings converted to the declared types. Arguments are validated before
        anything runs (InvalidArguments, exit 2). ``timeout`` defaults to the tool's,
        ``user`` to the settings'. The tool failing is a result (``success`` false);
        not reaching it, a timeout or an interruption raise a ToolctlError.
    describe(settings, registry, name, arguments=None, *, pairs=(), timeout=None,
             user=None) -> dict
        What ``call`` would do (argv, URL, image, queue; secrets masked); runs nothing.
    batch(settings, registry, name, lines, *, concurrency=1, timeout=None, user=None,
          sink=None) -> Iterator[ToolResult]
        One call per non-blank JSON line, ``concurrency`` in flight, results in input
        order; a bad line is a failed result, never the end of the batch.
    tools_in_force(registry) -> list[ToolSpec]
        Every tool a call can name: the first definition of each name, resolved.
    resolve(registry, name, *, allow_staging=False) -> ToolSpec
        A tool whose ``state`` is staging, disabled or deprecated is refused unless
        ``allow_staging``; ``call``/``describe``/``batch`` by name never allow it (pass a
        ToolSpec resolved with ``allow_staging=True`` to run one).

    Caller(settings, registry, *, recorder=None, origin=Origin())  — the same calls over
        runners kept open between calls (a server, a worker): ``.call``, ``.describe``,
        ``.batch`` as above without the first two parameters, and ``.close()`` (also a
        context manager). Thread-safe. ``.call(..., cancel=Cancel())`` can be ended from
        another thread, its processes killed (``toolctl.calls.cancel``).
        ``.submit(runner, call)`` sends a prepared call through a runner that pipelines
        (``.pipeline(runtime)``: Pulsar) without waiting; ``run --batch`` and the servers
        both send pipelined calls this way, with the same start and done events and the
        same record as ``.call``. ``.close(drain=S)`` (a server stopping) first waits up
        to S seconds for the calls in flight to end.

Every call that reaches its runner, or is refused for invalid arguments, leaves a record
(``toolctl.records``): a span whose ``traceparent`` the runner passes on to the tool, a row
in the run history (written off the call's path), and the metrics of a server or worker
that passes a Recorder with them. ``origin`` (``toolctl.records.Origin``) says who called,
in which session and trace; a call's own ``origin=`` overrides the caller's. A batch is one
session.

The ``sink`` (``toolctl.runners.base.Sink``) hears the call's ``start`` and ``done``
events and whatever the runner shows while it works (output as it arrives, a child's
stderr, "a slow start is under way"); the default discards everything.

No process left behind: the first call makes this process a child subreaper, and when
the last call in flight ends (a single call, a whole batch, a server going idle) every
process the calls left (a tool's ``setsid`` or ``nohup`` grandchildren) is killed and
reaped; the managed services toolctl starts on purpose are spared. See
``toolctl.processes.reaper``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolctl.calls.caller import Caller, cli_origin
from toolctl.calls.events import Submitted, done_event, start_event
from toolctl.calls.resolution import resolve, tools_in_force

if TYPE_CHECKING:
    from toolctl.registry.index import Registry
    from toolctl.runners.base import Sink, ToolResult, ToolSpec
    from toolctl.settings import Settings

__all__ = [
    "Caller",
    "Submitted",
    "batch",
    "call",
    "cli_origin",
    "describe",
    "done_event",
    "resolve",
    "start_event",
    "tools_in_force",
]


def call(
    settings: Settings,
    registry: Registry,
    name: str | ToolSpec,
    arguments: Mapping[str, Any] | None = None,
    *,
    pairs: Sequence[str] = (),
    timeout: float | None = None,
    user: str | None = None,
    sink: Sink | None = None,
) -> ToolResult:
    """One call, with runners opened and closed around it (see the module docstring)."""
    with Caller(settings, registry) as caller:
        return caller.call(name, arguments, pairs=pairs, timeout=timeout, user=user, sink=sink)


def describe(
    settings: Settings,
    registry: Registry,
    name: str | ToolSpec,
    arguments: Mapping[str, Any] | None = None,
    *,
    pairs: Sequence[str] = (),
    timeout: float | None = None,
    user: str | None = None,
) -> dict[str, Any]:
    """What ``call`` would do, secrets masked; runs nothing."""
    with Caller(settings, registry) as caller:
        return caller.describe(name, arguments, pairs=pairs, timeout=timeout, user=user)


def batch(
    settings: Settings,
    registry: Registry,
    name: str | ToolSpec,
    lines: Iterable[str],
    *,
    concurrency: int = 1,
    timeout: float | None = None,
    user: str | None = None,
    sink: Sink | None = None,
) -> Iterator[ToolResult]:
    """One call per JSON line, results in input order (see the module docstring)."""
    with Caller(settings, registry) as caller:
        yield from caller.batch(
            name, lines, concurrency=concurrency, timeout=timeout, user=user, sink=sink
        )
