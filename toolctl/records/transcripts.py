"""`toolctl history import FILE`: chat transcripts into the run history as sessions of calls.

Each conversation becomes one session (its ``id``, else ``FILE:LINE``) of calls with caller
``import`` and runtime ``transcript``, in the order the assistant made them; importing the
same conversation again replaces its calls, so an import can be repeated. A transcript has
no times: the calls are stamped with the import's time, a microsecond apart, in order.
Arguments and answers are kept only when the history keeps them (``--record-arguments``
or TOOLCTL_RECORD_ARGUMENTS=1), masked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from toolctl.errors import ToolctlError, UsageError
from toolctl.records.history import CallRecord

if TYPE_CHECKING:
    from toolctl.settings import Settings
    from toolctl.transcripts import Transcript


class Imported(NamedTuple):
    """What an import wrote, and the lines it skipped (file:line: reason)."""

    sessions: int
    calls: int
    skipped: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "calls": self.calls, "skipped": self.skipped}


def import_transcripts(settings: Settings, lines: Iterable[str], origin: str) -> Imported:
    """Read OpenAI chat JSONL ``lines`` (from ``origin``) into the history."""
    import sqlite3

    from toolctl.records import history
    from toolctl.transcripts import TranscriptError, read_transcripts

    problems: list[TranscriptError] = []
    transcripts = list(read_transcripts(lines, origin, errors=problems))
    skipped = [str(problem) for problem in problems]
    if not transcripts:
        raise UsageError(f"{origin}: no conversation in it", details=skipped[:5])
    rows = _rows(transcripts, settings, time.time())
    path = history.history_path(settings.state_dir)
    try:
        db = history.open_for_writing(path)
        try:
            sessions = sorted({t.id for t in transcripts})
            db.executemany("DELETE FROM calls WHERE session = ?", [(s,) for s in sessions])
            history.append(
                db,
                rows,
                max_calls=max(settings.records.max_calls, len(rows)),
                max_days=settings.records.max_days,
            )
        finally:
            db.close()
    except (sqlite3.Error, OSError) as exc:
        raise ToolctlError(f"cannot write the run history at {path}: {exc}") from None
    return Imported(len(transcripts), len(rows), skipped)


def _rows(transcripts: list[Transcript], settings: Settings, now: float) -> list[CallRecord]:
    from toolctl.records.masking import mask_text, mask_value

    keep = settings.records.record_arguments
    rows: list[CallRecord] = []
    for transcript in transcripts:
        for call in transcript.calls:
            stamp = now + len(rows) * 1e-6
            rows.append(
                CallRecord(
                    stamp,
                    call.name,
                    "transcript",
                    "import",
                    transcript.id,
                    "ok" if call.success else "failed",
                    0 if call.success else 1,
                    0.0,
                    len(json.dumps(call.arguments).encode()),
                    len((call.output or "").encode()),
                    call_id=call.call_id,
                    error=None if call.success else "tool_failed",
                    arguments=json.dumps(mask_value(call.arguments), sort_keys=True)
                    if keep
                    else None,
                    output=mask_text(call.output) if keep and call.output else None,
                )
            )
    return rows
