"""The one interface every runtime implements, and the one result every call returns.

A runner turns ``run(tool, arguments, context)`` into a subprocess, an HTTP request, a
container or a Pulsar round trip, and translates that world's failures into toolctl's
error tree in one place. Runners are found by runtime name through the entry-point group
``toolctl.runners``; the built-in four are registered there like any third-party one.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from toolctl.descriptor_env import expand_env as expand_env
from toolctl.descriptor_env import expand_env_map as expand_env_map
from toolctl.errors import TransportUnavailable, UsageError
from toolctl.settings import Settings

if TYPE_CHECKING:
    from concurrent.futures import Future

ENTRY_POINT_GROUP = "toolctl.runners"
_RESULT_KEYS = {"success", "output", "data", "error"}


class ToolResult(NamedTuple):
    """What a call produced: ``output`` is the text observation, ``data`` the parsed JSON.

    A NamedTuple, like ToolSpec, rather than a frozen dataclass: this module loads on every
    `toolctl run`, and a frozen dataclass costs several times as much to define.
    """

    success: bool
    output: str = ""
    data: Any = None
    error: str | None = None
    exit_code: int | None = None
    duration_ms: float = 0.0
    transport: str = ""

    def to_json(self) -> dict[str, Any]:
        return self._asdict()

    @classmethod
    def from_answer(cls, text: str, *, transport: str, **extra: Any) -> ToolResult:
        """Read a tool's answer: ToolResult-shaped JSON is taken as the result itself, other
        JSON becomes ``data`` (with the text as ``output``), anything else is ``output``."""
        output = text[:-1] if text.endswith("\n") else text
        stripped = output.strip()
        if not stripped.startswith(("{", "[")):
            return cls(True, output, transport=transport, **extra)
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return cls(True, output, transport=transport, **extra)
        if isinstance(parsed, dict) and parsed and set(parsed) <= _RESULT_KEYS:
            error = parsed.get("error")
            success = bool(parsed.get("success", not error))
            answer = parsed.get("output")
            return cls(
                success,
                answer
                if isinstance(answer, str)
                else ("" if answer is None else json.dumps(answer)),
                parsed.get("data"),
                None if error is None else str(error),
                transport=transport,
                **extra,
            )
        return cls(True, output, parsed, transport=transport, **extra)


class ToolSpec(NamedTuple):
    """A resolved tool: its descriptor, the service it runs through, where it was defined."""

    name: str
    runtime: str
    data: Mapping[str, Any]
    service: Mapping[str, Any] | None
    source: Path

    @property
    def base_dir(self) -> Path:
        """The directory relative ``cwd`` values in the descriptor are resolved against."""
        return self.source.parent


@dataclass
class RunContext:
    """How to run: the settings, the timeout, who is asking, where streamed output goes."""

    settings: Settings
    timeout: float
    user: str
    stream: Callable[[str], None] | None = None
    """Called with output as it arrives (subprocess stdout, Pulsar chunks); None buffers."""
    forward_stderr: bool = True
    """Let a subprocess write its stderr straight to ours (off in batch mode)."""
    streamed: bool = False
    """Set by a runner once it has sent output through ``stream``: the CLI must not repeat it."""
    stderr: Callable[[str], None] | None = None
    """Where a runner that captures a child's stderr passes it on as it arrives (None: keep it)."""
    wait: Callable[[str], WaitIndicator] | None = None
    """Shows that a slow start is under way (a spinner on a terminal); None shows nothing."""


class WaitIndicator(Protocol):
    """Something shown while waiting; ``stop()`` takes it down before output is written."""

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def stop(self) -> None: ...


class NoWait:
    """The indicator that shows nothing (batch runs, pipes, library callers)."""

    def __enter__(self) -> NoWait:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def stop(self) -> None:
        pass


@runtime_checkable
class Runner(Protocol):
    """A runtime: ``run`` performs one call, ``describe`` says what ``run`` would do."""

    def run(self, tool: ToolSpec, arguments: dict[str, Any], context: RunContext) -> ToolResult:
        """Call the tool once; failures of the tool are results, failures to reach it raise."""
        ...

    def describe(
        self, tool: ToolSpec, arguments: dict[str, Any], context: RunContext
    ) -> dict[str, Any]:
        """The resolved invocation for --dry-run (argv, image, URL, queue), secrets masked."""
        ...

    def close(self) -> None:
        """Release what calls shared (connections, clients)."""
        ...


@runtime_checkable
class Pipelined(Protocol):
    """A runner that keeps many calls in flight itself (Pulsar): ``--batch`` uses ``submit``."""

    def submit(
        self, tool: ToolSpec, arguments: dict[str, Any], context: RunContext
    ) -> Future[ToolResult]:
        """Send one call and return at once; the Future resolves to its result (bounded)."""
        ...


def load_runner(runtime: str, settings: Settings) -> Runner:
    """The runner registered for ``runtime`` under the ``toolctl.runners`` entry points."""
    import importlib

    target = _entry_points(settings).get(runtime)
    if target is None:
        installed = ", ".join(sorted(_entry_points(settings)))
        raise TransportUnavailable(
            f"no runner for runtime '{runtime}' (installed: {installed})",
            hint=f"install the package that registers '{runtime}' under {ENTRY_POINT_GROUP}",
        )
    module, _, attribute = target.partition(":")
    factory: Any = importlib.import_module(module)
    for part in attribute.split("."):
        factory = getattr(factory, part)
    runner = factory(settings)
    if not isinstance(runner, Runner):
        raise UsageError(f"runner for '{runtime}' ({target}) does not implement Runner")
    return runner


def _entry_points(settings: Settings) -> dict[str, str]:
    """Entry points of the group, cached against the mtimes of sys.path directories.

    ``importlib.metadata`` costs ~25 ms to import and scan, a fifth of a whole local run; a
    package install or removal changes its site directory's mtime and so the cache key.
    """
    # sys.path[0] is the script's directory or the working directory, not where
    # distributions live; keying on its mtime would miss the cache at every file change.
    key = [[entry, _mtime(entry)] for entry in sys.path[1:] if entry]
    cache = settings.cache_dir / "runners.json"
    try:
        cached = json.loads(cache.read_text())
        if cached["key"] == key:
            return dict(cached["runners"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from importlib.metadata import entry_points

    runners: dict[str, str] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        runners.setdefault(point.name, point.value)  # first registered name wins
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        temporary = cache.with_name(f".runners.{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"key": key, "runners": runners}))
        os.replace(temporary, cache)
    except OSError:
        pass
    return runners


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1
