"""No process left behind: what the calls of this process started dies with them.

A tool may start processes in sessions of their own (``setsid``, ``nohup sh -c '... &'``),
out of reach of the process group its runner kills. So toolctl makes itself a *child
subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``): such an orphan is re-parented to toolctl
instead of init, and ``kill_descendants`` walks ``/proc`` (each task's ``children`` list, or
every ``/proc/PID/stat`` where that list is missing) for every process whose parent chain
leads to toolctl, kills it and reaps it. A cgroup per call would also do, but needs a
writable cgroup v2 tree, which machines running toolctl (containers, CI) mostly lack.

``Reaping`` counts the calls in flight (``toolctl.calls`` enters it around each call and
batch); when the last one ends, ``sweep`` kills what they left, sparing what ran before the
first of them and the background processes toolctl keeps on purpose (``ProcessTable``).
Loaded by every `toolctl run`: standard library only until something is left to kill.

That is in toolctl's own process (``OWN_PROCESS``: its command line and the servers it
runs). In a library host, an agent that imports toolctl, the host's own children are its
own: a sweep killed the processes it started during a call and took their exit statuses
(`Popen.wait()` said 0 for a command that failed). There only what carries a call's tag
(``CALL_TAG``) is killed, as the call ends, and reaped; and the process is a subreaper
only while calls are in flight, so the host's later orphans are init's as before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolctl.settings import Settings

PR_SET_CHILD_SUBREAPER = 36
_subreaper: bool | None = None
OWN_PROCESS = False
"""This process is toolctl's own (the entry point sets it while a command runs): what its
calls left may be swept whatever it is. Else a library host's (see the module docstring)."""


def become_subreaper() -> bool:
    """Make this process the one orphans of its descendants re-parent to (Linux)."""
    if not _subreaper:
        _set_subreaper(True)
    return bool(_subreaper)


def _set_subreaper(on: bool) -> None:
    """Set or clear the subreaper bit (a library host's is set only while calls run)."""
    global _subreaper
    _subreaper = False
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0:
            _subreaper = on


def descendants(root: int | None = None) -> dict[int, int]:
    """Every process below ``root`` (default: this one) and its parent, from /proc."""
    root = os.getpid() if root is None else root
    found: dict[int, int] = {}
    pending = [root]
    while pending:
        parent = pending.pop()
        kids = _children_of(parent)
        if kids is None:
            return _scan_descendants(root)
        for kid in kids:
            if kid not in found and kid != root:
                found[kid] = parent
                pending.append(kid)
    return found


def _children_of(pid: int) -> list[int] | None:
    """Children of every task of ``pid`` (None when the kernel has no ``children`` lists)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    kids: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as listing:
                kids += [int(word) for word in listing.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{task}"):
                continue  # the thread ended meanwhile
            return None
        except OSError:
            continue
    return kids


def _scan_descendants(root: int) -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
                parents[int(entry)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    found: dict[int, int] = {}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if pid not in found and (parent == root or parent in found):
                found[pid] = parent
                changed = True
    return found


def kill_descendants(spare: Callable[[], set[int]] = set, *, passes: int = 20) -> list[int]:
    """SIGKILL and reap every descendant but those in ``spare()`` (and their subtrees).

    ``spare`` is asked only when something is left (it may read files): the background
    processes toolctl starts on purpose, such as managed services. Killing a process can
    re-parent its own children to us, hence several passes. Returns the pids killed.
    """
    killed: list[int] = []
    spared: set[int] | None = None
    me = os.getpid()
    for _ in range(passes):
        found = descendants(me)
        if spared is None and found:
            spared = spare()
        doomed = [pid for pid in found if not _below(pid, found, spared or set())]
        _reap(me)
        if not doomed:
            break
        for pid in doomed:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        killed += [pid for pid in doomed if pid not in killed]
        time.sleep(0.01)
        _reap(me)
    return killed


def _below(pid: int, parents: Mapping[int, int], spared: set[int]) -> bool:
    """Whether ``pid`` is spared or lies below a spared process."""
    while pid in parents:
        if pid in spared:
            return True
        pid = parents[pid]
    return False


def _reap(me: int) -> None:
    """Collect the exit status of our children that have ended (re-parented orphans too)."""
    for kid in _children_of(me) or []:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(kid, os.WNOHANG)


# -- the calls in flight ------------------------------------------------------------------

_in_flight = 0
_swept = True
"""No call has run since the last sweep: nothing of the calls' doing can be left."""
_before: set[int] = set()
"""This process's descendants when the first call in flight began: not the calls' doing."""
_in_flight_lock = threading.Condition()
_sweeping = threading.Lock()
_kept: set[int] = set()
"""Processes a runner keeps open across calls on purpose (an MCP server's stdio session,
which a server's calls share): spared by sweeps until released."""


def keep(pid: int) -> None:
    """Spare ``pid`` (and what runs below it) from sweeps until ``release``."""
    with _in_flight_lock:
        _kept.add(pid)


def is_kept(pid: int) -> bool:
    """Whether ``pid`` is kept open across calls (see ``keep``)."""
    with _in_flight_lock:
        return pid in _kept


def release(pid: int) -> None:
    """Sweeps may kill ``pid`` again (its owner is ending it)."""
    with _in_flight_lock:
        _kept.discard(pid)


CALL_TAG = "TOOLCTL_CALL"
"""The variable each call's processes get (``call_tag``): what a call left in sessions of
its own still carries it, so it is found and killed as the call ends, while other calls
run (a busy server is never idle, and its sweep would never come)."""
_calls = threading.local()


def call_tag() -> str | None:
    """The tag of the call this thread makes (what ``run_process`` gives its child)."""
    tags: list[str] = getattr(_calls, "tags", [])
    return tags[-1] if tags else None


class Reaping:
    """Counts calls in flight; when the last one ends, kills what the calls left behind;
    when one ends while others run, kills what it left that carries its tag."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def __enter__(self) -> None:
        global _in_flight, _before, _swept
        self.own = OWN_PROCESS
        if self.own:
            become_subreaper()
        # a sweep under way (the last call before this one just ended) finishes first:
        # what this call starts is not a leftover of the calls before it
        with _sweeping, _in_flight_lock:
            if _in_flight == 0:
                _before = set(descendants())
                if not self.own:
                    _set_subreaper(True)
            _in_flight += 1
            _swept = False
        if not hasattr(_calls, "tags"):
            _calls.tags = []
        # the entering thread's: what it starts carries it (exited maybe on another thread)
        self._tags: list[str] = _calls.tags
        self._tag = os.urandom(8).hex()
        self._tags.append(self._tag)

    def __exit__(self, *exc_info: object) -> None:
        global _in_flight
        tag = self._tag
        if tag in self._tags:
            self._tags.remove(tag)
        with _in_flight_lock:
            _in_flight -= 1
            others = _in_flight > 0
            _in_flight_lock.notify_all()
        if not self.own:  # a library host: only what carries this call's tag
            kill_tagged_descendants(tag, self.settings)
            with _in_flight_lock:
                if _in_flight == 0:
                    _set_subreaper(False)
            return
        if others:
            kill_tagged_orphans(tag, self.settings)
        sweep(self.settings)


def kill_tagged_orphans(tag: str, settings: Settings) -> list[int]:
    """Kill what a call left re-parented to this process (in sessions of its own) that
    carries ``tag`` in its environment, with what runs below it; spares kept and
    background processes. One read of this process's children when nothing is left."""
    me = os.getpid()
    try:  # an orphan re-parents to the thread group's leader: its own list, one read
        with open(f"/proc/{me}/task/{me}/children", "rb") as listing:
            orphans = [int(word) for word in listing.read().split()]
    except OSError:
        return []
    if not orphans:
        return []
    marker = f"\0{CALL_TAG}={tag}\0".encode()
    with _in_flight_lock:
        spared = set(_kept) | set(_before)
    doomed = [pid for pid in orphans if pid not in spared and marker in _environ(pid)]
    if doomed:
        doomed = [pid for pid in doomed if pid not in _background_pids(settings)]
    killed = []
    for pid in doomed:
        for victim in [*descendants(pid), pid]:
            with contextlib.suppress(OSError):
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)
    if killed:
        time.sleep(0.01)
        _reap(me)
    return killed


def kill_tagged_descendants(tag: str, settings: Settings) -> list[int]:
    """In a library host: kill every process below this one that carries ``tag`` (with
    what runs below it), spared what is kept across calls and the background processes,
    and reap those re-parented to this process, only them: the host's own children and
    their exit statuses are its own."""
    me = os.getpid()
    found = descendants(me)
    if not found:
        return []
    marker = f"\0{CALL_TAG}={tag}\0".encode()
    with _in_flight_lock:
        spared = set(_kept)
    doomed = [pid for pid in found if not _below(pid, found, spared) and marker in _environ(pid)]
    if doomed:
        background = _background_pids(settings)
        doomed = [pid for pid in doomed if not _below(pid, found, background)]
    killed: list[int] = []
    for pid in doomed:
        for victim in [*descendants(pid), pid]:
            with contextlib.suppress(OSError):
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)
    mine = {pid for pid in killed if found.get(pid) == me}  # re-parented to us: ours to reap
    for _ in range(50 if mine else 0):  # SIGKILLed: gone within milliseconds
        time.sleep(0.01)
        for pid in list(mine):
            with contextlib.suppress(ChildProcessError, OSError):
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    continue
            mine.discard(pid)
        if not mine:
            break
    return killed


def _environ(pid: int) -> bytes:
    """``pid``'s environment, NUL first; read again for up to 50 ms while it is empty (a
    process in the middle of an exec shows none)."""
    for _ in range(10):
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                found = handle.read()
        except OSError:
            return b""
        if found:
            return b"\0" + found
        time.sleep(0.005)
    return b""


def wait_idle(timeout: float) -> bool:
    """Wait up to ``timeout`` seconds until no call is in flight; whether none is."""
    with _in_flight_lock:
        return _in_flight_lock.wait_for(lambda: _in_flight == 0, timeout)


def sweep(settings: Settings, *, force: bool = False) -> None:
    """Kill and reap what the calls left behind, unless a call is still in flight.

    Spared: whatever ran below this process before the first call in flight began (a
    test's fixtures, a server's own helpers), the processes a runner keeps open across
    calls (``keep``: an MCP server's session) and the background processes toolctl keeps
    on purpose (managed services started by a call). Only the first sweep after calls
    ran does anything: what a library user starts between calls is not the calls' doing.
    ``force`` sweeps even while a call is in flight (a server that stops has waited).
    One sweep at a time: a server that stops waits for the sweep its last call began.
    """
    global _swept
    if not OWN_PROCESS:  # a library host: each call killed what carries its tag
        return
    with _sweeping:
        with _in_flight_lock:
            if (_in_flight and not force) or _swept:
                return
            _swept = True
            before = set(_before)
        kill_descendants(lambda: before | set(_kept) | _background_pids(settings))


def kill_now(settings: Settings) -> None:
    """SIGKILL at once every process this one started but the background processes kept
    on purpose (and what ran before its first call): a second stopping signal ends the
    command at once, and what its calls started must not outlive it (a tool ignoring
    SIGTERM, a child in a session of its own, an MCP server's helpers)."""
    with contextlib.suppress(Exception):  # quick or nothing: the process ends next
        kill_descendants(lambda: set(_before) | _background_pids(settings))


def _background_pids(settings: Settings) -> set[int]:
    """The processes toolctl keeps running on purpose (managed services, broker, workers)."""
    from toolctl.errors import ToolctlError
    from toolctl.processes.table import ProcessTable

    try:
        return {record.pid for record in ProcessTable(settings).all()}
    except (OSError, ToolctlError):
        return set()
