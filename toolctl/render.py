"""Everything toolctl prints for people: tables, JSON, warnings and errors.

Data goes to stdout, diagnostics to stderr. On a terminal tables are drawn with rich; when
piped, or with NO_COLOR set, they are plain aligned text and rich is never imported.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

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
    """Shorten absolute paths below the working directory inside a message."""
    return message.replace(os.getcwd() + os.sep, "")


def to_json(data: Any) -> str:
    """Sorted, indented, byte-stable JSON."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)


def print_json(data: Any) -> None:
    sys.stdout.write(to_json(data) + "\n")


def print_json_line(data: Any) -> None:
    sys.stdout.write(json.dumps(data, sort_keys=True, ensure_ascii=False) + "\n")


def fancy(stream: TextIO, color: bool) -> bool:
    """Whether rich output (boxes, colour, spinners) suits this stream."""
    return color and stream.isatty()


def print_table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], *, color: bool, title: str | None = None
) -> None:
    if fancy(sys.stdout, color):
        from rich.console import Console
        from rich.table import Table

        table = Table(*columns, title=title, header_style="bold", title_justify="left")
        for row in rows:
            table.add_row(*row)
        Console().print(table)
        return
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    lines = [columns, *rows]
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=False)]
        sys.stdout.write("  ".join([*cells, line[-1]]).rstrip() + "\n")


def warn(message: str) -> None:
    sys.stderr.write(f"{PROG}: warning: {relativise(message)}\n")


def note(message: str) -> None:
    sys.stderr.write(f"{PROG}: {relativise(message)}\n")


def error(message: str, details: Sequence[str] = ()) -> None:
    for detail in details:
        sys.stderr.write(f"  {relativise(detail)}\n")
    sys.stderr.write(f"{PROG}: error: {relativise(message)}\n")


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
    sys.stdout.write(header + "\n")
    width = max((len(k) for k, _ in fields), default=0)
    for key, value in fields:
        sys.stdout.write(f"  {key.ljust(width)}  {value}\n")


def write_stdout(text: str) -> None:
    """Stream a chunk of a tool's output as it arrives."""
    sys.stdout.write(text)
    sys.stdout.flush()


def print_result(result: Any, *, as_json: bool, already_streamed: bool) -> None:
    """A ToolResult: the whole of it as JSON, or its output (unless streamed) and its error."""
    if as_json:
        print_json(result.to_json())
        return
    if not already_streamed and result.output:
        sys.stdout.write(result.output if result.output.endswith("\n") else result.output + "\n")
    if not result.success:
        error(f"the tool failed: {result.error or 'no reason given'}")


def event_sink(settings: Any) -> Any:
    """The -v logger: one stderr line per call event, or JSON lines with TOOLCTL_LOG=json."""

    def emit(event: dict[str, Any]) -> None:
        if settings.log_json:
            sys.stderr.write(json.dumps(event, sort_keys=True) + "\n")
        else:
            fields = " ".join(f"{k}={v}" for k, v in event.items() if k != "event")
            sys.stderr.write(f"{PROG}: {event['event']} {fields}\n")
        sys.stderr.flush()

    return emit


def open_lines(source: str) -> Any:
    """Lines of a --batch file, or of stdin for '-'."""
    if source == "-":
        return sys.stdin
    try:
        return open(source, encoding="utf-8")
    except OSError as exc:
        from toolctl.errors import UsageError

        raise UsageError(f"cannot read --batch file {source}: {exc.strerror}") from exc
