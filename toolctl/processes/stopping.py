"""Stopping a background process and everything it started, never a stranger.

A launched process leads its own session and process group, and its children stay in
that group unless they leave it. ``stop`` checks, under the table's per-name lock, that
the recorded pid is still the process that was launched (its start time) before it
signals anything; then it signals the group and every descendant it finds below the
leader (SIGTERM, then SIGKILL after ``grace``), and waits until none of them runs.
"""

from __future__ import annotations

import os
import signal
import time
from contextlib import suppress
from dataclasses import dataclass, field

from toolctl.processes.table import (
    PROC,
    ProcessRecord,
    ProcessTable,
    State,
    is_alive,
    stat_of,
    state_of,
    tagged,
)
from toolctl.settings import Settings

KILL_WAIT = 3.0
"""Seconds to wait for SIGKILLed processes to be gone."""


@dataclass(frozen=True)
class Stopped:
    """What ``stop`` found and did. ``state`` is what the record's pid was when asked."""

    name: str
    record: ProcessRecord | None
    state: State | None
    """RUNNING: it was stopped; GONE or None: nothing ran; STALE: the pid was reused."""
    survivors: list[int] = field(default_factory=list)
    """Pids of its tree still running after SIGKILL (should be none)."""

    @property
    def stopped(self) -> bool:
        return self.state is State.RUNNING

    @property
    def stale(self) -> bool:
        return self.state is State.STALE


def stop(settings: Settings, name: str, grace: float = 5.0) -> Stopped:
    """Stop the recorded process ``name`` and its descendants; forget its record."""
    table = ProcessTable(settings)
    with table.lock(name):
        return stop_locked(table, name, grace)


def stop_locked(table: ProcessTable, name: str, grace: float) -> Stopped:
    """``stop`` for a caller that holds ``table.lock(name)`` already."""
    record = table.read(name)
    if record is None:
        return Stopped(name, None, None)
    state = state_of(record)
    survivors = []
    if state is State.RUNNING:
        # a server or worker of toolctl drains on SIGTERM: it alone gets it first, as its
        # calls' tools killed with it would be answered as failures of their own
        drains = record.kind in DRAINING
        wait = max(grace, record.drain or 0.0) if drains else grace  # its calls' answers
        survivors = terminate(record.pid, wait, record.tag, leader_first=drains)
    if state is not State.RUNNING and record.tag:  # its leader was killed: what it left
        survivors = terminate_tree(tagged(record.tag))
    table.remove(name)
    return Stopped(name, record, state, survivors)


DRAINING = frozenset({"serve", "worker"})
"""Kinds of background process that end their own calls on SIGTERM (``stop_locked``)."""


def terminate(
    leader: int, grace: float, tag: str | None = None, *, leader_first: bool = False
) -> list[int]:
    """SIGTERM the group led by ``leader`` and its descendants (and every process whose
    environment carries ``tag``), SIGKILL what remains. ``leader_first``: SIGTERM only the
    leader, and wait up to ``grace`` for it to end what it started, before the rest.

    Returns the pids still running at the end (none, unless something resists SIGKILL).
    """
    if leader_first:
        alone = {pid: start for pid, start in process_tree(leader).items() if pid == leader}
        with suppress(ProcessLookupError, PermissionError):
            os.kill(leader, signal.SIGTERM)
        if not _wait_gone(alone, grace):
            grace = min(grace, 1.0)  # what it left: the usual way, briefly
    tree = {**process_tree(leader), **(tagged(tag) if tag else {})}
    # the group at once (a process forked just now is in it), then each one we know of
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGTERM)
    # once each: a second SIGTERM would end a toolctl server at once instead of draining
    _signal_all(_outside_group(tree, leader), signal.SIGTERM)
    remaining = _wait_gone(tree, grace)
    if remaining:
        _signal_all(remaining, signal.SIGKILL)
    # whatever the group forked meanwhile is in the group too: kill until it is empty
    deadline = time.monotonic() + KILL_WAIT
    while True:
        remaining = _wait_gone({**remaining, **process_tree(leader)}, 0.05)
        if not remaining or time.monotonic() >= deadline:
            return sorted(remaining)
        _signal_all(remaining, signal.SIGKILL)


def terminate_tree(tree: dict[int, int]) -> list[int]:
    """SIGKILL each process of ``tree`` ({pid: start time}, as ``process_tree`` gives) that
    is still the one found, and wait for them; the pids still running at the end."""
    remaining = _wait_gone(tree, 0)
    if remaining:
        _signal_all(remaining, signal.SIGKILL)
        remaining = _wait_gone(remaining, KILL_WAIT)
    return sorted(remaining)


def process_tree(leader: int) -> dict[int, int]:
    """{pid: start time} of every live process in ``leader``'s group or below it.

    Without /proc (not Linux) that is the leader alone, and the group signal covers the rest.
    """
    if not PROC.is_dir():
        return {leader: 0} if is_alive(leader) else {}
    stats: dict[int, list[str]] = {}
    for entry in PROC.glob("[0-9]*"):
        fields = stat_of(entry)
        if fields is not None and fields[0] not in ("Z", "X"):
            stats[int(entry.name)] = fields
    members = {pid for pid, fields in stats.items() if int(fields[2]) == leader}
    members |= {leader} & stats.keys()
    frontier = set(members)
    while frontier:  # descendants that left the group (setsid) are still below the leader
        frontier = {p for p, f in stats.items() if int(f[1]) in frontier} - members
        members |= frontier
    return {pid: int(stats[pid][19]) for pid in members}


def _running(pid: int, start_time: int) -> bool:
    """Whether ``pid`` is still the process that started at ``start_time`` and not a zombie."""
    if not PROC.is_dir():
        return is_alive(pid)
    fields = stat_of(PROC / str(pid))
    return fields is not None and fields[0] not in ("Z", "X") and int(fields[19]) == start_time


def _outside_group(tree: dict[int, int], group: int) -> dict[int, int]:
    """The processes of ``tree`` that are not in process group ``group`` (gone ones left out)."""
    outside = {}
    for pid, start_time in tree.items():
        try:
            if os.getpgid(pid) != group:
                outside[pid] = start_time
        except ProcessLookupError:
            continue
    return outside


def _signal_all(tree: dict[int, int], signum: int) -> None:
    """Signal each process of ``tree`` that is still the one we found (a reused pid is spared)."""
    for pid, start_time in tree.items():
        if _running(pid, start_time):
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)


def _wait_gone(tree: dict[int, int], seconds: float) -> dict[int, int]:
    """Wait up to ``seconds`` for every process of ``tree`` to end; those still running."""
    deadline = time.monotonic() + seconds
    delay = 0.005
    while True:
        remaining = {p: t for p, t in tree.items() if _running(p, t)}
        if not remaining or time.monotonic() >= deadline:
            return remaining
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
