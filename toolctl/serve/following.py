"""A server following announcements while it runs (`serve`, `mcp serve`).

A thread keeps a reader open on the announcements topic and hands what arrives to the
registry (``registry.announced.take``), which rewrites the announcements' directory; once
a second it looks again even when nothing arrived, so an announcement whose worker stopped
heart-beating expires on time. The catalog notices the directory change like any other
(``serve.catalog.fingerprint``) and the MCP server sends ``notifications/tools/list_changed``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from toolctl.settings import Settings

TICK_SECONDS = 1.0
RECHECK_SECONDS = 10.0
"""How often the follower decides again with nothing new (a registry file may now hold an
announced name); otherwise it does when something arrives or an announcement expires."""
RESYNC_SECONDS = 30.0
"""After this long with nothing arriving, a one-shot read checks that the topic is still
the one followed: a broker whose data was replaced under the same URL numbers its
messages from the start again, past the follower's position, and it would see none."""


class Following:
    """The thread; ``close`` stops it and closes its reader."""

    def __init__(self, settings: Settings, warn: Callable[[str], None]) -> None:
        self.settings, self.warn = settings, warn
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="announcements", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from toolctl.errors import ToolctlError
        from toolctl.pulsar.announcements import Follower
        from toolctl.registry.announced import next_expiry, position

        settings = self.settings
        assert settings.announced is not None
        told = False
        while not self._stop.is_set():
            try:
                follower = Follower(settings.announced, settings.announce_topic, position(settings))
            except ToolctlError as exc:
                if not told:
                    self.warn(f"announcements not followed: {exc}; trying again")
                    told = True
                self._take([], None)  # what was read before still expires
                self._stop.wait(TICK_SECONDS)
                continue
            told = False
            decided = 0.0
            heard = time.monotonic()
            try:
                while not self._stop.is_set():
                    received = follower.poll(TICK_SECONDS)
                    now = time.time()
                    if received:
                        heard = time.monotonic()
                    elif time.monotonic() - heard > RESYNC_SECONDS and follower.position:
                        heard = time.monotonic()
                        if self._replaced(follower.position):
                            break  # read from the new topic's start: follow from there
                    due = next_expiry(settings)
                    if (
                        received
                        or (due is not None and now >= due)
                        or now - decided > RECHECK_SECONDS
                    ):
                        self._take(received, follower.position)
                        decided = now
            except ToolctlError as exc:
                self.warn(f"announcements: {exc}; reading again")
            finally:
                follower.close()

    def _replaced(self, followed: str) -> bool:
        """Whether a one-shot read from ``followed`` finds messages the follower has not
        seen (the topic was replaced): then they are taken, and the position moves on."""
        from toolctl.errors import ToolctlError
        from toolctl.pulsar.announcements import READ_TIMEOUT, read

        settings = self.settings
        assert settings.announced is not None
        try:
            received, last = read(
                settings.announced, settings.announce_topic, followed, READ_TIMEOUT
            )
        except ToolctlError:
            return False  # the follower's own reading says what is wrong
        if received:
            self._take(received, last)
        return bool(received)

    def _take(self, received: list[Any], last: str | None) -> None:
        """``take`` what came; a failure of it (a bug: bodies are refused one by one, never
        raised) is one warning line, and the server goes on following the topic."""
        from toolctl.registry.announced import take

        try:
            take(self.settings, received, last)
        except Exception as exc:
            self.warn(f"announcements: not decided ({type(exc).__name__}: {exc}); going on")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
