"""Everything toolctl prints for people: tables, JSON, warnings and errors.

Data goes to stdout, diagnostics to stderr. Tables are aligned text: on a terminal one line
a row (the last column cut with … to the width), piped as long as the rows are.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from toolctl.runners.base import Sink

PROG = "toolctl"


def display_path(file: str | Path) -> str:
    """A path relative to the working directory when it lies below it, else absolute."""
    text = str(file)
    try:
        relative = os.path.relpath(text)
    except ValueError:
        return text
    return text if relative.startswith("..") else relative


def relativise(message: str) -> str:
    """Shorten absolute paths below the working directory inside a message: each one that
    starts a word (after a space, a quote, a bracket), never inside a URL or another path,
    and nothing from ``/``, where every ``//`` would go (``http:127.0.0.1:8080``)."""
    try:
        here = os.getcwd()
    except OSError:  # the working directory was removed: the paths stay whole
        return message
    if here == os.sep or here + os.sep not in message:
        return message
    return _below(here).sub("", message)


@functools.lru_cache(maxsize=4)
def _below(directory: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w./:~@%+-])" + re.escape(directory + os.sep))


def to_json(data: Any) -> str:
    """Sorted, indented, byte-stable JSON; an invisible or reordering character (only ever
    inside a string) written as its ``\\uXXXX`` escape: the same value, seen."""
    return shown(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))


def shown(text: str) -> str:
    """JSON text with its invisible or reordering characters as escapes (see to_json)."""
    if text.isascii() or not _HAS_INVISIBLE.search(text):  # isascii: a flag, no scan
        return text
    return text.translate(_JSON_INVISIBLE)


def print_json(data: Any) -> None:
    sys.stdout.write(to_json(data) + "\n")


def print_json_list(items: Iterable[Any], key: str | None = None) -> None:
    """``print_json(list(items))`` (or of ``{key: list(items)}``), the same bytes, written
    while the items are still being read."""
    from toolctl.terminal import jsonstream

    if key is None:
        jsonstream.write_list(sys.stdout, items, shown=shown)
    else:
        sys.stdout.write("{\n  " + json.dumps(key, ensure_ascii=False) + ": ")
        jsonstream.write_list(sys.stdout, items, indent="  ", shown=shown)
        sys.stdout.write("\n}")
    sys.stdout.write("\n")


class JsonLines:
    """JSON lines to stdout in small bursts: flushed every 256 lines and every 50 ms.

    A write per line is a system call per line when stdout is unbuffered (PYTHONUNBUFFERED),
    a measurable share of a fast --batch; a reader still sees each result within 50 ms.
    """

    def __init__(self) -> None:
        import threading

        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._gone: OSError | None = None  # why the ticker could not write: the next
        # write raises it (the reader gone: 141; a full disk: 74, said)

    def write(self, data: Any) -> None:
        if self._gone is not None:
            raise self._gone
        line = shown(json.dumps(data, sort_keys=True, ensure_ascii=False))
        with self._lock:
            self._lines.append(line)
            full = len(self._lines) >= 256
        if full:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            lines, self._lines = self._lines, []
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()

    def _tick(self) -> None:
        while not self._done.wait(0.05):
            try:
                self.flush()
            except OSError as exc:  # the reader went away (`run --batch - | head -1`)
                self._gone = exc
                return

    def __enter__(self) -> JsonLines:
        self._ticker.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._ticker.join()
        self.flush()


def fancy(stream: TextIO, color: bool) -> bool:
    """Whether rich output (boxes, colour, spinners) suits this stream."""
    return color and stream.isatty()


def print_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    color: bool,
    title: str | None = None,
    empty: str | None = None,
) -> None:
    """A table as aligned rows, the widths taken over the whole listing; with no row and
    ``empty`` given, that note on stderr instead (nothing on stdout, as `gh` does).

    On a terminal each row stays one line: every column but the last is shown whole (a
    name is what people copy), and the last (a description) is cut with … to fit the
    width; the header is bold when colour is on. Piped, rows are as long as they are.
    Cells are kept (short strings, ~100 bytes a row) until the widths are known; nothing
    else of the rows is."""
    cells = [list(columns)]
    widths = [len(column) for column in columns]
    for row in rows:
        line = [one_line(cell) for cell in row]
        cells.append(line)
        for i, cell in enumerate(line):
            if len(cell) > widths[i]:
                widths[i] = len(cell)
    if len(cells) == 1 and empty is not None:
        note(empty)
        return
    terminal = sys.stdout.isatty()
    room = _screen_columns() if terminal else 0
    if title is not None:
        sys.stdout.write(title + "\n")
    for start in range(0, len(cells), 1024):
        text = []
        for number, line in enumerate(cells[start : start + 1024], start=start):
            padded = [cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=False)]
            head = "  ".join([*padded, ""])
            last = line[-1] if line else ""
            if terminal and number:  # the header's names stay whole too
                last = _cut(last, room - len(head))
            row = (head + last).rstrip()
            if number == 0 and color and terminal:
                row = f"\x1b[1m{row}\x1b[0m"
            text.append(row + "\n")
        sys.stdout.write("".join(text))


def _unpassworded(text: str) -> str:
    """``text`` with each URL's password and secret parameters as ``***`` (toolctl.urls,
    loaded only for a text that has an ``@`` or a ``://``: most never do, and `run` loads
    nothing it does not need)."""
    if "@" not in text and "://" not in text:
        return text
    from toolctl.urls import hide_passwords

    return hide_passwords(text)


def masked(value: Any, table: str = "") -> Any:
    """A descriptor or a --dry-run plan (JSON ``value``) as it is shown: every URL with its
    password and secret parameters as ``***``, and a secret written out in an ``env``,
    ``headers`` or ``config`` value or a command item (``secret_names.hide_written``) as
    ``***``, its scheme kept (``Bearer ***``): `show`, `list --json`, `run --dry-run`."""
    if isinstance(value, str):
        return _unpassworded(value)
    if isinstance(value, dict):
        if table in ("env", "headers", "config"):  # ``table``: the key this is the value of
            return {key: _masked_value(key, item) for key, item in value.items()}
        return {key: masked(item, key) for key, item in value.items()}
    if isinstance(value, list):
        items = [masked(item) for item in value]
        if table in ("argv", "command", "start"):  # `-e KEY=sk-...`, `--token ghp_...`
            from toolctl.secret_names import hide_written_args

            return hide_written_args(items)
        return items
    return value


def _masked_value(key: str, value: Any) -> Any:
    """One value of an ``env`` or ``headers`` table, named ``key``, as shown."""
    if not isinstance(value, str):
        return masked(value)
    from toolctl.secret_names import hide_written

    return _unpassworded(hide_written(key, value))


def one_line(text: str) -> str:
    """``text`` on one line, its control characters visible escapes (see _CONTROLS): a
    table cell, a field, a finding."""
    text = _unpassworded(" ".join(text.split("\n")))
    return text if text.isprintable() else text.translate(_CONTROLS)


def _cut(text: str, room: int) -> str:
    """``text`` in at most ``room`` characters, cut with … (just … when there is no room)."""
    if len(text) <= room:
        return text
    return text[: max(room, 1) - 1].rstrip() + "…"


def _screen_columns() -> int:
    import shutil

    return shutil.get_terminal_size().columns


MAX_MESSAGE = 2000
"""The most characters of one diagnostic line: a hostile input must not make a huge one."""


_INVISIBLE = (
    0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, *range(0x200B, 0x2010),
    0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2060, 0x2065), *range(0x2066, 0x206A),
    0x3164, 0xFEFF, 0xFFA0, *range(0xE0000, 0xE0080),
)  # fmt: skip
"""Characters that show nothing or reorder what follows (zero-width spaces and joiners,
soft hyphens, fillers, line and paragraph separators, bidirectional overrides and
isolates: "Trojan Source"; the TAG characters that hide text in a description for a model
to read, "ASCII smuggling"): a name holding one reads as another, an override reverses
the rest of the line."""
_CONTROLS = {
    **{
        code: f"\\x{code:02x}"
        for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
        if chr(code) not in "\n\t"
    },
    **{code: f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}" for code in _INVISIBLE},
}
"""Control characters as visible escapes: an ESC or BEL a name, a file or a server put in
a message must not recolour, retitle or clear the reader's terminal; an invisible or
reordering character is shown as its code."""


def _surrogates(code: int) -> str:
    """A character beyond the BMP as JSON writes it escaped: its UTF-16 surrogate pair."""
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


_JSON_INVISIBLE = {
    code: f"\\u{code:04x}" if code < 0x10000 else _surrogates(code) for code in _INVISIBLE
}
"""The same characters as JSON escapes: inside a JSON string the same text, shown."""
_HAS_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u2069\u3164\ufeff\uffa0\U000e0000-\U000e007f]"
)  # _INVISIBLE as ranges: a class of 180 single characters made a search 40 us a line


def bounded(message: str) -> str:
    """A diagnostic fit for a terminal: one line (a newline a name or a file put in it is
    ``\\n``, or it could forge a line of its own), cut past MAX_MESSAGE, lone surrogates
    and control characters escaped."""
    if len(message) > MAX_MESSAGE:
        message = f"{message[:MAX_MESSAGE]}… ({len(message) - MAX_MESSAGE:,} more characters)"
    if not message.isprintable():
        message = message.translate(_CONTROLS).replace("\n", "\\n")
    return _unpassworded(message).encode("utf-8", "backslashreplace").decode("utf-8")


def warn(message: str) -> None:
    _tell(f"{PROG}: warning: {bounded(relativise(message))}\n")


def note(message: str) -> None:
    _tell(f"{PROG}: {bounded(relativise(message))}\n")


def _tell(text: str, *, flush: bool = False) -> None:
    """Write a diagnostic to stderr. One that cannot be written (stderr a full disk, or a
    reader gone) is lost, never a failure of its own: it made every error exit 1, "the tool
    failed", and a success with a warning too (as gh and uv, the exit code is kept)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(text)
        if flush:
            sys.stderr.flush()


def outcome(document: Any, line: str | None, *, as_json: bool) -> None:
    """What a command did: its JSON ``document`` on stdout with --json, else its ``line``
    (if any) on stderr."""
    if as_json:
        print_json(document)
    elif line is not None:
        note(line)


def error(message: str, details: Sequence[str] = ()) -> None:
    for detail in details:
        _tell(f"  {bounded(relativise(detail))}\n")
    _tell(f"{PROG}: error: {bounded(relativise(message))}\n")


def flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Key/value lines for `show`: nested tables become dotted keys, empty values vanish."""
    lines: list[tuple[str, str]] = []
    for key, value in data.items():
        if value in (None, [], {}, ""):
            continue
        if isinstance(value, dict):
            lines += flatten(value, f"{prefix}{key}.")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            for item in value:
                lines.append(
                    (
                        f"{prefix}{key}",
                        ", ".join(
                            f"{k}={_scalar(v)}" for k, v in item.items() if v not in (None, "")
                        ),
                    )
                )
        else:
            lines.append((f"{prefix}{key}", _scalar(value)))
    return lines


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def print_fields(header: str, fields: Sequence[tuple[str, str]]) -> None:
    sys.stdout.write(one_line(header) + "\n")
    width = max((len(k) for k, _ in fields), default=0)
    for key, value in fields:
        sys.stdout.write(f"  {one_line(key).ljust(width)}  {one_line(str(value))}\n")


def write_stdout(text: str) -> None:
    """Stream a chunk of a tool's output as it arrives."""
    sys.stdout.write(text)
    sys.stdout.flush()


def log_event(event: dict[str, Any], *, as_json: bool) -> None:
    """The -v logger: one stderr line per call event, or JSON lines with TOOLCTL_LOG=json."""
    if as_json:
        _tell(json.dumps(event, sort_keys=True) + "\n", flush=True)
    else:
        fields = " ".join(f"{k}={v}" for k, v in event.items() if k != "event")
        _tell(f"{PROG}: {event['event']} {fields}\n", flush=True)


# -- waiting on a terminal ------------------------------------------------------------------


def write_stderr(text: str) -> None:
    """Pass a chunk of a tool's stderr through as it arrives."""
    _tell(text, flush=True)


class WaitSpinner:
    """A transient rich spinner on stderr while a wait lasts; ``stop()`` works from any thread.

    It shows only when enabled, and only once the wait passes ``delay`` seconds, so quick
    waits do not flicker; rich is imported in the spinner's own thread, off the fast path.
    """

    def __init__(self, message: str, *, enabled: bool, delay: float = 0.2) -> None:
        import threading

        self.message, self.delay = message, delay
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._live: Any = None
        self._thread = threading.Thread(target=self._show, daemon=True) if enabled else None

    def __enter__(self) -> WaitSpinner:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def stop(self) -> None:
        """Take the spinner off the screen (idempotent); call before writing to the terminal."""
        with self._lock:
            self._stopped.set()
            if self._live is not None:
                self._live.stop()
                self._live = None

    def _show(self) -> None:
        if self._stopped.wait(self.delay):
            return
        from rich.console import Console
        from rich.live import Live
        from rich.spinner import Spinner

        live = Live(
            Spinner("dots", text=self.message),
            console=Console(stderr=True),
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        with self._lock:
            if not self._stopped.is_set():
                live.start()
                self._live = live


PROGRESS = True
"""Whether progress may show at all: the entry point turns it off for a --json command."""

RUN_JSON: bool | None = None
"""`run` read its options: whether it prints JSON (None: it never got that far, and the
command line is all there is to go by: `run --user --json` gives "--json" as the user)."""


def showing_progress(color: bool) -> bool:
    """Progress (spinners, counters) only on a terminal's stderr, colour allowed, no --json."""
    return PROGRESS and fancy(sys.stderr, color)


def spinner(message: str, *, color: bool) -> WaitSpinner:
    """A WaitSpinner that shows only when ``showing_progress``."""
    return WaitSpinner(message, enabled=showing_progress(color))


class TerminalReporter:
    """The CLI's Reporter (``toolctl.reporting``): notes and warnings as ``toolctl:`` lines
    on stderr (paths below the working directory shortened), a spinner for a long wait."""

    def __init__(self, *, color: bool = True, notes: bool = True) -> None:
        self.color, self.notes = color, notes

    def note(self, message: str) -> None:
        if self.notes:  # off for --json: what a person reads, where a script reads stdout
            note(message)

    def warn(self, message: str) -> None:
        warn(message)

    def progress(self, message: str) -> WaitSpinner:
        return spinner(message, color=self.color)


def replay(lines: Iterable[tuple[bool, str]]) -> None:
    """Lines a use case left for people, in order: data to stdout, notes to stderr. What a
    config file or a server put in them (a name, a description) cannot drive the terminal:
    their control characters are visible escapes, as in every diagnostic."""
    for data, text in lines:
        write_stdout(_visible(text)) if data else note(text)


def _visible(text: str) -> str:
    """``text`` with its control and invisible characters as escapes (see _CONTROLS), its
    newlines and tabs kept, a lone surrogate escaped."""
    if not text.replace("\n", "").replace("\t", "").isprintable():
        text = text.translate(_CONTROLS)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def log_line(line: dict[str, Any]) -> None:
    """A server's log: one JSON line per call on stderr (never the arguments)."""
    import time

    stamped = {"ts": round(time.time(), 3), **line}
    _tell(json.dumps(stamped, sort_keys=True) + "\n", flush=True)


def timestamped(label: str) -> Any:
    """A worker's log: ``DATE TIME toolctl LABEL: message`` lines on stderr."""
    import time

    def log(message: str) -> None:  # one line, escaped: call ids and errors come off the wire
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        _tell(f"{stamp} {PROG} {bounded(label)}: {bounded(message)}\n", flush=True)

    return log


class TerminalSink(Sink):
    """The CLI's Sink (see ``toolctl.runners.base.Sink``): a call's output streamed to
    stdout, a child's stderr to ours, a spinner on a slow start, -v events on stderr.

    ``streamed`` records whether output went out as it arrived, so it is not printed twice.
    """

    stderr_fd: int | None = 2

    def __init__(
        self, settings: Any, *, show_output: bool, events: bool, answers: dict[str, str]
    ) -> None:
        self.settings = settings
        self.show_output = show_output
        self.events = events
        self.answers = answers
        self.streamed = False
        self.lost: OSError | None = None
        """Why streamed output could not be written (the reader went away, a full disk):
        the call is ended (``OutputGone``), and the command ends with that error's code."""

    def event(self, event: dict[str, Any]) -> None:
        if self.events:
            log_event(event, as_json=self.settings.log_json)

    def output(self, text: str) -> None:
        if self.show_output:
            self.streamed = True
            try:
                write_stdout(text)
            except (OSError, ValueError) as exc:  # called from the runner's reading thread
                from toolctl.errors import OutputLost, ReaderGone
                from toolctl.runners.base import OutputGone

                self.show_output = False
                self.lost = exc if isinstance(exc, OSError) else BrokenPipeError()
                if isinstance(self.lost, BrokenPipeError):  # as SIGPIPE ends `yes | head`
                    raise OutputGone(ReaderGone()) from exc
                raise OutputGone(OutputLost(f"cannot write: {self.lost.strerror}")) from exc

    def check_output(self) -> None:
        """ReaderGone (141) or OutputLost (74) when streamed output could not be written."""
        from toolctl.errors import OutputLost, ReaderGone

        if isinstance(self.lost, BrokenPipeError):
            raise ReaderGone()
        if self.lost is not None:
            raise OutputLost(f"cannot write: {self.lost.strerror or self.lost}")

    def stderr(self, text: str) -> None:
        write_stderr(text)

    def warning(self, message: str) -> None:
        warn(message)

    # what a server (or a tool) says while it works is told in toolctl's own lines: one
    # line each, its control characters visible (an ESC must not clear the terminal, set
    # its title or write the clipboard), as every diagnostic is
    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        super().progress(progress, total, None if message is None else bounded(message))

    def log(self, level: str, message: str) -> None:
        super().log(bounded(level), bounded(message))

    def waiting(self, message: str, delay: float = 0.2) -> WaitSpinner:
        # never beside --json (show_output off): what is on the terminal is the JSON alone
        enabled = self.show_output and showing_progress(self.settings.color)
        return WaitSpinner(message, enabled=enabled, delay=delay)
