"""What `toolctl run` shows: the result (or its JSON), a --batch's result lines with their
progress on stderr, a --dry-run's plan."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from toolctl.calls.command import Planned
from toolctl.runners.base import ToolResult
from toolctl.terminal import render


def print_run(
    done: Planned | ToolResult | Iterator[ToolResult],
    sink: render.TerminalSink,
    *,
    as_json: bool,
    source: str | None,
) -> bool:
    """What ``calls.command.run_request`` gave: a plan, one result, or a batch's results as
    they come (``source``: the --batch file, for the progress line); True when all
    succeeded."""
    if isinstance(done, Planned):
        print_plan(done.name, done.plan, as_json=as_json)
        return True
    if isinstance(done, ToolResult):
        print_result(done, as_json=as_json, already_streamed=sink.streamed)
        return done.success
    return print_results(done, batch_progress(str(source), sink.settings.color))


def ended(sink: render.TerminalSink, ok: bool) -> None:
    """The run's end once all is printed: the reader gone (141), a full disk (74), or
    ToolFailed (exit 1, already told) when a call failed."""
    from toolctl.errors import ToolFailed

    sink.check_output()
    if not ok:
        raise ToolFailed("the tool failed", quiet=True)


def print_result(result: Any, *, as_json: bool, already_streamed: bool) -> None:
    """A ToolResult: the whole of it as JSON, or its output (unless streamed); a failure's
    reason on stderr either way."""
    if as_json:
        render.print_json(result.to_json())
        if not result.success:
            render.error(f"the tool failed: {result.error or 'no reason given'}")
        return
    if not already_streamed and result.output:
        sys.stdout.write(result.output if result.output.endswith("\n") else result.output + "\n")
    truncated: int = getattr(result, "truncated", 0)
    if truncated and not already_streamed:
        render.note(
            f"output truncated: {truncated} bytes past the tool's max_output were "
            "dropped (--max-output raises it)"
        )
    if not result.success:
        render.error(f"the tool failed: {result.error or 'no reason given'}")


def print_results(results: Any, progress: BatchProgress | None = None) -> bool:
    """ToolResults as JSON lines, as they come; True when every one succeeded."""
    ok = True
    with render.JsonLines() as out, _closing(progress):
        while True:
            try:
                for result in results:
                    out.write(result.to_json())
                    ok = ok and result.success
                    if progress is not None:
                        progress.count(result.success)
                break
            except KeyboardInterrupt as exc:  # came while a result was written: the
                stop = getattr(results, "stop", None)  # batch stops, the results still come
                if stop is None:
                    raise
                stop(exc)
    return ok


@contextmanager
def _closing(progress: BatchProgress | None) -> Iterator[None]:
    """The progress line's summary, however the batch ends (a signal stops it too)."""
    try:
        yield
    finally:
        if progress is not None:
            progress.close()


class BatchProgress:
    """`run --batch` on a terminal: one stderr line redrawn as results come (done/total,
    the rate, failures), then a summary line. Shown only when the results go elsewhere
    (a file, a pipe): on a terminal the result lines themselves show the progress."""

    def __init__(self, total: int | None) -> None:
        import time

        self.total, self.done, self.failed = total, 0, 0
        self.started = self.shown = time.monotonic()

    def count(self, success: bool) -> None:
        import time

        self.done += 1
        self.failed += not success
        now = time.monotonic()
        if now - self.shown >= 0.2:
            self.shown = now
            sys.stderr.write(f"\r\x1b[K{render.PROG}: {self._text(now)}")
            sys.stderr.flush()

    def close(self) -> None:
        import time

        sys.stderr.write(f"\r\x1b[K{render.PROG}: {self._text(time.monotonic())}\n")
        sys.stderr.flush()

    def _text(self, now: float) -> str:
        of = f"/{self.total}" if self.total is not None else ""
        rate = self.done / max(now - self.started, 1e-9)
        return f"batch: {self.done}{of} done, {rate:.1f}/s, {self.failed} failed"


def batch_progress(source: str, color: bool) -> BatchProgress | None:
    """A BatchProgress when progress may show and the results are not on the terminal;
    ``source`` a file is counted first (its non-blank lines) for the total."""
    if not render.showing_progress(color) or sys.stdout.isatty():
        return None
    total = None
    if source != "-":
        try:
            with open(source, "rb") as lines:
                total = sum(1 for line in lines if line.strip())
        except OSError:
            pass  # reading the batch itself says what is wrong
    return BatchProgress(total)


def print_plan(name: str, plan: dict[str, Any], *, as_json: bool) -> None:
    """What --dry-run would have run."""
    shown = render.masked(plan)
    render.print_json(shown) if as_json else render.print_fields(
        f"tool {name}", render.flatten(shown)
    )
