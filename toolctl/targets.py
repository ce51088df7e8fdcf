"""Files a user names for toolctl to write (`mcp install --config`, `graph learn --out`),
and to read (``input_file``: descriptors, foreign files to import).

Each is replaced atomically (a new file renamed over the old), so what stands at the path
is judged first: a symlink is written through (the file it points to is the one the user
keeps, in their dotfiles, say; replacing the link would leave it stale), and anything but
a regular file (``/dev/null``, a FIFO, a directory) is refused, never replaced: as root,
``--out /dev/null`` would otherwise put a plain file in place of the device."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from toolctl.errors import UsageError

P = TypeVar("P", str, Path)


def output_file(path: Path) -> Path:
    """Where writing ``path`` lands: the file at the end of its symlinks, which must be a
    regular file or not exist yet. UsageError for anything else."""
    target = Path(os.path.realpath(path))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise UsageError(f"cannot write {path}: it is {kind}", hint="name a file to write")
    return target


def input_file(path: Path, what: str = "file", *, regular: bool = False) -> Path:
    """``path``, a file to read; else a UsageError saying what stands there: nothing, a
    directory, or (``regular``: a file read more than once, a descriptor) a FIFO or a
    device."""
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a {what}", hint=f"name the {what}s in it")
    if not path.exists():
        raise UsageError(f"no such {what}: {path}")
    if regular and not path.is_file():
        raise UsageError(f"{path} is not a regular file: a {what} is read from one")
    return path


class NotUtf8(ValueError):
    """A file's first byte that is not UTF-8, by its line and column (in bytes)."""

    def __init__(self, byte: bytes, line: int, column: int) -> None:
        super().__init__(
            f"not UTF-8: byte 0x{byte.hex()} at line {line}, column {column}; save it as UTF-8"
        )
        self.line = line


def utf8_text(data: bytes) -> str:
    """A TOML file's text: UTF-8, a BOM (Windows editors write one) read past; NotUtf8
    naming the first byte that is not UTF-8."""
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        column = exc.start - (body.rfind(b"\n", 0, exc.start) + 1) + 1
        raise NotUtf8(body[exc.start : exc.start + 1], line, column) from None


def distinct(paths: Sequence[P]) -> list[P]:
    """Each path once by where it leads (``a.toml``, ``./a.toml``, a symlink to it), the
    first name given kept, in order: a file named twice is not a clash with itself."""
    kept: dict[str, P] = {}
    for path in paths:
        kept.setdefault(os.path.realpath(path), path)
    return list(kept.values())
