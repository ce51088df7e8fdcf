"""Running a child process for a tool: argv templating, streamed output, timeouts, Ctrl-C.

Shared by the local runner and the container runner (whose child is ``podman run``).
Never a shell: each argv item is substituted on its own. The child gets its own process
group, so a timeout or Ctrl-C kills everything it started.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, NamedTuple

from toolctl.descriptor_env import descriptor_cwd as descriptor_cwd
from toolctl.errors import Interrupted, TimedOut, TransportUnavailable
from toolctl.runners.base import ToolResult

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_-]*)\}")
STDERR_TAIL = 4000


def render_argv(
    template: Sequence[str], arguments: Mapping[str, Any], declared: frozenset[str] = frozenset()
) -> list[str]:
    """Substitute ``{name}`` in each item on its own; never through a shell.

    An item that is exactly ``{name}`` for a declared argument left out is dropped; ``{{``
    and ``}}`` are literal braces; a placeholder naming no declared argument stays as is.
    """
    argv: list[str] = []
    for item in template:
        whole = _PLACEHOLDER.fullmatch(item)
        if whole and whole.group(1) in declared and arguments.get(whole.group(1)) is None:
            continue
        argv.append(_PLACEHOLDER.sub(lambda m: _fill(m, arguments, declared), item))
    return argv


def _fill(match: re.Match[str], arguments: Mapping[str, Any], declared: frozenset[str]) -> str:
    token = match.group(0)
    if token in ("{{", "}}"):
        return token[0]
    name = match.group(1)
    value = arguments.get(name)
    if value is None:
        return "" if name in declared or name in arguments else token
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


class Completed(NamedTuple):
    """A finished child: its exit status, everything it printed, and whether we streamed it."""

    returncode: int
    stdout: str
    stderr_tail: str
    streamed: bool
    duration_ms: float

    def failure(self, reason: str, transport: str) -> ToolResult:
        """The failed result of a child that exited non-zero, with what it printed."""
        output = self.stdout.rstrip("\n")
        return ToolResult(False, output, None, reason, self.returncode, self.duration_ms, transport)


class _Reader(threading.Thread):
    """Drain one pipe; stream text unless it starts like JSON (which is parsed at the end).

    With ``sniff`` off every chunk is streamed as it comes (a stderr being teed).
    """

    def __init__(
        self,
        pipe: IO[bytes],
        stream: Callable[[str], None] | None,
        keep: int | None,
        *,
        sniff: bool = True,
    ):
        super().__init__(daemon=True)
        self.pipe, self.stream, self.keep, self.sniff = pipe, stream, keep, sniff
        self.chunks: list[str] = []
        self.streamed = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def run(self) -> None:
        mode: str | None = (None if self.sniff else "stream") if self.stream else "buffer"
        descriptor = self.pipe.fileno()
        while chunk := os.read(descriptor, 65536):
            text = self._decoder.decode(chunk)
            self.chunks.append(text)
            if mode is None and text.strip():
                mode = "buffer" if text.lstrip()[:1] in "{[" else "stream"
                if mode == "stream":
                    self._emit("".join(self.chunks))
                continue
            if mode == "stream":
                self._emit(text)
            if self.keep is not None and len(self.chunks) > 64:
                self.chunks = ["".join(self.chunks)[-self.keep :]]
        tail = self._decoder.decode(b"", final=True)
        self.chunks.append(tail)
        if mode == "stream" and tail:
            self._emit(tail)
        self.pipe.close()

    def _emit(self, text: str) -> None:
        assert self.stream is not None
        self.stream(text)
        self.streamed = True

    @property
    def text(self) -> str:
        joined = "".join(self.chunks)
        return joined if self.keep is None else joined[-self.keep :]


def run_process(
    argv: list[str],
    *,
    stdin: bytes | None,
    env: Mapping[str, str],
    cwd: str | None,
    timeout: float,
    stream: Callable[[str], None] | None,
    forward_stderr: bool,
    on_timeout: Callable[[], None] | None = None,
    on_stderr: Callable[[str], None] | None = None,
) -> Completed:
    """Run argv to completion in its own process group; bounded by ``timeout`` seconds.

    With ``forward_stderr`` off, stderr is captured (its tail is ``stderr_tail``) and, when
    ``on_stderr`` is given, also passed to it chunk by chunk as it arrives.
    """
    started = time.perf_counter()
    try:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=None if forward_stderr else subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise TransportUnavailable(
            f"executable '{argv[0]}' not found", hint="install it or fix the tool's command"
        ) from exc
    except PermissionError as exc:
        raise TransportUnavailable(f"executable '{argv[0]}' is not executable") from exc
    assert child.stdout is not None
    out = _Reader(child.stdout, stream, keep=None)
    err = _Reader(child.stderr, on_stderr, STDERR_TAIL, sniff=False) if child.stderr else None
    for reader in (out, err):
        if reader:
            reader.start()
    if stdin is not None:
        threading.Thread(target=_feed, args=(child, stdin), daemon=True).start()
    try:
        returncode = child.wait(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        _kill_group(child)
        if on_timeout:
            on_timeout()
        raise TimedOut(f"'{argv[0]}' ran past its {timeout:g} s timeout and was killed") from exc
    except KeyboardInterrupt as exc:
        _kill_group(child)
        raise Interrupted("interrupted; the tool's processes were killed") from exc
    for reader in (out, err):
        if reader:
            reader.join(timeout=2)
    return Completed(
        returncode,
        out.text,
        err.text if err else "",
        out.streamed,
        round((time.perf_counter() - started) * 1000, 3),
    )


def _feed(child: subprocess.Popen[bytes], data: bytes) -> None:
    assert child.stdin is not None
    try:
        child.stdin.write(data)
        child.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the tool did not read its input; its exit status tells the story


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        child.kill()
    child.wait()
