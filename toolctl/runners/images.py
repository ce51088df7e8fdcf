"""Whether a container engine holds an image locally: `check`'s ``ImageLookup``
(``toolctl.registry.runnable``), asked of the engine's local store only."""

from __future__ import annotations

import subprocess

from toolctl.errors import TransportUnavailable, UsageError
from toolctl.runners.container import (
    MISSING_IMAGE,
    REMOVE_TIMEOUT,
    ContainerRunner,
    Engine,
    engine_environment,
)
from toolctl.settings import Settings


class LocalImages:
    """Whether an engine holds an image locally: `check`'s ``ImageLookup``
    (``toolctl.registry.runnable``). ``<engine> image inspect`` reads the local store only,
    so nothing is pulled and no network is touched. No engine: None, and ``note`` says so.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.note: str | None = None
        self._runner = ContainerRunner(settings)
        self._engines: dict[str | None, Engine | None] = {}
        self._answers: dict[tuple[str, str], bool | None] = {}

    def __call__(self, image: str, engine: str | None) -> bool | None:
        if engine not in self._engines:
            try:
                self._engines[engine] = self._runner.engine_for({"engine": engine})
            except (TransportUnavailable, UsageError) as exc:
                self._engines[engine] = None
                self.note = f"container images not checked: {exc.message}"
        found = self._engines[engine]
        if found is None:
            return None
        if (found.path, image) not in self._answers:
            self._answers[(found.path, image)] = self._inspect(found, image)
        return self._answers[(found.path, image)]

    def _inspect(self, engine: Engine, image: str) -> bool | None:
        argv = [engine.path, "image", "inspect", "--format", "{{.Id}}", "--", image]
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                env=engine_environment(self.settings),
                timeout=REMOVE_TIMEOUT,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.note = f"container images not checked: {engine.kind} did not answer ({exc})"
            return None
        if done.returncode == 0:
            return True
        if any(marker in done.stderr for marker in MISSING_IMAGE):
            return False
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        self.note = f"container images not checked: {engine.kind} image inspect failed: {last}"
        return None
