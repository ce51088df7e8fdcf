"""Chat transcripts and the run history, both ways.

``import_transcripts`` (`toolctl history import FILE`): each conversation of an OpenAI chat
JSONL file (read by ``toolctl.transcripts``) becomes one session of calls, caller
``import``, runtime ``transcript``, in the order the assistant made them; its session is the
conversation's ``id``, else ``FILE:LINE``; importing the same conversation again replaces
the calls an import wrote for it (caller ``import``), never calls that ran in a session of
that name. A transcript has no times: the calls are stamped with the import's time, a
microsecond apart, in order. A call the transcript says failed is ``failed``; one with no
answer counts as ``ok``. Arguments are kept only when the history keeps them
(``--record-arguments`` or TOOLCTL_RECORD_ARGUMENTS=1), masked. A line that is not a
conversation refuses the whole file (exit 2, naming file:line): nothing is half-imported.

``history_transcripts``: the other way, the history's sessions as Transcripts, for what
learns from use (`graph learn`): one per session, calls in order; a call outside any
session is a transcript of its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from toolctl.errors import UsageError
from toolctl.records.history import CallRecord, Filter
from toolctl.reporting import QUIET, Reporter

if TYPE_CHECKING:
    from toolctl.settings import Settings
    from toolctl.transcripts import Transcript


class Imported(NamedTuple):
    """What an import wrote."""

    sessions: int
    calls: int

    def to_json(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "calls": self.calls}


def transcript_lines(file: Path) -> Iterator[str]:
    """The lines of a transcript file, or of stdin for "-", read as they are taken; an
    unreadable file, a line that is not UTF-8 (a tool name mangled into U+FFFD would be
    stored) or one over 64 MiB is exit 2."""
    import sys

    from toolctl.arguments import bounded_lines

    if str(file) == "-":
        return bounded_lines(sys.stdin.buffer, str(file))
    try:
        opened = file.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read {file}: {exc.strerror}") from exc
    return _lines_of(opened, str(file))


def _lines_of(opened: BinaryIO, origin: str) -> Iterator[str]:
    from toolctl.arguments import bounded_lines

    with opened:
        try:
            yield from bounded_lines(opened, origin)
        except OSError as exc:
            raise UsageError(f"cannot read {origin}: {exc.strerror}") from exc


def import_transcripts(settings: Settings, lines: Iterable[str], origin: str) -> Imported:
    """Read OpenAI chat JSONL ``lines`` (from ``origin``) into the history."""
    import sqlite3

    from toolctl.records import history
    from toolctl.transcripts import read_transcripts

    transcripts = list(read_transcripts(lines, origin))  # a bad line: UsageError, exit 2
    if not transcripts:
        raise UsageError(f"{origin}: no conversation in it")
    _check_keys(transcripts)
    rows = _rows(transcripts, settings, time.time())
    path = history.history_path(settings.state_dir)
    try:
        db = history.open_for_writing(path)
        try:
            # what an earlier import of these conversations wrote, never the calls that ran
            # in a session of the same name
            history.append(
                db,
                rows,
                max_calls=max(settings.records.max_calls, len(rows)),
                max_days=settings.records.max_days,
                replacing=sorted({_session(t) for t in transcripts}),
            )
        finally:
            db.close()
    except (sqlite3.Error, OSError) as exc:
        raise history.unusable(path, exc, "write") from None
    return Imported(len(transcripts), len(rows))


def _check_keys(transcripts: list[Transcript]) -> None:
    """UsageError (FILE:LINE) for what the history cannot hold or tell apart: a lone
    surrogate in a conversation's id, a tool's name or a call's id (SQLite stores UTF-8
    text), or one conversation id on two lines (their calls would merge into one session,
    inventing transitions no conversation has)."""
    from toolctl.arguments import is_text

    seen: dict[str, int] = {}
    for transcript in transcripts:
        texts = [transcript.id, *(t for c in transcript.calls for t in (c.tool, c.call_id))]
        if not all(is_text(text or "") for text in texts):
            raise UsageError(
                f"{transcript.where}: a conversation id, tool name or call id is not valid "
                "Unicode (a lone surrogate)"
            )
        if transcript.id is not None:
            first = seen.setdefault(transcript.id, transcript.line)
            if first != transcript.line:
                raise UsageError(
                    f"{transcript.where}: conversation id {transcript.id!r} is also on line "
                    f"{first}",
                    hint="give each conversation its own id; nothing was imported",
                )


def _session(transcript: Transcript) -> str:
    """A conversation's session: its id; else where it was read, with a digest of its calls,
    so a conversation imported again replaces its calls and another one at the same place
    (stdin again, a file of the same name elsewhere) is never taken for it."""
    if transcript.id:
        return transcript.id
    import hashlib

    calls = [(c.tool, dict(c.arguments), c.call_id) for c in transcript.calls]
    digest = hashlib.sha256(json.dumps(calls, sort_keys=True, default=str).encode())
    return f"{transcript.origin}:{transcript.line}#{digest.hexdigest()[:8]}"


def _rows(transcripts: list[Transcript], settings: Settings, now: float) -> list[CallRecord]:
    from toolctl.records.masking import mask_value, masked_start, secret_values
    from toolctl.records.recorder import MAX_STORED

    keep = settings.records.record_arguments
    rows: list[CallRecord] = []
    for transcript in transcripts:
        session = _session(transcript)  # once: it digests every call (8,000 calls: 30 s)
        for call in transcript.calls:
            failed = call.success is False
            arguments = json.dumps(dict(call.arguments), sort_keys=True)
            answer = call.answer or ""
            secrets = secret_values(dict(call.arguments)) if keep else set()
            rows.append(
                CallRecord(
                    now + len(rows) * 1e-6,
                    call.tool,
                    "transcript",
                    "import",
                    session,
                    "failed" if failed else "ok",
                    1 if failed else 0,
                    0.0,
                    len(arguments.encode()),
                    call_id=call.call_id,
                    error="tool_failed" if failed else None,
                    bytes_out=len(answer.encode()),
                    arguments=json.dumps(mask_value(dict(call.arguments), secrets), sort_keys=True)[
                        :MAX_STORED
                    ]
                    if keep
                    else None,
                    output=masked_start(answer, MAX_STORED, secrets)
                    if keep and call.answer is not None
                    else None,
                )
            )
    return rows


def history_transcripts(
    settings: Settings, selected: Filter | None = None, reporter: Reporter = QUIET
) -> Iterator[Transcript]:
    """The history's sessions (of the selection) as Transcripts, oldest session first;
    rows skipped as odd are told to ``reporter``."""
    from toolctl.records.history import by_session
    from toolctl.records.reports import reading
    from toolctl.transcripts import Call, Transcript

    with reading(settings) as db:
        rows = [] if db is None else by_session(db, selected or Filter(), reporter)
    sessions: dict[str, list[CallRecord]] = {}
    for row in rows:
        sessions.setdefault(row.session or f"call:{row.trace_id}:{row.span_id}", []).append(row)
    for number, (session, calls) in enumerate(
        sorted(sessions.items(), key=lambda item: item[1][0].time), start=1
    ):
        yield Transcript(
            "history",
            number,
            tuple(
                Call(c.tool, _arguments(c.arguments), c.call_id, "", _succeeded(c.outcome))
                for c in calls
            ),
            id=session,
        )


def _succeeded(outcome: str) -> bool | None:
    """A recorded call's success as learning weighs it: the tool's answer (ok), its failure
    (failed, or too slow: timeout); a call the tool never answered says nothing of it
    (unknown, as a call with no answer): a signal stopped it, its arguments were refused
    before it ran (an agent's bad call sank a good tool), its transport or pin failed."""
    if outcome == "ok":
        return True
    return False if outcome in ("failed", "timeout") else None


def _arguments(stored: str | None) -> dict[str, Any]:
    try:
        parsed = json.loads(stored) if stored else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
