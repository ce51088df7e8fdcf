"""The use cases of `toolctl history` and `toolctl stats`: read the run history, summarise it.

Reading never creates or changes the history file: with no history yet, there are no calls.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from toolctl.errors import ToolctlError, UsageError
from toolctl.records import CALLERS, OUTCOMES
from toolctl.records.history import CallRecord, Filter, chosen_values, history_path
from toolctl.records.stats import Bin, ToolStats, histogram, ran, summarize
from toolctl.reporting import QUIET, Reporter

if TYPE_CHECKING:
    from toolctl.settings import Settings

_SPAN = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_when(text: str, option: str, now: float | None = None) -> float:
    """A point in time: ``30m``, ``2h``, ``7d``, ``1w`` ago, or an ISO date or date-time
    (local time unless it names its zone); UsageError naming ``option`` otherwise."""
    now = time.time() if now is None else now
    given = text.strip()
    span = _SPAN.match(given.lower())
    if span:
        return now - float(span.group(1)) * _SECONDS[span.group(2)]
    try:
        return datetime.fromisoformat(given).timestamp()
    except ValueError:
        raise UsageError(
            f"{option} {text!r}: expected a span ago (30m, 2h, 7d, 1w) or an ISO date "
            "(2026-11-25, 2026-11-25T14:00)"
        ) from None


def selection(
    tool: Sequence[str] | str | None,
    outcome: Sequence[str] | str | None,
    caller: Sequence[str] | str | None,
    session: Sequence[str] | str | None,
    since: str | None,
    until: str | None,
) -> Filter:
    """The Filter `history`'s and `stats`' options describe; a malformed time (an empty
    one too: ``--since "$SINCE"`` with SINCE unset is no filter at all otherwise), or a
    ``--since`` after the ``--until``, is a usage error (exit 2) naming its option."""
    start = None if since is None else parse_when(since, "--since")
    end = None if until is None else parse_when(until, "--until")
    if start is not None and end is not None and start > end:
        raise UsageError(f"--since {since!r} is after --until {until!r}: no call can match")
    tools, outcomes, callers, sessions = (
        chosen_values(c if c is None or isinstance(c, str) else tuple(c)) or None
        for c in (tool, outcome, caller, session)
    )
    return Filter(tools, outcomes, callers, sessions, start, end)


def check_filter(selected: Filter, db: sqlite3.Connection | None = None) -> Filter:
    """``selected``, or a UsageError for an outcome or caller that cannot exist: a caller
    is toolctl's own or one a program using the library named, found in history ``db``."""
    outcomes = sorted(set(OUTCOMES.values()))
    for outcome in chosen_values(selected.outcome):
        if outcome not in outcomes:
            raise UsageError(f"unknown outcome {outcome!r}: expected one of {', '.join(outcomes)}")
    for caller in chosen_values(selected.caller):
        if caller not in CALLERS and not _recorded_caller(db, caller):
            raise UsageError(
                f"unknown caller {caller!r}: expected one of {', '.join(CALLERS)} or one the "
                "history holds (a program's Origin)"
            )
    return selected


def _recorded_caller(db: sqlite3.Connection | None, caller: str) -> bool:
    if db is None:
        return False
    query = "SELECT 1 FROM calls WHERE caller = ? LIMIT 1"
    return db.execute(query, (caller,)).fetchone() is not None


@contextmanager
def reading(settings: Settings) -> Iterator[sqlite3.Connection | None]:
    """The history file, read-only, or None when there is none; a file that cannot be
    read is a ToolctlError naming it."""
    from toolctl.records.history import open_for_reading

    path = history_path(settings.state_dir)
    db = None
    try:
        db = open_for_reading(path)
        yield db
    except sqlite3.Error as exc:
        raise ToolctlError(
            f"cannot read the run history at {path}: {exc}",
            hint="move the file away to start a new history",
        ) from None
    finally:
        if db is not None:
            db.close()


def recent_calls(
    settings: Settings, selected: Filter, limit: int = 20, reporter: Reporter = QUIET
) -> list[CallRecord]:
    """The ``limit`` most recent calls of the selection, newest first; rows of the history
    skipped as odd are told to ``reporter``."""
    from toolctl.records.history import recent

    with reading(settings) as db:
        check_filter(selected, db)
        return [] if db is None else recent(db, selected, limit, reporter)


class StatsReport(NamedTuple):
    """Per-tool statistics and the latency histogram of the selected calls."""

    tools: list[ToolStats]
    bins: list[Bin]
    filtered_out: bool = False
    """No call selected, though the history holds some: the filters left them out."""

    @property
    def calls(self) -> int:
        return sum(tool.calls for tool in self.tools)

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "tools": [tool.to_json() for tool in self.tools],
            "histogram": [b.to_json() for b in self.bins],
        }


def tool_stats(settings: Settings, selected: Filter, reporter: Reporter = QUIET) -> StatsReport:
    """Statistics of the selected calls, by tool, with their latency histogram; rows of
    the history skipped as odd are told to ``reporter``."""
    from toolctl.records.history import any_call, outcomes

    with reading(settings) as db:
        check_filter(selected, db)
        rows = [] if db is None else list(outcomes(db, selected, reporter))
        filtered_out = not rows and selected != Filter() and db is not None and any_call(db)
    timed = (duration for _, outcome, duration, runtime in rows if ran(outcome, runtime))
    return StatsReport(summarize(rows), histogram(timed), filtered_out)
