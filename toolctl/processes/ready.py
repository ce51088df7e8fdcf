"""How a launched process says it is ready: it answers a probe, or it writes a ready file.

A toolctl process started in the background (``worker --detach``, later ``serve
--detach``) reports through its ready file as data: ``{"ok": true}`` once it serves, or
``{"ok": false, "error": ..., "hint": ..., "exit_code": N}`` when it cannot start, so the
parent repeats the child's own error and exit code without reading its log.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolctl.errors import ToolctlError


@dataclass(frozen=True)
class Healthy:
    """Ready once ``probe(url)`` is UP (``http://...`` GET 2xx, or ``tcp://...`` accepts)."""

    url: str


@dataclass(frozen=True)
class ReadyFile:
    """Ready once the process writes ``{"ok": true}`` to ``path``."""

    path: Path


Ready = Healthy | ReadyFile


class ReportedFailure(ToolctlError):
    """A launched process could not start, and said why in its ready file."""

    def __init__(self, message: str, *, exit_code: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.exit_code = exit_code


def report_ready(path: Path) -> None:
    """Child side: say that this process serves now."""
    _write(path, {"ok": True})


def report_failure(path: Path, error: ToolctlError) -> None:
    """Child side: say why this process cannot start (it then exits with the same code)."""
    _write(
        path,
        {"ok": False, "error": error.message, "hint": error.hint, "exit_code": error.exit_code},
    )


def read_report(path: Path) -> ReportedFailure | bool:
    """Parent side: False while nothing is written, True when ready, else the failure."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return False
    try:
        report = json.loads(text)
        if report["ok"] is True:
            return True
        code = report.get("exit_code")
        return ReportedFailure(
            str(report["error"]),
            exit_code=code if isinstance(code, int) and 0 < code < 256 else 1,
            hint=report.get("hint") if isinstance(report.get("hint"), str) else None,
        )
    except (ValueError, KeyError, TypeError):
        return ReportedFailure(f"unreadable ready file {path}: {text[:80]!r}", exit_code=1)


def _write(path: Path, report: dict[str, Any]) -> None:
    """Write whole or not at all: the parent polls the path."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(report, sort_keys=True))
    os.replace(temporary, path)
