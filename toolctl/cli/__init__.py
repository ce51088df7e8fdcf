"""The ``toolctl`` entry point: run the typer app, turn every error into a line and an exit code.

``--version`` is answered before typer is imported, so it costs little more than starting
Python (typer alone takes ~60 ms to import). The process then ends without finalizing the
interpreter: tearing down the ~300 modules a command has loaded costs 10-20 ms, a sixth of
a whole `toolctl run` of a local tool, and nothing needs it: every command closes what it
opened (clients, connections, executors, spinners) before it returns.

The garbage collector is off while typer and the command's modules load and the command is
built: that allocates some 100,000 objects and frees almost none, so the ~40 collections
it triggers (~4 ms) find nothing. What start-up built lives to the end: it is frozen out
of every later collection, then collecting resumes as usual.

Ctrl-C while this module loads (some 10 ms, most of it ``typing``) is held until
``dispatch`` can tell it like any other: otherwise Python would print a traceback of the
import. Only the interpreter's own start comes before (``toolctl/__init__`` loads nothing),
and that is Python's to tell.
"""

# ruff: noqa: E402 (Ctrl-C is held before the other imports)
from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # not `signal`: that loads enum, ~2 ms


def _hold(signum: int, frame: object) -> None:
    global _interrupted
    _interrupted = True


_interrupted = False
"""Ctrl-C came while this module loaded (see the module docstring)."""
_holding = _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
if _holding:
    _signal.signal(_signal.SIGINT, _hold)

import contextlib
import gc
import os
import sys
from collections.abc import Sequence
from typing import NoReturn


def main(argv: Sequence[str] | None = None) -> NoReturn:
    args = list(sys.argv[1:] if argv is None else argv)
    if sys.stdin is None or sys.stdout is None or sys.stderr is None:
        _closed_streams()
    if type(getattr(sys.stdout, "buffer", None)).__name__ == "FileIO":
        _whole_writes()
    if args in (["--version"], ["-V"]):
        from toolctl import __version__

        try:
            sys.stdout.write(f"toolctl {__version__}\n")
        except OSError as exc:  # a full disk
            _lost(exc)
            _exit(_NOT_WRITTEN)
        _exit(0)
    global _collector_paused
    _collector_paused = gc.isenabled()
    gc.disable()
    _exit(dispatch(args))


def _closed_streams() -> None:
    """A standard stream closed by the caller (``toolctl list >&-``) reads and writes
    nothing, as if it were /dev/null: Python leaves it None (every print would be an
    AttributeError), and its descriptor free, so the next file toolctl opened would take
    it and get the output written into it."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        if getattr(sys, name) is None:
            # the process's own stream, as sys.stdout is: never closed
            stream = open(fd, mode, encoding="utf-8", closefd=False)  # noqa: SIM115
            setattr(sys, name, stream)


def _whole_writes() -> None:
    """PYTHONUNBUFFERED (or ``python -u``) gives stdout a raw file, whose one write takes
    what the pipe takes when its reader goes away mid-write, and Python drops the rest
    without a word: `toolctl run --json | head` lost the output and said 0. Over a
    buffered writer every write is whole or fails (the reader gone: 141)."""
    import io

    raw = sys.stdout
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(raw.buffer),
        encoding=raw.encoding,
        errors=raw.errors,
        line_buffering=raw.isatty(),  # as Python's own stdout: a line at a time to a terminal
    )


_collector_paused = False
"""main() turned the garbage collector off for start-up (see the module docstring)."""


def _resume_collector() -> None:
    global _collector_paused
    if _collector_paused:
        _collector_paused = False
        gc.freeze()
        gc.enable()


def _exit(code: int) -> NoReturn:
    """Flush what we printed and the calls' records, then leave at once (see the module
    docstring)."""
    for stream in (sys.stdout, sys.stderr):
        # a reader that went away (`toolctl list | head -1`) leaves nothing to say
        try:
            stream.flush()
        except BrokenPipeError:
            code = code or (_READER_GONE if stream is sys.stdout else 0)
        except OSError as exc:  # the output is lost (a full disk): said, and the exit code
            if stream is sys.stdout and not code:
                code = _NOT_WRITTEN
                _lost(exc)
        except ValueError:
            pass
    write_records()
    os._exit(code)


def _lost(exc: OSError) -> None:
    """Say that the output is lost, as toolctl.errors.OutputLost would be told."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"toolctl: error: cannot write: {exc.strerror or exc}\n")


_COMPLETION_OPTIONS = ("--install-completion", "--show-completion")
"""Answered in toolctl's style (toolctl.terminal.completion), not by typer."""
_READER_GONE = 141
"""toolctl.errors.ReaderGone's exit code (not imported for it: `--version` comes here)."""
_NOT_WRITTEN = 74
"""toolctl.errors.OutputLost's exit code (sysexits' EX_IOERR), for the same reason."""


def dispatch(args: list[str]) -> int:
    """Run one command line; returns the exit code instead of raising."""
    from toolctl.processes import reaper

    if args[:1] == ["help"]:  # `toolctl help mcp install` is `toolctl mcp install --help`
        args = [*args[1:], "--help"]
    owned, reaper.OWN_PROCESS = reaper.OWN_PROCESS, True  # what the calls leave is ours
    try:
        if _interrupted:
            raise KeyboardInterrupt
        _working_directory()
        from toolctl.terminal import render

        render.PROGRESS = "--json" not in args  # JSON for machines: no spinner beside it
        if "_TOOLCTL_COMPLETE" in os.environ:  # a shell asking for completions
            from toolctl.terminal.completion import answering

            answering()
        if args[:1] and args[0].partition("=")[0] in _COMPLETION_OPTIONS:
            from toolctl.terminal.completion import completion

            option, _, shell = args[0].partition("=")
            return completion([option, *([shell] if shell else []), *args[1:]])
        from toolctl.cli.app import command

        cli = command(args)
        _resume_collector()
        # not standalone: click's usage errors come here, to be told in toolctl's style
        # rather than in typer's rich panel; typer.Exit (--help, --version) returns its code
        code = cli.main(args=args, prog_name="toolctl", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BrokenPipeError:
        return _READER_GONE
    except BaseException as exc:  # every other end is told in one line
        from toolctl.terminal.endings import crashed, told

        code = told(args, exc)
        if code is None:  # a bug: its report is written, never a traceback shown
            from toolctl.records.crash import write_crash_report

            code = crashed(exc, write_crash_report(args))
        return code
    finally:
        write_records()
        reaper.OWN_PROCESS = owned  # (the next call in this process: a test's)
        if "toolctl.terminal.render" in sys.modules:  # the next call in this process
            from toolctl.terminal import render

            render.RUN_JSON = None


def _working_directory() -> None:
    """UsageError when the working directory is gone (removed under the shell): every
    relative path, the project and its registry would be looked for there."""
    try:
        os.getcwd()
    except OSError as exc:
        from toolctl.errors import UsageError

        raise UsageError(
            f"the working directory is gone ({exc.strerror})", hint="cd to one that exists"
        ) from None


def write_records() -> None:
    """Write the calls' records once the command's output is out (see toolctl.records):
    the run history, then the spans still held, when the command made calls at all."""
    if "toolctl.records.journal" not in sys.modules:
        return
    from toolctl.processes.lifetime import signals_end_at_once
    from toolctl.records import lost_on_signal, write_all

    # the command is over: a signal now never shows a traceback, and says what it lost
    signals_end_at_once(lost_on_signal)
    from toolctl.terminal import render

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    write_all(render.warn)


if _holding:  # loaded: Ctrl-C raises KeyboardInterrupt again, as Python's default does
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
