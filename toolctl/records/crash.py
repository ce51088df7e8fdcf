"""Crash reports: what an unexpected bug leaves instead of a traceback on the terminal
(the entry point prints one line naming the report)."""

from __future__ import annotations

import os
import tempfile
import time
import traceback

from toolctl.settings import Settings


def write_crash_report(args: list[str]) -> str:
    """Write the traceback of the exception being handled, with the command line, to a
    file of its own under the state directory (else a temporary file); returns its path."""
    text = f"toolctl {' '.join(args)}\n\n{traceback.format_exc()}"
    now = time.time()
    stamp = f"{time.strftime('%Y%m%d-%H%M%S', time.localtime(now))}.{int(now % 1 * 1e6):06d}"
    try:
        directory = Settings.load().state_dir / "crash"
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        for attempt in range(100):  # pid + microseconds are unique; "x" makes sure of it
            suffix = f"-{attempt}" if attempt else ""
            path = directory / f"crash-{stamp}-{os.getpid()}{suffix}.log"
            try:  # yours alone, as the run history is: the command line holds --arg values
                handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            with open(handle, "w", encoding="utf-8", errors="backslashreplace") as out:
                out.write(text)
            return str(path)
        raise FileExistsError(str(directory))
    except Exception:  # no state directory to be had (the settings are what crashed, say)
        handle, name = tempfile.mkstemp(prefix="toolctl-crash-", suffix=".log")
        with open(handle, "w", encoding="utf-8", errors="backslashreplace") as out:
            out.write(text)
        return name
