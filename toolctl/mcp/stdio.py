"""The stdio transport: an MCP server as a child process speaking newline-delimited JSON-RPC.

The child runs in its own session (so its own process group): closing the transport, or a
timeout, ends every process the server started. Its stderr is kept as a bounded tail for
error messages; stdout is read by one thread that routes answers to the waiting callers.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from toolctl.errors import Interrupted, TimedOut, TransportUnavailable, UsageError
from toolctl.mcp.wire import MAX_MESSAGE, LineSplitter, Message, ProtocolError, decode, encode

STDERR_TAIL = 8192
"""Bytes of the server's stderr kept for error messages (the rest is dropped as it comes)."""

Inbound = Callable[[Message], "Message | None"]


class _Slot:
    """Where the answer to one request lands."""

    __slots__ = ("abandoned", "answer", "done")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: Message | None = None
        self.abandoned = False


CLOSE_GRACE = 0.5
"""Seconds a server gets to exit once its stdin closed (a server exits on it at once; one
busy in a call does not), then SIGTERM, and SIGKILL TERM_GRACE s later. An MCP client
gives `toolctl mcp serve` 2 s after closing its stdin, then SIGTERM, then SIGKILL 2 s
later (the SDK's stdio_client): with 2 s and 1 s here, toolctl was killed while it
waited, and a busy upstream server was left running."""
TERM_GRACE = 0.5


class StdioTransport:
    """One running server; ``request`` may be called from several threads at once."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        inbound: Inbound,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        secrets: Iterable[str] = (),
        limit: int = MAX_MESSAGE,
        name: str | None = None,
    ) -> None:
        if not argv:
            raise TransportUnavailable("MCP server command is empty")
        self.name = name or Path(argv[0]).name
        self._program = str(argv[0])
        self._path = (os.environ if env is None else env).get("PATH", os.defpath)
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._inbound = inbound
        self._splitter = LineSplitter(limit)
        self._pending: dict[int | str, _Slot] = {}
        self._lock = threading.Lock()
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._closing = False
        self._failure: TransportUnavailable | None = None
        self._stderr = bytearray()
        try:
            self.process = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=None if env is None else dict(env),
                cwd=cwd,
                start_new_session=True,
                bufsize=0,
            )
        except FileNotFoundError as exc:
            raise TransportUnavailable(
                f"MCP server executable '{argv[0]}' not found", hint="install it or fix the command"
            ) from exc
        except (PermissionError, NotADirectoryError, OSError) as exc:
            raise TransportUnavailable(f"MCP server '{self.name}' cannot start: {exc}") from exc
        except ValueError:  # a NUL in the command, environment or cwd (never echoed: secrets)
            raise UsageError(
                f"MCP server '{self.name}' cannot start: its command, environment or cwd "
                "holds a NUL character"
            ) from None
        try:
            from toolctl.processes.reaper import keep

            keep(self.process.pid)  # open across calls: a sweep after one call must spare it
            self._err_thread = threading.Thread(target=self._read_stderr, daemon=True)
            self._out_thread = threading.Thread(target=self._read_stdout, daemon=True)
            self._in_thread = threading.Thread(target=self._send, daemon=True)
            self._err_thread.start()
            self._out_thread.start()
            self._in_thread.start()
        except BaseException:  # a signal before the caller holds the server: none can end it
            self._abort()
            raise

    def _abort(self) -> None:
        """End a server whose transport was never made: its tree killed, no sweep sparing it."""
        from toolctl.processes.reaper import release
        from toolctl.processes.stopping import process_tree, terminate_tree

        tree = process_tree(self.process.pid)
        self._signal_group(signal.SIGKILL)
        self.process.wait()
        tree.pop(self.process.pid, None)
        terminate_tree(tree)
        release(self.process.pid)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            with contextlib.suppress(OSError):
                if pipe:
                    pipe.close()

    @property
    def pid(self) -> int:
        return self.process.pid

    def request(self, message: Message, timeout: float) -> Message:
        """Send a request and wait for its answer; TimedOut after ``timeout`` seconds."""
        slot = _Slot()
        with self._lock:
            self._pending[message["id"]] = slot
        try:
            self._write(message)
            if not slot.done.wait(max(timeout, 0.0)):
                raise TimedOut(
                    f"MCP server '{self.name}' did not answer within {round(timeout, 1):g} s"
                )
        finally:
            with self._lock:
                self._pending.pop(message["id"], None)
        if slot.answer is None and slot.abandoned:
            raise Interrupted(f"the request to MCP server '{self.name}' was cancelled")
        if slot.answer is None:
            raise self._failed()
        return slot.answer

    def abandon(self, request_id: int | str) -> None:
        """Stop waiting for the answer to ``request_id`` (its caller went away and the
        server was told: under MCP a cancelled request gets no answer): ``request`` raises
        Interrupted at once."""
        with self._lock:
            slot = self._pending.get(request_id)
        if slot is not None and slot.answer is None:
            slot.abandoned = True
            slot.done.set()

    def notify(self, message: Message) -> None:
        self._write(message)

    def _write(self, message: Message) -> None:
        """Queue ``message`` for the server's stdin (``_send`` writes it): never blocks."""
        if self._failure is not None:
            raise self._failed()
        self._outbox.put(encode(message) + b"\n")

    def _send(self) -> None:
        """Write what ``_write`` queued, in order, on a thread of its own: a server that
        stops reading its stdin (hung, or busy with another call) blocks this thread alone.
        Written by its caller, a request over the pipe's 64 KiB blocked before its timeout
        began, and a cancellation told from a server's event loop stopped the loop."""
        stdin = self.process.stdin
        assert stdin is not None
        while (data := self._outbox.get()) is not None:
            view = memoryview(data)
            try:
                while view:
                    view = view[stdin.write(view) or 0 :]
            except (ValueError, OSError):  # the server went away, or close() closed it
                if not self._closing:
                    self._fail(self._exited())
                return

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        descriptor = self.process.stdout.fileno()
        try:
            for chunk in _written(descriptor, self.process.pid):
                for line in self._splitter.feed(chunk):
                    self._route(decode(line))
        except ProtocolError as error:
            self._fail(error)
            return
        except OSError:
            pass
        self._fail(self._exited())

    def _route(self, message: Message) -> None:
        if "method" not in message:
            with self._lock:
                slot = self._pending.get(message["id"])
            if slot is not None:  # an answer nobody waits for any more is dropped
                slot.answer = message
                slot.done.set()
            return
        reply = self._inbound(message)
        if reply is not None and "id" in message:
            with contextlib.suppress(TransportUnavailable):
                self._write(reply)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        descriptor = self.process.stderr.fileno()
        with contextlib.suppress(OSError):
            while chunk := os.read(descriptor, 65536):
                self._stderr += chunk
                if len(self._stderr) > STDERR_TAIL:
                    del self._stderr[: len(self._stderr) - STDERR_TAIL]

    def _exited(self) -> TransportUnavailable:
        try:
            code = self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return TransportUnavailable(f"MCP server '{self.name}' closed its stdout")
        return TransportUnavailable(f"MCP server '{self.name}' exited with code {code}")

    def _fail(self, error: TransportUnavailable) -> None:
        with self._lock:
            if self._failure is None:
                self._failure = error
            waiting = list(self._pending.values())
        for slot in waiting:
            slot.done.set()

    def _failed(self) -> TransportUnavailable:
        """The failure, with the tail of the server's stderr (secrets masked) appended."""
        failure = self._failure or TransportUnavailable(f"MCP server '{self.name}' went away")
        self._err_thread.join(timeout=0.5)
        tail = self.stderr_tail()
        if not tail:
            return failure
        lines = [" ".join(line.split()) for line in tail.strip().splitlines()]
        last = " | ".join([line for line in lines if line][-3:])[-400:]  # a rich log's padding
        hint = failure.hint or self._missing_module(tail)
        # one line: the tail's last lines (a traceback's exception) are quoted, not repeated
        return type(failure)(f"{failure.message}; its stderr ends: {last}", hint=hint)

    def _missing_module(self, tail: str) -> str | None:
        """What to do when a Python server died on an import: the Python that ran it (a
        `python3` on PATH is not the environment uv or pipx installed toolctl in) lacks a
        module, which the Python toolctl runs on may have."""
        import importlib.util
        import re
        import shutil

        missing = re.findall(r"ModuleNotFoundError: No module named '([^']+)'", tail)
        if not missing:
            return None
        module = missing[-1]
        found = shutil.which(self._program, path=self._path)
        which = f"'{self._program}'"
        if found and found != self._program:
            which += f" ({found})"
        if "This is mcp 2.x" in tail:  # the SDK's own word: the server is written for 1.x
            return (
                f"{which} has the MCP SDK 2.x and the server is written for 1.x: install "
                "'mcp<2' for that Python, or port the server to 2.x"
            )
        hint = f"{which} cannot import '{module}': install it for that Python"
        try:
            ours = importlib.util.find_spec(module.partition(".")[0]) is not None
        except (ImportError, ValueError):
            ours = False
        if ours and found != sys.executable:
            hint += f", or run the server with the Python toolctl runs on, {sys.executable}"
        return hint

    def stderr_tail(self) -> str:
        """The last bytes the server wrote to stderr, with the caller's secrets masked."""
        text = bytes(self._stderr).decode("utf-8", "replace")
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def close(self, grace: float = CLOSE_GRACE, tree: dict[int, int] | None = None) -> None:
        """End the server: close its stdin, wait ``grace`` s, then SIGTERM and SIGKILL the group
        (TERM_GRACE s apart), and every process found below the server first (a ``setsid``
        child left its group, and once the server is gone it is nobody's child any more)."""
        from toolctl.processes.stopping import process_tree, terminate_tree

        if tree is None:
            tree = process_tree(self.process.pid) if self.process.poll() is None else {}
        self._closing = True
        self._outbox.put(None)
        with contextlib.suppress(OSError, ValueError):
            if self.process.stdin:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self._signal_group(signal.SIGTERM)
            try:
                self.process.wait(timeout=TERM_GRACE)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.process.wait(timeout=5)
        # what the server left behind in its group (a helper it spawned) goes too
        self._signal_group(signal.SIGKILL)
        tree.pop(self.process.pid, None)
        terminate_tree(tree)
        from toolctl.processes.reaper import release

        release(self.process.pid)
        self._out_thread.join(timeout=1)
        self._err_thread.join(timeout=1)
        self._in_thread.join(timeout=1)
        for pipe in (self.process.stdout, self.process.stderr):
            with contextlib.suppress(OSError):
                if pipe:
                    pipe.close()

    def kill(self) -> None:
        """End the whole process tree now (a timeout, Ctrl-C): SIGTERM, then SIGKILL."""
        from toolctl.processes.stopping import process_tree

        tree = process_tree(self.process.pid) if self.process.poll() is None else {}
        self._signal_group(signal.SIGTERM)
        deadline = time.monotonic() + 0.5
        while self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        self.close(grace=0, tree=tree)

    def _signal_group(self, number: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, number)


def _written(descriptor: int, pid: int) -> Iterator[bytes]:
    """What the server ``pid`` writes to its stdout (``descriptor``), until it closes it or
    exits. A child of the server (npx's node, a shell's command, a helper) inherits that
    stdout and may hold it open after the server died: the pipe never ends, and a call
    would wait out its timeout. So the server's exit is watched too, through a pidfd,
    which never reaps it (a wait here would race the waits of ``close`` and ``kill``):
    once it exited, what it wrote before is read, and nothing waits for more."""
    try:
        exits = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3+, or gone already: till the pipe ends
        while chunk := os.read(descriptor, 65536):
            yield chunk
        return
    try:
        poller = select.poll()
        poller.register(descriptor, select.POLLIN)
        poller.register(exits, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if descriptor not in ready:  # the server exited: read what is left, then stop
                left = time.monotonic() + 1  # (a child that floods the pipe has no last byte)
                while select.select([descriptor], [], [], 0)[0] and time.monotonic() < left:
                    if not (chunk := os.read(descriptor, 65536)):
                        return
                    yield chunk
                return
            if not (chunk := os.read(descriptor, 65536)):
                return
            yield chunk
    finally:
        os.close(exits)
