"""Which calls were cancelled from outside, and what else cancelling each must undo.

``toolctl.calls.cancel`` ends a call from another thread: ``cancel(thread)`` marks the
call's native thread (a child the thread then starts or waits on ends the call with
Interrupted, as Ctrl-C does, so its runner cleans up what lives beyond the child: the
container runner removes the container its killed ``podman run`` client leaves), and runs
what the call registered with ``on_cancel(undo)`` for as long as it runs. A call that
starts no process uses that: an MCP session tells the server (``notifications/cancelled``)
and stops routing the server's requests to a call nobody waits for any more.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

_cancelled: set[int] = set()
_undo: dict[int, list[Callable[[], None]]] = {}
_lock = threading.Lock()


def is_cancelled(thread: int | None = None) -> bool:
    """Whether the call on native thread ``thread`` (default: this one) was cancelled."""
    return (threading.get_native_id() if thread is None else thread) in _cancelled


@contextlib.contextmanager
def on_cancel(undo: Callable[[], None]) -> Iterator[None]:
    """While the block runs, cancelling this thread's call runs ``undo`` (once)."""
    thread = threading.get_native_id()
    with _lock:
        _undo.setdefault(thread, []).append(undo)
    try:
        yield
    finally:
        with _lock:
            undos = _undo.get(thread, [])
            if undo in undos:
                undos.remove(undo)
            if not undos:
                _undo.pop(thread, None)


def cancel(thread: int) -> None:
    """Mark the call on native thread ``thread`` cancelled, then run (and forget) what it
    registered; an undo that fails is skipped, the others still run."""
    with _lock:
        _cancelled.add(thread)
        undos = _undo.pop(thread, [])
    for undo in undos:
        with contextlib.suppress(Exception):
            undo()


def forget(thread: int) -> None:
    """The call on ``thread`` is over: the thread's next call starts unmarked."""
    with _lock:
        _cancelled.discard(thread)
