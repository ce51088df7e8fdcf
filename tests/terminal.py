"""Run ``toolctl`` on a pseudo-terminal, as a person at a terminal would: stdin, stdout and
stderr a pty of a given size (or stdout sent to a file while stderr stays the terminal)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple


class Screen(NamedTuple):
    returncode: int
    text: str
    """Everything written to the terminal (stdout and stderr), escapes included."""


def run_on_terminal(
    *args: str,
    cwd: Path,
    columns: int = 80,
    env: Mapping[str, str] | None = None,
    stdout: Path | None = None,
    stdin: Path | None = None,
    timeout: float = 60,
) -> Screen:
    """``toolctl ARGS`` with a terminal of ``columns`` columns; NO_COLOR and COLUMNS unset
    unless ``env`` sets them. ``stdout``: a file for stdout instead of the terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    environment.update(TERM="xterm-256color", **(env or {}))
    out = open(stdout, "wb") if stdout is not None else None  # noqa: SIM115
    given = open(stdin, "rb") if stdin is not None else None  # noqa: SIM115
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "toolctl", *args],
            cwd=cwd,
            env=environment,
            stdin=given if given is not None else slave,
            stdout=out if out is not None else slave,
            stderr=slave,
            close_fds=True,
            start_new_session=True,
        )
    finally:
        os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                child.kill()
                raise AssertionError(f"toolctl {' '.join(args)} did not end in {timeout} s")
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: every writer is gone
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = child.wait(timeout=10)
    finally:
        os.close(master)
        for handle in (out, given):
            if handle is not None:
                handle.close()
    return Screen(code, b"".join(chunks).decode("utf-8", "replace"))


def plain(text: str) -> str:
    """``text`` without escape sequences and carriage returns: what the eye reads."""
    import re

    redrawn = text.replace("\r\x1b[K", "\n")  # a line drawn again: each drawing its own line
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", redrawn).replace("\r", "")
