"""The lifetime of a long-running command: what SIGTERM, SIGINT, SIGHUP and SIGQUIT do to it.

Every command that runs until it is stopped (``run``, ``serve``, ``mcp serve``,
``worker``, ``broker start`` in the foreground) holds one ``Lifetime`` while it works:

* the **first** of those signals stops it cleanly. The lifetime records which one, sets
  ``stopping`` and runs the ``on_stop`` callbacks (from the signal handler: they only flag
  or hand work to a loop, e.g. ``loop.call_soon_threadsafe``). A command that does its
  work in the main thread (``run``) asks for the signal ``raising``: it arrives there as
  ``StopSignal``, a KeyboardInterrupt, so the one Ctrl-C clean-up path ends whatever the
  call started. The command then stops taking work, drains or cancels what runs and
  kills every process it started;
* a **second** ends the process at once, exit 128 + its number, after the ``at_once``
  callbacks (quick ones: a SIGKILL, never a wait); the same signal again within
  ``SAME_STOP`` is the first one sent twice (``timeout -s INT`` signals the command and
  its process group), not a second;
* ``ended()`` then raises what the command ends with: nothing for a signal in ``clean``
  (a server or worker stopped by SIGTERM exits 0), else the Interrupted of that signal:
  130 SIGINT, 143 SIGTERM, 129 SIGHUP, 131 SIGQUIT.

Handlers are installed on entry and the previous ones put back on exit; off the main
thread (where Python allows no handler) the lifetime only waits.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

from toolctl.errors import StopSignal, stopped_by

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
"""What a terminal, a supervisor or a user sends to stop a command."""

SAME_STOP = 0.5
"""Seconds within which the same signal again is the same stop, not a second one: GNU
``timeout`` sends its signal to the command and then to its process group, and a
supervisor may signal a process and its group alike."""

_received: int | None = None


def received() -> int | None:
    """The stopping signal the command in force got, if any: how a client library's own
    "interrupted" (pulsar-client's, when the broker resets a connection) is told apart
    from one a signal caused."""
    return _received


class Lifetime:
    """The signal handling of one long-running command (see the module docstring)."""

    def __init__(self, *, raising: bool = False, clean: Iterable[int] = ()) -> None:
        self.raising = raising
        self.clean = frozenset(clean)
        self.signum: int | None = None
        self.stopping = threading.Event()
        self._on_stop: list[Callable[[int], object]] = []
        self._at_once: list[Callable[[], object]] = []
        self._ending = False  # a second signal's clean-up runs
        self._previous: dict[int, object] = {}
        self._first = 0.0  # when the first signal came (time.monotonic)

    def on_stop(self, callback: Callable[[int], object]) -> None:
        """Run ``callback(signum)`` when the first signal comes (at once if it came)."""
        self._on_stop.append(callback)
        if self.signum is not None:
            callback(self.signum)

    def at_once(self, callback: Callable[[], object]) -> None:
        """Run ``callback()`` just before a second signal ends the process."""
        self._at_once.append(callback)

    def __enter__(self) -> Lifetime:
        global _received
        _received = None
        if threading.current_thread() is threading.main_thread():
            self._previous = {number: signal.signal(number, self._handle) for number in SIGNALS}
        return self

    def __exit__(self, *exc_info: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        self._previous = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        global _received
        if self.signum is not None:
            if signum == self.signum and time.monotonic() - self._first < SAME_STOP:
                return  # one stop sent twice (`timeout -s INT`: the process, then its group)
            self._end_at_once(signum)
        self.signum = _received = signum
        self._first = time.monotonic()
        self.stopping.set()
        for callback in self._on_stop:
            callback(signum)
        if self.raising:
            raise StopSignal(signum)

    def _end_at_once(self, signum: int) -> None:
        if self._ending:  # a third signal while the second's clean-up runs: now, truly
            _end_now(signum, None)
        self._ending = True
        for callback in self._at_once:
            with contextlib.suppress(Exception):
                callback()
        _end_now(signum, None)

    def wait(self, poll: float = 0.5) -> int:
        """Block until the first signal; its number. (The timeout keeps the main thread
        running Python often enough for the handler to run promptly.)"""
        while not self.stopping.wait(poll):
            pass
        assert self.signum is not None
        return self.signum

    def ended(self, message: str | None = None, *, quiet: bool = False) -> None:
        """Raise what the command ends with after its clean stop (see the module docstring)."""
        if self.signum is not None and self.signum not in self.clean:
            raise stopped_by(self.signum, message, quiet=quiet)


def signals_end_at_once(last_words: Callable[[], str | None] | None = None) -> None:
    """From now on a stopping signal ends the process at once, exit 128 + its number, as a
    second one does under a Lifetime: for what a command does once its work is over
    (writing its records waits up to 30 s for another writer's lock), where Python's own
    handlers would print a traceback or die silently. ``last_words``: a line for stderr
    then (what is lost), or None."""
    if threading.current_thread() is not threading.main_thread():
        return
    handler = _end_now if last_words is None else functools.partial(_end_now, last_words)
    for number in SIGNALS:
        signal.signal(number, handler)


def _end_now(*args: Any) -> None:
    """What was printed flushed (and ``last_words``, when given first), then exit 128 +
    the signal's number at once: skips teardown that could hang (a Pulsar client's)."""
    *told, signum, _frame = args
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    words = told[0]() if told else None
    if words:
        with contextlib.suppress(OSError):
            os.write(2, words.encode("utf-8", "replace"))
    os._exit(128 + signum)
