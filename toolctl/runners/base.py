"""The one interface every runtime implements, and the one result every call returns.

A runner turns ``run(call)`` into a subprocess, an HTTP request, a container or a Pulsar
round trip, and translates that world's failures into toolctl's error tree in one place.
What it shows while it works goes to the call's Sink, never into shared state. Runners are
found by runtime name through the entry-point group ``toolctl.runners`` (see
``toolctl.runners``); the built-in four are registered there like any third-party one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from toolctl.arguments import DEFAULT_MAX_OUTPUT, printable_text
from toolctl.descriptor_env import expand_env as expand_env
from toolctl.descriptor_env import expand_env_map as expand_env_map

if TYPE_CHECKING:
    from concurrent.futures import Future

Event = dict[str, Any]
"""A call's start or done event: JSON-able, never the arguments."""
_RESULT_KEYS = frozenset({"success", "output", "data", "error"})


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
    """The runtime that ran the call (``local``, ``http``...): named ``transport`` on the
    wire and in every JSON output, as it always was; the code calls it the runtime."""
    truncated: int = 0
    """Bytes of the tool's output dropped past its ``max_output`` (0: none, and then the
    key is left out of ``to_json``, so untruncated results keep their shape)."""
    mcp: dict[str, Any] | None = None
    """The MCP ``tools/call`` result as the tool gave it (``content`` blocks, maybe
    ``structuredContent``): an MCP server's, or a tool's declaring ``output = "mcp"``.
    What the MCP doors answer with, as it is; left out of ``to_json`` when None."""
    error_code: str | None = None
    """What kind of failure, a stable word (``not_found``, ``timed_out``, ``invalid_arguments``,
    ``tool_failed``...; see toolctl.errors), where toolctl knows it; left out when None."""

    def finite(self) -> ToolResult:
        """This result with NaN and infinities in ``data`` as the strings ``"NaN"``,
        ``"Infinity"`` and ``"-Infinity"``: JSON has no such numbers, and every JSON toolctl
        writes (``run --json``, ``--batch``, REST, MCP) must parse anywhere."""
        mapped = finite_json(self.data)
        return self if mapped is self.data else self._replace(data=mapped)

    def to_json(self) -> dict[str, Any]:
        data = self._asdict()
        if not self.truncated:
            del data["truncated"]
        if self.mcp is None:
            del data["mcp"]
        if data["error_code"] is None:
            if self.success:
                del data["error_code"]
            else:  # the tool ran and failed (toolctl's own failures name theirs)
                data["error_code"] = "tool_failed"
            if data["exit_code"] is None:  # no process of its own (HTTP, Pulsar, MCP):
                data["exit_code"] = 0 if self.success else 1  # the code `run` exits with
        return data

    @classmethod
    def refused(cls, exc: Any, runtime: str = "") -> ToolResult:
        """The result that stands for a call toolctl could not make or finish: ``exc`` a
        ToolctlError; ``exit_code`` is the one `toolctl run` ends with."""
        return cls(
            False,
            output=str(getattr(exc, "output", "") or "").rstrip("\n"),  # printed before it ended
            error=str(exc),
            exit_code=exc.exit_code,
            duration_ms=getattr(exc, "duration_ms", 0.0),
            transport=runtime or getattr(exc, "runtime", ""),
            error_code=exc.error_code,
        )

    @classmethod
    def from_answer(
        cls, text: str, *, runtime: str, gateway: bool = False, **extra: Any
    ) -> ToolResult:
        """Read a tool's answer: ToolResult-shaped JSON is taken as the result itself, other
        JSON becomes ``data`` (with the text as ``output``), anything else is ``output``.

        ``gateway``: the answer of a gateway (tool_agent's router, `toolctl serve`'s
        /run_tool): a JSON object with a boolean ``success`` is the result, whatever else
        it holds (an ``error`` that is not text is shown as JSON), its ``exit_code`` and
        ``error_code`` kept where they agree with it (the duration and runtime are this
        call's)."""
        output = text[:-1] if text.endswith("\n") else text
        stripped = output.strip()
        if not stripped.startswith(("{", "[")):
            return cls(True, output, transport=runtime, **extra)
        try:
            parsed = finite_json(json.loads(stripped))
        except (ValueError, RecursionError):
            return cls(True, output, transport=runtime, **extra)
        answered = gateway and isinstance(parsed, dict) and isinstance(parsed.get("success"), bool)
        if answered:
            error = parsed.get("error")
            if error is not None and not isinstance(error, str):
                parsed = {**parsed, "error": json.dumps(error, ensure_ascii=False)}
            extra = {**_gateway_extra(parsed), **extra}
        if answered or _result_shaped(parsed):
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
                transport=runtime,
                **extra,
            )
        return cls(True, output, parsed, transport=runtime, **extra)


def _result_shaped(parsed: Any) -> bool:
    """A tool's JSON that is a result: only result keys, ``success`` true or false and
    ``error`` text, when given (``"success": "false"`` is no result: truthy text would
    read as success)."""
    return (
        isinstance(parsed, dict)
        and bool(parsed)
        and set(parsed) <= _RESULT_KEYS
        and isinstance(parsed.get("success", True), bool)
        and isinstance(parsed.get("error", ""), str | None)
    )


def _gateway_extra(parsed: dict[str, Any]) -> dict[str, Any]:
    """What a gateway's result says beyond the four result keys and toolctl keeps, where
    it agrees with ``success``: the tool's exit code (0 for a success, 1-255 for a failure)
    and, for a failure, its kind (a short word)."""
    kept: dict[str, Any] = {}
    success, code, kind = parsed["success"], parsed.get("exit_code"), parsed.get("error_code")
    if type(code) is int and (code == 0 if success else 0 < code <= 255):
        kept["exit_code"] = code
    if not success and isinstance(kind, str) and kind.isascii() and 0 < len(kind) <= 64:
        kept["error_code"] = kind
    return kept


NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
"""How a number JSON cannot carry is written: as protobuf's JSON mapping writes it."""


def finite_json(value: Any) -> Any:
    """``value`` itself when strict JSON holds it, else a copy with each NaN or infinity
    as a string (``NON_FINITE``) and each lone surrogate (``"\\ud800"`` parsed from an
    answer: no UTF-8 writer takes it, and `run --json`, `--batch` and the MCP doors died
    of it) as its ``\\udXXX`` escape. Too deep to walk: None, never an exception."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, TypeError):  # (UnicodeEncodeError is a ValueError)
        pass  # a non-finite number, or something only a third-party runner would put there
    except RecursionError:
        return None
    else:
        return value
    try:
        return _finite(value)
    except RecursionError:
        return None


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return NON_FINITE[repr(value)]
    if isinstance(value, str):
        return printable_text(value)
    if isinstance(value, dict):
        return {_finite(key): _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


class ToolSpec(NamedTuple):
    """A resolved tool: all its runner needs, so that no runner opens the registry: its
    descriptor, the service it runs through, and the files that define them."""

    name: str
    runtime: str
    data: Mapping[str, Any]
    service: Mapping[str, Any] | None
    source: Path
    """The file that defines the tool."""
    service_source: Path | None = None
    """The file that defines its service (None without one)."""

    @property
    def base_dir(self) -> Path:
        """The directory relative ``cwd`` values in the tool's descriptor are resolved against."""
        return self.source.parent

    @property
    def service_dir(self) -> Path:
        """The directory a relative ``cwd`` of its service is resolved against: that of the
        file defining the service (the tool's own when it has none)."""
        return (self.service_source or self.source).parent


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


class OutputGone(Exception):
    """Raised by ``Sink.output`` when the output can go nowhere any more (the reader of a
    pipe went away, a full disk): the runner ends the call, which then raises ``error``."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class Sink:
    """Where a call reports while it works; this base discards everything.

    The caller supplies one per call (the CLI's prints to the terminal, a server's logs);
    runners only ever call these methods, so no runner knows what a terminal is.
    """

    stderr_fd: int | None = None
    """A file descriptor a child process may write its stderr to directly (the CLI's
    own stderr), or None: the runner captures it and passes it to ``stderr()``."""

    def event(self, event: Event) -> None:
        """A ``start`` or ``done`` event of a call (never its arguments)."""

    def output(self, text: str) -> None:
        """A chunk of the tool's output as it arrives; the result still holds all of it.
        OutputGone when it can go nowhere any more: a runner that streams ends the call."""

    def stderr(self, text: str) -> None:
        """A chunk of a child's stderr as it arrives."""

    def warning(self, message: str) -> None:
        """Something the person running the call should know (a runtime registered twice)."""

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The tool's progress (an MCP server's notification, a ``toolctl:progress`` line);
        shown as a line of stderr unless the caller forwards it (an MCP door)."""
        of = f"/{total:g}" if total is not None else ""
        self.stderr(f"progress {progress:g}{of}" + (f" {message}" if message else "") + "\n")

    reports: bool = True
    """Whether progress and log messages reach anyone through this sink; a runner need not
    ask for them when not (Pulsar asks its worker for progress partials only then)."""

    answers: Mapping[str, str] = {}
    """Answers for an MCP server's elicitation (``run --elicit KEY=VALUE``)."""

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """An MCP server's request during the call (sampling, elicitation, roots), put to
        whoever made the call: its result, or None when there is nobody to ask (then the
        runner answers: declared elicitation answers, else a refusal). May raise
        ``toolctl.mcp.asks.Refused`` with the error the asker gave."""
        return None

    def log(self, level: str, message: str) -> None:
        """A log message of the tool (an MCP server's, a ``toolctl:log`` line); shown as a
        line of stderr unless the caller forwards it."""
        self.stderr(f"{level}: {message}\n")

    def waiting(self, message: str, delay: float = 0.2) -> WaitIndicator:
        """Shows that a slow start is under way (an image starting), once it has lasted
        ``delay`` seconds; stopped before output."""
        return NoWait()


class _Discarding(Sink):
    """The sink that takes nothing: no progress or log messages are asked for."""

    reports = False


NO_SINK: Sink = _Discarding()


class Call(NamedTuple):
    """One call as a runner sees it: what to run, with what, for how long, for whom, how
    many bytes of output its result may hold (``max_output``), and the W3C ``traceparent``
    of its span, which the runner passes on to the tool (an HTTP header, a Pulsar message
    property, MCP ``_meta``, ``TRACEPARENT`` in a process's environment)."""

    tool: ToolSpec
    arguments: dict[str, Any]
    timeout: float
    user: str
    sink: Sink = NO_SINK
    max_output: int = DEFAULT_MAX_OUTPUT
    traceparent: str | None = None


@runtime_checkable
class Runner(Protocol):
    """A runtime, as small as an httpx transport: ``run`` one call, ``close`` at the end.

    ``run`` returns the call's ToolResult (the tool failing is a result) and raises a
    ToolctlError when the tool cannot be reached, times out or is interrupted. ``close``
    releases what calls shared and ends every call still in flight (processes killed,
    containers removed); it may be called from another thread while calls run.
    """

    def run(self, call: Call) -> ToolResult: ...

    def close(self) -> None: ...


@runtime_checkable
class Described(Protocol):
    """A runner that can say what ``run`` would do, for ``--dry-run``."""

    def describe(self, call: Call) -> dict[str, Any]:
        """The resolved invocation (argv, image, URL, queue), secrets masked; runs nothing."""
        ...


@runtime_checkable
class Abandoning(Protocol):
    """A runner whose calls hold something outside this process's tree (a container, run
    by the engine's own processes): ``abandon`` ends it at once, quickly, as a second
    stopping signal ends the command (everything below toolctl is SIGKILLed next)."""

    def abandon(self) -> None: ...


@runtime_checkable
class Pipelined(Protocol):
    """A runner that keeps many calls in flight itself (Pulsar): ``--batch`` uses ``submit``."""

    def submit(self, call: Call) -> Future[ToolResult]:
        """Send one call and return at once; the Future resolves to its result (bounded)."""
        ...
