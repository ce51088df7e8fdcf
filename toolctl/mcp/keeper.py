"""Kept sessions: one MCP server session held open in a background process that later
``toolctl run``s reuse over a loopback socket.

The keeper (``python -m toolctl.mcp.keeper``, started through ``processes.launching``) starts
the stdio server, finishes the handshake, reports ready and then relays: each connection
to ``127.0.0.1:PORT`` sends one JSON line ``{"token", "op": "list"|"call", ...}`` and reads
JSON lines back (``{"progress": ...}`` while a call runs, then ``{"result": ...}`` or
``{"error": ...}``). A random token, kept in a file only its owner can read, keeps other
local users out. A server that dies is restarted once (a timeout that ended it does not
count); when it dies again every caller is told so (exit 5) until ``service down``. A
session a run started (``keep_alive``) ends by itself after ``idle_timeout`` seconds
without a call; one ``service up`` started stays until ``service down``.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import select
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl.arguments import DEFAULT_TIMEOUT
from toolctl.errors import TimedOut, ToolctlError, TransportUnavailable
from toolctl.mcp.wire import ServerError

if TYPE_CHECKING:
    from toolctl.mcp.asks import Progress
    from toolctl.mcp.session import Session

SPEC_VARIABLE = "TOOLCTL_MCP_KEEP"
"""The keeper's instructions (JSON: argv with its ``${env:NAME}`` unexpanded, cwd, the names
of the secret variables, port, token file, ready file, connect timeout), passed in its
environment and removed before the server starts."""
MAX_LINE = 64 * 1024 * 1024


def new_token(path: Path) -> str:
    """A fresh token, written to ``path`` readable by its owner only."""
    token = secrets.token_hex(16)
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(token)
    return token


# -- the caller's side -----------------------------------------------------------------------


class KeptSession:
    """A Session-like handle on a kept session: ``list_tools`` and ``call_tool`` go over the
    loopback socket to the keeper, which holds the real one."""

    local = True
    """A stdio server: a timed-out call ends it (the keeper starts it again)."""
    tools_changed = False
    """Never set: each run opens its handle and lists the tools through the keeper."""

    def __init__(self, name: str, port: int, token: str) -> None:
        self.name, self.port, self.token = name, port, token

    def _exchange(
        self, request: dict[str, Any], timeout: float, on_line: Callable[[Any], None] | None = None
    ) -> Any:
        deadline = time.monotonic() + timeout
        try:
            connection = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        except OSError as exc:
            raise TransportUnavailable(
                f"kept session of MCP service '{self.name}' is not reachable: {exc}",
                hint=f"'toolctl service status {self.name}'; 'toolctl service up {self.name}'",
            ) from exc
        with connection, connection.makefile("rb") as reader:
            connection.sendall(json.dumps({**request, "token": self.token}).encode() + b"\n")
            while True:
                connection.settimeout(max(deadline - time.monotonic(), 0.001) + 5)
                try:
                    line = reader.readline(MAX_LINE)
                except TimeoutError as exc:
                    raise TimedOut(
                        f"kept session of MCP service '{self.name}' did not answer in time"
                    ) from exc
                if not line:
                    raise TransportUnavailable(
                        f"kept session of MCP service '{self.name}' closed the connection",
                        hint=f"see 'toolctl service status {self.name}' and its log",
                    )
                answer = json.loads(line)
                if "progress" in answer and on_line is not None:
                    on_line(answer["progress"])
                elif "result" in answer:
                    return answer["result"]
                elif "error" in answer:
                    raise _error(answer["error"])

    def list_tools(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = self._exchange({"op": "list", "timeout": timeout}, timeout)
        return tools

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        timeout: float,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        meta: Mapping[str, str] | None = None,
        on_log: Callable[[str, str], None] | None = None,
        on_request: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """As ``Session.call_tool``; the server's log messages and requests stay with the
        keeper (its requests are refused there)."""
        from toolctl.mcp.asks import Progress

        def progress(update: Any) -> None:
            if on_progress is not None:
                on_progress(Progress(*update))

        request = {
            "op": "call",
            "name": name,
            "arguments": dict(arguments),
            "timeout": timeout,
            "progress": on_progress is not None,
            "meta": dict(meta or {}),
        }
        result: dict[str, Any] = self._exchange(request, timeout, progress)
        return result

    def close(self) -> None:
        """Nothing to end: the session stays for the next run."""

    def kill(self) -> None:
        pass


def _error(data: Mapping[str, Any]) -> ToolctlError:
    kind, message = data.get("kind"), str(data.get("message", ""))
    if kind == "ServerError":
        return ServerError(
            str(data.get("method")), int(data.get("code", 0)), str(data.get("server_message"))
        )
    classes: dict[int, type[ToolctlError]] = {124: TimedOut, 5: TransportUnavailable}
    error = classes.get(int(data.get("exit_code", 5)), TransportUnavailable)(
        message, hint=data.get("hint")
    )
    if type(error) is TransportUnavailable and data.get("exit_code") not in (None, 5):
        error.exit_code = int(data["exit_code"])
    return error


def _error_json(error: ToolctlError) -> dict[str, Any]:
    data: dict[str, Any] = {
        "kind": type(error).__name__,
        "message": error.message,
        "hint": error.hint,
        "exit_code": error.exit_code,
    }
    if isinstance(error, ServerError):
        data |= {"method": error.method, "code": error.code, "server_message": error.server_message}
    return data


# -- the keeper ------------------------------------------------------------------------------


class Keeper:
    """Holds one stdio session; restarts its server once if it dies."""

    def __init__(self, spec: Mapping[str, Any], environ: Mapping[str, str]) -> None:
        self.spec = spec
        self.environ = dict(environ)
        self.secrets = [environ[key] for key in spec.get("secrets", []) if environ.get(key)]
        self.lock = threading.Lock()
        self.session: Session | None = None
        self.restarts = 0
        self.failure: ToolctlError | None = None
        self.expected_end = False
        self.busy = 0
        self.last_call = time.monotonic()

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """Around one caller's request: the idle clock starts again when the last one ends."""
        with self.lock:
            self.busy += 1
        try:
            yield
        finally:
            with self.lock:
                self.busy -= 1
                self.last_call = time.monotonic()

    def idle_watch(self, stop: threading.Event, idle: float) -> None:
        """End the kept session (``stop``) after ``idle`` seconds without a call."""
        while not stop.wait(min(idle / 4, 1.0)):
            with self.lock:
                quiet = self.busy == 0 and time.monotonic() - self.last_call >= idle
            if quiet:
                _log(f"no call for {idle:g} s: ending the kept session")
                stop.set()

    def start(self) -> None:
        from toolctl.descriptor_env import child_environment
        from toolctl.mcp.connect import connect_stdio

        argv = [_expanded(str(item), self.environ) for item in self.spec["argv"]]
        declared = {k: self.environ[k] for k in self.spec.get("env", []) if k in self.environ}
        self.session = connect_stdio(
            argv,
            env=child_environment(self.environ, declared, self.spec.get("pass_env", ())),
            cwd=self.spec.get("cwd"),
            secrets=self.secrets,
            timeout=float(self.spec.get("connect_timeout", 30)),
            name=self.spec.get("name"),  # the service, as errors name it (not its program)
        )
        _log(f"server started (pid {self._pid()})")

    def _pid(self) -> int:
        transport: Any = self.session.transport if self.session else None
        return int(getattr(transport, "pid", 0))

    def current(self) -> Session:
        """The live session; while the watcher restarts a dead server, wait for it."""
        deadline = time.monotonic() + float(self.spec.get("connect_timeout", 30)) + 1
        while True:
            with self.lock:
                if self.failure is not None:
                    raise self.failure
                assert self.session is not None
                process = getattr(self.session.transport, "process", None)
                if process is None or process.poll() is None or time.monotonic() > deadline:
                    return self.session
            time.sleep(0.05)

    def watch(self, stop: threading.Event) -> None:
        """Restart the server once when it dies; the second death ends the keeper."""
        while not stop.wait(0.2):
            session = self.session
            process = getattr(session.transport, "process", None) if session else None
            if process is None or process.poll() is None:
                continue
            with self.lock:
                if self.session is not session or stop.is_set():
                    continue  # (stopping: no restart, whose server would outlive the keeper)
                code = process.returncode
                if self.expected_end:  # a timeout ended it on purpose
                    self.expected_end = False
                elif self.restarts >= 1:
                    self.failure = TransportUnavailable(
                        f"MCP server of kept session '{self.spec['name']}' died again "
                        f"(status {code}) after a restart; the kept session ended",
                        hint=f"see its log ('toolctl service status {self.spec['name']}')",
                    )
                    _log(self.failure.message)
                    return  # stays up to tell every caller, until 'service down'

                else:
                    self.restarts += 1
                    _log(f"server exited with status {code}; restarting it once")
                try:
                    self.start()
                except ToolctlError as exc:
                    self.failure = exc
                    _log(f"restart failed: {exc}")
                    return

    def handle(self, request: Mapping[str, Any], send: Callable[[dict[str, Any]], None]) -> None:
        session = self.current()
        timeout = float(request.get("timeout", DEFAULT_TIMEOUT))
        if request.get("op") == "list":
            send({"result": session.list_tools(timeout)})
            return
        if request.get("op") != "call":
            raise TransportUnavailable(f"unknown request {request.get('op')!r}")

        def progress(update: Progress) -> None:
            send({"progress": list(update)})

        try:
            result = session.call_tool(
                str(request["name"]),
                request.get("arguments") or {},
                timeout,
                on_progress=progress if request.get("progress") else None,
                meta=_meta(request.get("meta")),
            )
        except TimedOut:
            with self.lock:
                self.expected_end = True
            raise
        send({"result": result})


@contextlib.contextmanager
def _cancelled_on_hangup(connection: socket.socket) -> Iterator[None]:
    """While the block runs, the caller hanging up (Ctrl-C of its `toolctl run`) cancels
    its call here as a cancel does in the caller's own process: the server is told
    (``notifications/cancelled``). It was never told, and ran the call to its end."""
    from toolctl.processes.cancelling import cancelled

    thread = threading.get_native_id()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            readable, _, _ = select.select([connection], [], [], 0.2)
            if not readable:
                continue
            try:
                data = connection.recv(1, socket.MSG_PEEK)
            except OSError:
                data = b""
            if not data:  # the caller went away
                if not done.is_set():
                    cancelled(thread)
                return
            done.wait(0.2)  # more than its one request line: nothing to do with it

    threading.Thread(target=watch, name="toolctl-keeper-hangup", daemon=True).start()
    try:
        yield
    finally:
        done.set()


def _meta(given: Any) -> dict[str, str] | None:
    """The ``_meta`` a caller asked to send (its traceparent): string values only."""
    if not isinstance(given, dict):
        return None
    return {str(k): v for k, v in given.items() if isinstance(v, str)} or None


def _expanded(item: str, environ: Mapping[str, str]) -> str:
    """A command item with its ``${env:NAME}`` filled in (the caller checked they are set)."""
    import re

    return re.sub(
        r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: environ.get(m.group(1), ""), item
    )


def _log(message: str) -> None:
    sys.stdout.write(f"{time.strftime('%H:%M:%S')} keeper: {message}\n")
    sys.stdout.flush()


def main() -> int:
    from toolctl.processes import report_failure, report_ready
    from toolctl.processes.lifetime import Lifetime
    from toolctl.processes.reaper import become_subreaper

    become_subreaper()  # what a server leaves in sessions of its own stays below the keeper
    spec = json.loads(os.environ[SPEC_VARIABLE])
    environ = {k: v for k, v in os.environ.items() if k != SPEC_VARIABLE}
    token = Path(spec["token_file"]).read_text().strip()
    ready = Path(spec["ready"])
    keeper = Keeper(spec, environ)
    try:
        keeper.start()
    except ToolctlError as exc:
        report_failure(ready, exc)
        return exc.exit_code
    stop = threading.Event()

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            write_lock = threading.Lock()

            def send(message: dict[str, Any]) -> None:
                data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
                with write_lock:
                    self.wfile.write(data)

            try:
                request = json.loads(self.rfile.readline(MAX_LINE))
                given = request.get("token") if isinstance(request, dict) else None
                if not isinstance(given, str) or not hmac.compare_digest(
                    given.encode(), token.encode()
                ):
                    return  # a stranger: say nothing (compared in constant time, as serve does)
                with keeper.serving(), _cancelled_on_hangup(self.connection):
                    keeper.handle(request, send)
            except ToolctlError as exc:
                with contextlib.suppress(OSError):
                    send({"error": _error_json(exc)})
            except (ValueError, OSError):
                pass

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    with Lifetime() as lifetime, Server(("127.0.0.1", int(spec["port"])), Handler) as server:
        lifetime.on_stop(lambda signum: stop.set())  # SIGTERM, SIGINT, SIGHUP, SIGQUIT
        threading.Thread(target=server.serve_forever, daemon=True).start()
        report_ready(ready)
        _log(f"serving on 127.0.0.1:{spec['port']}")
        watcher = threading.Thread(target=keeper.watch, args=(stop,), daemon=True)
        watcher.start()
        if spec.get("idle_timeout"):
            idle = float(spec["idle_timeout"])
            threading.Thread(target=keeper.idle_watch, args=(stop, idle), daemon=True).start()
        stop.wait()
        server.shutdown()
    with keeper.lock:  # a restart under way finishes first: its server is closed too
        if keeper.session is not None:
            keeper.session.close()
    from toolctl.processes.reaper import kill_descendants

    kill_descendants()  # what a dead server left (it is below the keeper, a subreaper)
    Path(spec["token_file"]).unlink(missing_ok=True)
    return 0 if keeper.failure is None else keeper.failure.exit_code


if __name__ == "__main__":
    sys.exit(main())
