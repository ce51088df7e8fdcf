"""How a command's end is told: every error, Ctrl-C, a signal, a full disk and an unexpected
bug, each in one line on stderr with its exit code (``told``), and as `run --json`'s result
object on stdout (``envelope``). Loaded only when a command did not end well.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolctl.errors import UsageError


def told(args: list[str], exc: BaseException) -> int | None:
    """What ended a command, said in one line on stderr (and as `run --json`'s result
    object); its exit code. None for an unexpected bug, which is not told here: it gets a
    crash report (``crashed``), never a traceback."""
    from toolctl.errors import ToolctlError, UsageError, signal_of, stopped_by
    from toolctl.terminal import render

    if isinstance(exc, ToolctlError):
        if not exc.quiet:
            envelope(args, exc)
            render.error(str(exc), exc.details)
        return exc.exit_code
    if isinstance(exc, click_errors()):
        from toolctl.terminal.usage import is_help, message

        if is_help(exc):  # a group named without a subcommand: a usage error, with help
            sys.stderr.write(getattr(exc, "format_message")() + "\n")  # noqa: B009
            return 2
        text = message(exc, args)
        code = int(getattr(exc, "exit_code", 1))
        if code == UsageError.exit_code:
            envelope(args, UsageError(text))
        render.error(text)
        return code
    interrupt = _interruption(exc)
    if interrupt is not None:  # Ctrl-C, or a signal the command's lifetime raised
        stopped = stopped_by(signal_of(interrupt))
        envelope(args, stopped)
        render.error(stopped.message)
        return stopped.exit_code
    if not isinstance(exc, Exception):  # GeneratorExit and the like: not ours to swallow
        raise exc
    refused = _not_utf8(args, exc) or _too_long(exc)
    if refused is not None:
        envelope(args, refused)
        render.error(str(refused))
        return refused.exit_code
    from toolctl.settings import own_file_unusable

    unusable = own_file_unusable(exc)
    if unusable is not None:
        envelope(args, unusable)
        render.error(str(unusable))
        return unusable.exit_code
    if isinstance(exc, OSError) and (exc.errno in _NO_ROOM or _output_lost()):
        from toolctl.errors import OutputLost

        lost = OutputLost(f"cannot write: {exc.strerror or exc}")
        render.error(lost.message)
        return lost.exit_code
    return None


def _not_utf8(args: list[str], exc: Exception) -> UsageError | None:
    """A UsageError for bytes that are not UTF-8 on the command line or in the working
    directory's path (Python keeps them as lone surrogates) that reached where only text
    goes (SQLite, a TOML file, a URL): what the user gave is told, never a crash."""
    if not isinstance(exc, UnicodeError):
        return None

    from toolctl.arguments import is_text
    from toolctl.errors import UsageError

    for place, arg in enumerate(args, start=1):
        if not is_text(arg):  # named by its place (and a KEY= or header name), never shown:
            key = re.match(r"[A-Za-z0-9_.-]+[=:]", arg)  # it may hold a secret
            what = f" ({key.group(0)}...)" if key else ""
            return UsageError(
                f"argument {place}{what} of the command line is not UTF-8 text",
                hint="toolctl takes names and values in UTF-8: is the terminal set to "
                "another encoding?",
            )
    with contextlib.suppress(OSError):
        cwd = os.getcwd()
        if not is_text(cwd):
            return UsageError(
                f"the working directory {_shown(cwd)} is not a UTF-8 path",
                hint="rename it, or work in another directory",
            )
    return None


def _too_long(exc: Exception) -> UsageError | None:
    """A UsageError for a path the file system refused as too long (a name over 255
    bytes, a path over 4,096): a path the user gave, or made of a name they gave."""
    if not isinstance(exc, OSError) or exc.errno != errno.ENAMETOOLONG:
        return None
    from toolctl.errors import UsageError

    where = f": {_shown(str(exc.filename))}" if exc.filename is not None else ""
    return UsageError(f"a file name is too long{where}", hint="use a shorter name or path")


def _shown(text: str) -> str:
    """``text`` quoted, its bytes that are not UTF-8 as ``\\xff`` escapes."""
    from toolctl.arguments import printable_os

    return repr(printable_os(text)).replace("\\\\", "\\")


def crashed(exc: BaseException, report: str) -> int:
    """An unexpected bug, told in one line naming its crash ``report``; exit 70."""
    from toolctl.errors import EXIT_INTERNAL
    from toolctl.terminal import render

    render.error(f"internal error: {type(exc).__name__}: {exc}; full report in {report}")
    return EXIT_INTERNAL


_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
"""What a write meets on a full disk or a failing device: the machine's state, not a bug."""


def _output_lost() -> bool:
    """Whether stdout cannot take what was written to it (a full disk, an I/O error): an
    OSError that ended a command is then that, not a bug."""
    try:
        sys.stdout.flush()
    except OSError:
        return True
    except ValueError:
        return False
    return False


def _interruption(exc: BaseException | None) -> KeyboardInterrupt | None:
    """The Ctrl-C (or stopping signal) that ended a command: ``exc``, or the one it wraps
    (Python 3.11 turns one that lands in a class's ``__set_name__`` into a RuntimeError)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def envelope(args: list[str], exc: Exception) -> None:
    """`run --json`: every outcome is a result object on stdout, the one `--batch` and
    `serve` give (success false, ``error``, ``error_code``, ``exit_code``), whatever went
    wrong before or during the call; the exit code stays the same. Not for ``--batch``:
    its output is one result line per input line, and what ends the whole batch (a
    signal, a lost broker) is told on stderr and by the exit code."""
    from toolctl.terminal import render

    if render.RUN_JSON is False:  # `run --user --json`: "--json" is the user
        return
    if "--json" not in args or next((a for a in args if not a.startswith("-")), None) != "run":
        return
    if any(a == "--batch" or a.startswith("--batch=") for a in args):
        return
    from toolctl.runners.base import ToolResult

    with contextlib.suppress(OSError, ValueError):
        render.print_json(ToolResult.refused(exc).to_json())


def click_errors() -> tuple[type[BaseException], ...]:
    """Click's own errors (usage, a bad option value, an abort): typer carries its own copy
    of click (``typer._click``), loaded by then."""
    from typer import Abort
    from typer._click.exceptions import ClickException

    return (ClickException, Abort)
