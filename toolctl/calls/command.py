"""`toolctl run`'s use case: a tool named on a command line, called once, described
(``--dry-run``), or called once per line of a ``--batch``."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from toolctl.errors import UsageError

if TYPE_CHECKING:
    from toolctl.calls import Caller
    from toolctl.registry.index import Registry
    from toolctl.runners.base import Sink, ToolResult
    from toolctl.settings import Settings


class Planned(NamedTuple):
    """What a ``--dry-run`` would have run (secrets masked)."""

    name: str
    plan: dict[str, Any]


class RunRequest(NamedTuple):
    """What a `toolctl run` command line asks for (see ``run_named``)."""

    name: str
    pairs: Sequence[str] = ()
    args: str | None = None
    batch: str | None = None
    concurrency: int = 1
    timeout: float | None = None
    max_output: int | None = None
    allow_staging: bool = False
    dry_run: bool = False


@contextmanager
def run_request(
    settings: Settings,
    registry: Registry,
    request: RunRequest,
    sink: Sink,
    *,
    at_once: Callable[[], object],
) -> Iterator[Planned | ToolResult | Iterator[ToolResult]]:
    """`toolctl run`: ``request`` run from the command line (see ``run_named``); what it
    gives is read inside the block, while the calls are open and signals end them (a
    first Ctrl-C or SIGTERM stops the calls, a second ends at once after ``at_once``)."""
    from toolctl.calls import Caller, cli_origin
    from toolctl.processes.lifetime import Lifetime
    from toolctl.processes.reaper import kill_now

    caller = Caller(settings, registry, origin=cli_origin(settings))
    with Lifetime(raising=True) as lifetime, caller:
        lifetime.at_once(caller.abandon)  # a second signal: its containers removed first,
        lifetime.at_once(lambda: kill_now(settings))  # then nothing below it outlives it
        lifetime.at_once(at_once)
        yield run_named(caller, sink=sink, **request._asdict())


def run_named(
    caller: Caller,
    name: str,
    sink: Sink,
    *,
    pairs: Sequence[str] = (),
    args: str | None = None,
    batch: str | None = None,
    concurrency: int = 1,
    timeout: float | None = None,
    max_output: int | None = None,
    allow_staging: bool = False,
    dry_run: bool = False,
) -> Planned | ToolResult | Iterator[ToolResult]:
    """One call of the tool ``name`` (``pairs``: KEY=VALUE items; ``args``: the --args
    option, JSON, @FILE or -), its plan with ``dry_run``, or with ``batch`` (a file, or -
    for stdin) one call per line, the results in input order as they come."""
    from toolctl import arguments, calls

    spec = calls.resolve(caller.registry, name, allow_staging=allow_staging)
    if batch is not None:
        if pairs or args:
            raise UsageError("--batch reads the arguments from its lines; drop --arg/--args")
        if dry_run:  # a plan per line is not what --batch is for: nothing must run
            raise UsageError("--dry-run shows one call's plan; drop --batch (or --dry-run)")
        import gc

        gc.freeze()  # what start-up built lives to the end: keep it out of every GC pass
        lines = batch_lines(batch)
        return caller.batch(
            spec, lines, concurrency=concurrency, timeout=timeout, sink=sink, max_output=max_output
        )
    if concurrency != 1:  # a single call has nothing to run at once
        raise UsageError("--concurrency is how many --batch lines run at once; add --batch")
    given = arguments.read_args_option(args) if args is not None else None
    if dry_run:
        return Planned(spec.name, caller.describe(spec, given, pairs=pairs, timeout=timeout))
    return caller.call(spec, given, pairs=pairs, timeout=timeout, sink=sink, max_output=max_output)


def batch_lines(source: str) -> Iterable[str]:
    """Lines of a --batch file, or of stdin for '-'; bytes that are not UTF-8 stay in the
    line as surrogates, so that line (and only it) fails as not UTF-8 text. A line longer
    than ``MAX_INPUT`` ends the batch (exit 2): a line that never ends (``/dev/zero``)
    would otherwise take all the memory there is."""
    if source == "-":
        binary = getattr(sys.stdin, "buffer", None)
        if binary is None:  # a text stream stood in for stdin
            return sys.stdin
        return _bounded_lines(binary)
    try:
        opened = open(source, "rb")  # noqa: SIM115 (closed by _bounded_lines)
    except OSError as exc:
        raise UsageError(f"cannot read --batch file {source}: {exc.strerror}") from exc
    return _bounded_lines(opened, close=True)


def _bounded_lines(stream: Any, *, close: bool = False) -> Iterator[str]:
    from toolctl.arguments import MAX_INPUT

    try:
        for number in itertools.count(1):
            raw = stream.readline(MAX_INPUT + 1)
            if not raw:
                return
            if len(raw) > MAX_INPUT and not raw.endswith(b"\n"):
                raise UsageError(
                    f"--batch line {number} is longer than {MAX_INPUT // 2**20} MiB",
                    hint="send large values as a file the tool reads",
                )
            yield raw.decode("utf-8", "surrogateescape")
    finally:
        if close:
            stream.close()
