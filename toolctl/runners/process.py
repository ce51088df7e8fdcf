"""Running a child process for a tool: streamed output, timeouts, Ctrl-C.

Shared by the local runner and the container runner (whose child is ``podman run``).
Never a shell: each argv item is substituted on its own (``toolctl.runners.argv``). The
child gets its own process group, so a timeout or Ctrl-C kills everything in it at once.
What a tool starts outside its group (``setsid``) is the reaper's
(``toolctl.processes.reaper``).
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import math
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from typing import IO, NamedTuple

from toolctl.descriptor_env import descriptor_cwd as descriptor_cwd
from toolctl.errors import (
    Interrupted,
    InvalidArguments,
    TimedOut,
    ToolctlError,
    TransportUnavailable,
    UsageError,
    interruption,
)
from toolctl.runners.base import OutputGone, ToolResult

STDERR_TAIL = 4000


class Completed(NamedTuple):
    """A finished child: its exit status, everything it printed, and whether we streamed it."""

    returncode: int
    stdout: str
    stderr_tail: str
    streamed: bool
    duration_ms: float
    dropped: int = 0
    """Bytes of stdout past the call's ``max_output``: streamed, if at all, never held."""

    def failure(self, reason: str, runtime: str) -> ToolResult:
        """The failed result of a child that exited non-zero, with what it printed; one a
        signal killed has 128 + its number as its exit code, as a shell says it (Python's
        -11 is no exit status anyone else writes)."""
        output = self.stdout.rstrip("\n")
        return ToolResult(
            False,
            output,
            None,
            reason,
            128 - self.returncode if self.returncode < 0 else self.returncode,
            self.duration_ms,
            runtime,
            self.dropped,
        )


def ended(returncode: int) -> str:
    """How a child ended, in words: ``exit status 3``, or ``killed by SIGSEGV``."""
    if returncode >= 0:
        return f"exit status {returncode}"
    import signal

    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


class _Reader(threading.Thread):
    """Drain one pipe; stream text unless it starts like JSON (which is parsed at the end).

    With ``sniff`` off every chunk is streamed as it comes (a stderr being teed). What is
    held is bounded: the first ``limit`` bytes (the rest is counted in ``dropped``), or
    with ``keep`` the last ``keep`` bytes. Streaming passes everything through.
    """

    def __init__(
        self,
        pipe: IO[bytes],
        stream: Callable[[str], None] | None,
        keep: int | None,
        *,
        sniff: bool = True,
        limit: int | None = None,
    ):
        super().__init__(daemon=True)
        self.pipe, self.stream, self.keep, self.sniff = pipe, stream, keep, sniff
        self.limit = limit
        self.held = bytearray()
        self.dropped = 0
        self.streamed = False
        self.gone: Exception | None = None
        """Set when ``stream`` could take no more (``OutputGone``): what the call ends with."""
        self.on_gone: Callable[[], None] = lambda: None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def run(self) -> None:
        mode: str | None = (None if self.sniff else "stream") if self.stream else "buffer"
        pending: list[str] = []
        descriptor = self.pipe.fileno()
        while chunk := os.read(descriptor, 65536):
            self._hold(chunk)
            if mode == "buffer":
                continue
            text = self._decoder.decode(chunk)
            if mode is None:
                pending.append(text)
                mode = _looks(("".join(pending)).lstrip(), len(pending) > 64)
                if mode == "stream":
                    self._emit("".join(pending))
                if mode is not None:
                    pending = []
                continue
            self._emit(text)
        tail = self._decoder.decode(b"", final=True)
        if mode == "stream" and tail:
            self._emit(tail)
        self.pipe.close()

    def _hold(self, chunk: bytes) -> None:
        if self.limit is not None:
            room = max(self.limit - len(self.held), 0)
            if room:
                self.held += chunk[:room]
            self.dropped += len(chunk) - min(room, len(chunk))
            return
        self.held += chunk
        if self.keep is not None and len(self.held) > 4 * self.keep + 65536:
            del self.held[: -self.keep]

    def _emit(self, text: str) -> None:
        assert self.stream is not None
        if self.gone is not None:
            return  # drained to the end, never written (the child was ended)
        try:
            self.stream(text)
        except OutputGone as gone:
            self.gone = gone.error
            self.on_gone()
        self.streamed = True

    @property
    def text(self) -> str:
        held = self.held if self.keep is None else self.held[-self.keep :]
        return held.decode("utf-8", "replace")


def _looks(start: str, enough: bool) -> str | None:
    """How output beginning with ``start`` (blanks stripped) is read: ``buffer`` when it
    starts like a JSON object or array, ``stream`` otherwise, None while too little has
    come to tell (``enough``: decide all the same). Two characters tell: `[INFO] ...` and
    `{name}` log lines are no JSON (they were held to the end, and cut at max_output even
    on a terminal), `[1,` and `{"` are."""
    if not start:
        return "stream" if enough else None
    if start[0] not in "{[":
        return "stream"
    after = start[1:].lstrip()
    if not after:
        return "buffer" if enough else None
    follows = '"}' if start[0] == "{" else ']{["-0123456789tfn'
    return "buffer" if after[0] in follows else "stream"


_cancelled_threads: set[int] = set()
"""Native ids of the threads whose call was cancelled from outside (``toolctl.calls.cancel``
kills the processes such a thread started). A child of one of them ends the call with
Interrupted, as Ctrl-C does, so the runner cleans up what lives beyond the child (the
container runner removes the container its killed ``podman run`` client leaves running)."""


def mark_cancelled(thread: int, cancelled: bool = True) -> None:
    """Mark (or, once its call is over, unmark) the call on native thread ``thread``."""
    if cancelled:
        _cancelled_threads.add(thread)
    else:
        _cancelled_threads.discard(thread)


def cancelled_here() -> bool:
    """Whether the call on this thread was cancelled from outside (``mark_cancelled``)."""
    return threading.get_native_id() in _cancelled_threads


class Children:
    """The children a runner has running, so that ``close`` can end them from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: set[subprocess.Popen[bytes]] = set()
        self.closed = False

    def add(self, child: subprocess.Popen[bytes]) -> bool:
        """Track ``child``; False (and nothing tracked) once the runner is closed."""
        with self._lock:
            if not self.closed:
                self._live.add(child)
            return not self.closed

    def discard(self, child: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._live.discard(child)

    def close(self) -> None:
        """Refuse new children and kill the process group of each one still running."""
        with self._lock:
            self.closed = True
            live, self._live = list(self._live), set()
        for child in live:
            _kill_group(child)


def _tagged(env: Mapping[str, str]) -> dict[str, str]:
    """The child's environment with its call's tag (``processes.reaper.call_tag``)."""
    from toolctl.processes.reaper import CALL_TAG, call_tag

    tag = call_tag()
    return {**env, CALL_TAG: tag} if tag is not None else dict(env)


def run_process(
    argv: list[str],
    *,
    stdin: bytes | None,
    env: Mapping[str, str],
    cwd: str | None,
    timeout: float,
    stream: Callable[[str], None] | None,
    stderr_fd: int | None = None,
    on_stderr: Callable[[str], None] | None = None,
    children: Children | None = None,
    max_output: int | None = None,
) -> Completed:
    """Run argv to completion in its own process group; bounded by ``timeout`` seconds.

    At most ``max_output`` bytes of stdout are held for the result (``dropped`` counts
    the rest); what is streamed passes through whole.

    With ``stderr_fd`` the child writes its stderr there itself; otherwise stderr is
    captured (its tail is ``stderr_tail``) and passed to ``on_stderr`` as it arrives.
    ``children`` tracks the child while it runs (a closed one refuses to start it).
    """
    started = time.perf_counter()
    stopped = children is not None and children.closed
    if stopped or threading.get_native_id() in _cancelled_threads:
        raise Interrupted(f"not starting '{argv[0]}': the call was stopped")
    try:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr_fd if stderr_fd is not None else subprocess.PIPE,
            cwd=cwd,
            env=_tagged(env),
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise TransportUnavailable(
            f"executable '{argv[0]}' not found", hint="install it or fix the tool's command"
        ) from exc
    except PermissionError as exc:
        import json
        import shlex

        raise TransportUnavailable(
            f"executable '{argv[0]}' is not executable",
            hint=f"chmod +x {shlex.quote(argv[0])}, or run it through its interpreter "
            f'(command = ["python3", {json.dumps(argv[0])}, ...])',
        ) from exc
    except OSError as exc:
        if exc.errno == errno.E2BIG:
            raise InvalidArguments(
                "the arguments make the command line (with the environment) longer than "
                "the system allows; send them as JSON on stdin instead"
            ) from None
        raise TransportUnavailable(f"cannot start '{argv[0]}': {exc.strerror}") from None
    except ValueError as exc:  # a NUL in the environment or cwd (never echoed: secrets)
        raise UsageError(f"cannot start '{argv[0]}': {_nul_reason(exc)}") from None
    if children is not None and not children.add(child):
        _kill_group(child)
        raise Interrupted(f"'{argv[0]}' was stopped: the call was stopped")
    try:
        return _complete(child, argv, stdin, timeout, stream, on_stderr, started, max_output)
    finally:
        if children is not None:
            children.discard(child)


ENDED_DRAIN = 0.25
"""Seconds a killed tool's pipes are read for what it wrote before it was ended. Not until
they close: a process it started in a session of its own holds them open, and it is killed
only once the call ends (``processes.reaper``), so a longer wait kept it alive as long."""


def _with_output(error: ToolctlError, out: _Reader) -> ToolctlError:
    """``error`` carrying what the tool printed before it was ended (``output``: `run
    --json` and the servers put it in the result), once the killed tool's pipe is read."""
    out.join(timeout=ENDED_DRAIN)
    error.output = out.text  # type: ignore[attr-defined]
    return error


def _complete(
    child: subprocess.Popen[bytes],
    argv: list[str],
    stdin: bytes | None,
    timeout: float,
    stream: Callable[[str], None] | None,
    on_stderr: Callable[[str], None] | None,
    started: float,
    max_output: int | None = None,
) -> Completed:
    assert child.stdout is not None
    out = _Reader(child.stdout, stream, keep=None, limit=max_output)
    out.on_gone = lambda: _signal_group(child, signal.SIGKILL)  # no wait: the caller's
    err = _Reader(child.stderr, on_stderr, STDERR_TAIL, sniff=False) if child.stderr else None
    for reader in (out, err):
        if reader:
            reader.start()
    if stdin is not None:
        threading.Thread(target=_feed, args=(child, stdin), daemon=True).start()
    try:
        returncode = _wait(child, timeout)
    except subprocess.TimeoutExpired as exc:
        _kill_group(child)
        late = TimedOut(f"'{argv[0]}' ran past its {timeout:g} s timeout and was killed")
        raise _with_output(late, out) from exc
    except KeyboardInterrupt as exc:
        _kill_group(child)
        stopped = interruption(exc, "interrupted; the tool's processes were killed")
        raise _with_output(stopped, out) from exc
    ended = threading.get_native_id() in _cancelled_threads  # killed from outside
    # one wait for both pipes: a process the tool left holding them (a helper it started)
    # delays the call by this once, not once per pipe
    drained = time.monotonic() + (ENDED_DRAIN if ended else 2)
    for reader in (out, err):
        if reader:
            reader.join(timeout=max(drained - time.monotonic(), 0))
    if out.gone is not None:  # the output could go nowhere: the tool was ended for it
        raise out.gone
    if threading.get_native_id() in _cancelled_threads:
        raise Interrupted(f"'{argv[0]}' was stopped: the call was cancelled")
    return Completed(
        returncode,
        out.text,
        err.text if err else "",
        out.streamed,
        round((time.perf_counter() - started) * 1000, 3),
        out.dropped,
    )


def _wait(child: subprocess.Popen[bytes], timeout: float) -> int:
    """``child.wait(timeout)``, woken by the child's exit rather than by polling.

    ``Popen.wait`` with a timeout sleeps 1, 2, 4 ... 50 ms between looks: a tool done in
    20 ms is noticed at 31 ms. A pidfd (Linux 5.3) becomes readable the moment the child
    exits; without one, Popen's own wait. Signals still interrupt (PEP 475 retries poll).
    """
    try:
        pidfd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        return child.wait(timeout=timeout)
    deadline = time.monotonic() + timeout
    try:
        exits = select.poll()
        exits.register(pidfd, select.POLLIN)
        while not exits.poll(_milliseconds_until(deadline)):
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(child.args, timeout)
    finally:
        os.close(pidfd)
    return child.wait()


def _milliseconds_until(deadline: float) -> int:
    """A timeout for ``poll``: whole ms, never negative (which would wait forever)."""
    return max(0, min(math.ceil((deadline - time.monotonic()) * 1000), 2**31 - 1))


def _nul_reason(exc: ValueError) -> str:
    return (
        "a value in its environment or working directory holds a NUL character"
        if "null" in str(exc)
        else "its environment or command line cannot be passed to the system"
    )


def _feed(child: subprocess.Popen[bytes], data: bytes) -> None:
    assert child.stdin is not None
    try:
        child.stdin.write(data)
        child.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the tool did not read its input; its exit status tells the story


def _signal_group(child: subprocess.Popen[bytes], number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, number)


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        child.kill()
    child.wait()
