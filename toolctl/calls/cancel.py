"""Cancelling one call from another thread: ``Caller.call(..., cancel=Cancel())``.

A server runs each call on a worker thread; when the client cancels it (an MCP
``notifications/cancelled``, a client gone, shutdown past its grace) ``cancel()`` kills
the processes that call started and the call raises Interrupted. Closing the runner would
end every call of that runtime; this ends one.

Every runner that starts a child does so from the calling thread, in a session of its
own, so the children of that thread (``/proc/self/task/TID/children``, Linux) are exactly
the call's process groups; a call that starts none undoes what it registered
(``processes.cancelling``: an MCP tool over HTTP tells its server). The thread is marked
cancelled too (``runners.process``), so its runner cleans up as after Ctrl-C: the
container runner removes the container, which killing the engine's client alone would
leave running. What a tool left in sessions of their own (``setsid``) is reaped with the
rest when the caller goes idle (see ``toolctl.calls``). A call that starts no process
undoes what it registered: an HTTP call's connection is shut down (it ends at once), an
MCP call is cancelled at its server; a Pulsar call is marked, and its thread ends when the
answer or the timeout comes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator

from toolctl.errors import Interrupted, ToolctlError
from toolctl.processes.cancelling import cancelled
from toolctl.processes.reaper import is_kept
from toolctl.runners.process import mark_cancelled

__all__ = ["Cancel", "kill_children"]


class Cancel:
    """A call's cancellation: ``cancel()`` marks it and kills the processes it started."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._thread: int | None = None
        self._lock = threading.RLock()  # a signal handler on the same thread may cancel too

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        """Mark the call cancelled and kill its processes (from any thread; idempotent)."""
        with self._lock:
            self._event.set()
            if self._thread is not None:
                mark_cancelled(self._thread)  # its runner cleans up as after Ctrl-C
                kill_children(self._thread)
                cancelled(self._thread)  # what a call without processes registered

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Around the call, on its thread: refuses to start once cancelled, and turns
        whatever the call ended with after a ``cancel()`` into Interrupted."""
        with self._lock:
            if self._event.is_set():
                raise Interrupted("cancelled before it started")
            self._thread = threading.get_native_id()
        try:
            yield
        except Interrupted as exc:
            if type(exc) is not Interrupted:  # a server's signal (terminated, hung up...)
                raise
            if self.cancelled:
                raise Interrupted("cancelled; the tool's processes were killed") from None
            raise
        except ToolctlError:
            if self.cancelled:
                raise Interrupted("cancelled; the tool's processes were killed") from None
            raise
        finally:
            with self._lock:
                mark_cancelled(threading.get_native_id(), False)
                self._thread = None
        if self.cancelled:
            raise Interrupted("cancelled; the tool's processes were killed")


def kill_children(thread: int) -> None:
    """SIGKILL the process group of every child the thread ``thread`` started but those
    kept open across calls (an MCP server's session, which other calls share: a call
    that started it on this thread before is not this call)."""
    try:
        with open(f"/proc/self/task/{thread}/children") as handle:
            children = [int(pid) for pid in handle.read().split()]
    except (OSError, ValueError):
        return
    for pid in children:
        if is_kept(pid):
            continue
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
