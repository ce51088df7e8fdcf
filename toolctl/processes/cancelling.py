"""What else a cancelled call must undo, beyond the processes it started.

``toolctl.calls.cancel`` ends a call from another thread by killing the processes the
call's thread started. A call that started none (an MCP tool over HTTP, a shared session)
registers here what cancelling it means, for as long as it runs: ``on_cancel(undo)``
around the wait, on the call's own thread; ``cancelled(thread)`` runs it. An MCP session
uses it to tell the server (``notifications/cancelled``) and to stop routing the server's
requests to a call nobody waits for any more.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

_undo: dict[int, list[Callable[[], None]]] = {}
_lock = threading.Lock()


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


def cancelled(thread: int) -> None:
    """Run (and forget) what the call on native thread ``thread`` registered; an undo that
    fails is skipped, the others still run."""
    with _lock:
        undos = _undo.pop(thread, [])
    for undo in undos:
        with contextlib.suppress(Exception):
            undo()
