"""`toolctl serve`: the HTTP door, a config and a server as uvicorn builds them.

``HttpConfig`` is what the server needs (where it listens, what it lets in, what it
serves); ``HttpServer(config, reporter, log).run()`` serves until a signal. The process's
lifetime (``toolctl.processes.lifetime``), not uvicorn, owns the signals: the first stops
taking connections and gives the calls in flight ``grace`` seconds, then cancels what
still runs (its processes killed; the client gets 503), ends what is left (an idle event
stream), reaps what the calls left and returns: exit 0 for SIGTERM, 130, 129 and 131 for
SIGINT, SIGHUP and SIGQUIT. A second signal ends the process at once. ``start_detached``
runs the same server in the background.
"""

from __future__ import annotations

import errno
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from toolctl.serve.catalog import Selection

if TYPE_CHECKING:
    import asyncio

    import uvicorn

    from toolctl.processes import ProcessRecord
    from toolctl.processes.lifetime import Lifetime
    from toolctl.reporting import Reporter
    from toolctl.serve.adaptive import AdaptiveConfig
    from toolctl.serve.dispatch import Dispatcher, LogLine
    from toolctl.serve.gateway import GatewayOptions
    from toolctl.settings import Settings

MIN_TOKEN = 16
"""The shortest bearer token a server beyond loopback takes (16 hex digits: 64 bits)."""
CLEAN_UP = 10.0
"""Seconds past the grace that the cancelled calls get to clean up (a container removed,
a pipe a grandchild held drained) and answer, before what is left is ended."""


@dataclass(frozen=True)
class HttpConfig:
    """Everything `toolctl serve` needs: what it serves, where and for whom, how many calls."""

    settings: Settings
    selection: Selection
    options: GatewayOptions
    concurrency: int = 8
    queue: int = 64
    grace: float = 3.0
    ready_file: Path | None = None
    adaptive: AdaptiveConfig | None = None


def gateway_options(
    settings: Settings, host: str, port: int, token_env: str | None, origins: tuple[str, ...]
) -> GatewayOptions:
    """Where to listen and what to let in, the bearer token read from ``$token_env``;
    UsageError when the variable is empty, or when a non-loopback ``host`` has no token."""
    from toolctl.errors import UsageError
    from toolctl.serve.gateway import GatewayOptions, is_loopback

    token = None
    if token_env is not None:
        token = settings.environ.get(token_env, "")
        if not token:
            raise UsageError(f"--token-env {token_env}: the variable is not set or empty")
        if len(token) < MIN_TOKEN and not is_loopback(host):
            raise UsageError(
                f"--token-env {token_env}: a token of {len(token)} characters can be guessed "
                f"by whoever reaches {host!r}; give at least {MIN_TOKEN}",
                hint="make one with: openssl rand -hex 16",
            )
    elif not is_loopback(host):
        raise UsageError(
            f"binding {host!r} exposes the tools beyond this machine without a token",
            hint="pass --token-env NAME (a variable holding the bearer token), or bind 127.0.0.1",
        )
    return GatewayOptions(host, port, token, allow_origins=tuple(map(_origin, origins)))


def _origin(given: str) -> str:
    """An ``--allow-origin`` as a browser sends its ``Origin``: ``scheme://host[:port]``,
    lower case; UsageError for ``null`` (any sandboxed page or file sends it) or ``*``."""
    from urllib.parse import urlsplit

    from toolctl.errors import UsageError

    try:
        parts = urlsplit(given.strip())
        port = parts.port
    except ValueError:
        parts, port = urlsplit(""), None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise UsageError(
            f"--allow-origin {given!r}: not an origin (scheme://host[:port]); "
            "'null' and '*' would let any page in",
            hint="give the page's origin, as http://localhost:3000",
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


class HttpServer:
    """Serves an HttpConfig until a signal (see the module docstring)."""

    def __init__(self, config: HttpConfig, reporter: Reporter, log: LogLine | None = None) -> None:
        self.config, self.reporter, self.log = config, reporter, log

    def run(self) -> None:
        """Serve; a detached server reports why it could not start in its ready file."""
        from toolctl.errors import ToolctlError

        try:
            self._run()
        except ToolctlError as exc:
            if self.config.ready_file is not None:  # the one who started it reads this
                from toolctl.processes import report_failure

                report_failure(self.config.ready_file, exc)
            raise

    def _run(self) -> None:
        import asyncio

        from toolctl.errors import StopSignal
        from toolctl.processes.lifetime import Lifetime
        from toolctl.processes.reaper import kill_now
        from toolctl.records import write_all
        from toolctl.serve.front import open_front

        config = self.config
        listening = listen(config.options.host, config.options.port)
        dispatcher = open_front(
            config.settings,
            self.reporter,
            config.selection,
            config.concurrency,
            config.queue,
            log=self.log,
        )
        server = self._server(dispatcher)
        with Lifetime(clean={signal.SIGTERM}) as lifetime:
            lifetime.on_stop(lambda signum: dispatcher.caller.stop(StopSignal(signum)))
            lifetime.at_once(dispatcher.cancel_all)
            lifetime.at_once(dispatcher.caller.abandon)  # containers, before their clients go
            lifetime.at_once(lambda: kill_now(config.settings))  # setsid children too
            lifetime.at_once(lambda: write_all(self.reporter.warn))
            with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
                runner.run(self._serve(server, dispatcher, lifetime, listening))
        if not server.started:
            from toolctl.errors import TransportUnavailable

            raise TransportUnavailable(
                f"could not listen on {config.options.host}:{config.options.port}",
                hint="is the port taken?",
            )
        asked = lifetime.signum in (signal.SIGINT, signal.SIGTERM)
        if asked:  # stopped as asked (Ctrl-C, SIGTERM): said, as the broker and a worker do
            self.reporter.note("server stopped")
        lifetime.ended(quiet=asked)  # a hang-up or SIGQUIT: told as the error it is

    def _server(self, dispatcher: Dispatcher) -> uvicorn.Server:
        import uvicorn

        from toolctl.serve.adaptive import served_adaptive
        from toolctl.serve.gateway import build_app
        from toolctl.serve.mcp_server import ToolServer

        options = self.config.options
        adaptive = served_adaptive(dispatcher, self.config.adaptive, self.reporter)
        app = build_app(dispatcher, ToolServer(dispatcher, adaptive), options)
        return _uvicorn_server(
            uvicorn.Config(
                app,
                host=options.host,
                port=options.port,
                log_level="warning",
                log_config=None,  # its loggers keep the one-line handler (sdk_logs_as_lines)
                access_log=False,
                timeout_graceful_shutdown=int(self.config.grace + CLEAN_UP + 1),  # a backstop
                lifespan="on",
                http=http_protocol(),
                proxy_headers=False,  # nothing reads the client's address: no X-Forwarded-*
            )
        )

    async def _serve(
        self,
        server: uvicorn.Server,
        dispatcher: Dispatcher,
        lifetime: Lifetime,
        listening: socket.socket,
    ) -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        draining: list[asyncio.Task[None]] = []

        def stop() -> None:  # on the loop: take no more connections, then drain
            server.should_exit = True
            draining.append(loop.create_task(self._drain(server, dispatcher)))

        lifetime.on_stop(lambda _signum: loop.call_soon_threadsafe(stop))
        serving = asyncio.create_task(server.serve(sockets=[listening]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.01)
        if server.started:
            host, port = server.servers[0].sockets[0].getsockname()[:2]
            served = len(dispatcher.catalog.snapshot.tools)
            url = url_of(host, port)
            self.reporter.note(
                f"serving {served} tools at {url}, MCP at {url}/mcp; SIGTERM stops it"
            )
            if self.config.ready_file is not None:
                from toolctl.processes import report_ready

                report_ready(self.config.ready_file)
        await serving

    async def _drain(self, server: uvicorn.Server, dispatcher: Dispatcher) -> None:
        """The grace for the calls in flight; then cancel what still runs, let the cancelled
        calls answer, and end the requests left (an MCP client's idle event stream)."""
        import asyncio

        await asyncio.sleep(self.config.grace)
        dispatcher.cancel_all()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLEAN_UP
        while dispatcher.in_flight and loop.time() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)  # the last answers go out
        for task in list(server.server_state.tasks):
            task.cancel()


def listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound before anything starts: a taken port is one
    line and exit 5, not uvicorn's log."""
    from toolctl.errors import TransportUnavailable

    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as exc:
        taken = exc.errno == errno.EADDRINUSE
        raise TransportUnavailable(
            f"port {port} on {host} is taken"
            if taken
            else f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="pick another --port (or stop what holds it)" if taken else None,
        ) from None


def _uvicorn_server(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn's Server without its own signal handlers: the lifetime has them."""
    import contextlib
    from collections.abc import Iterator

    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server(config)


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (a dependency; it roughly halves the
    event loop's own cost per request), else None: asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def http_protocol() -> type[asyncio.Protocol] | Literal["h11"]:
    """uvicorn's httptools protocol (httptools, a dependency, is the C HTTP parser) with a
    response sent in one piece, when httptools imports; else h11."""
    try:
        from toolctl.serve.http_protocol import CoalescingHttpToolsProtocol
    except ImportError:
        return "h11"
    return CoalescingHttpToolsProtocol


def url_of(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def start_detached(
    settings: Settings,
    name: str,
    host: str,
    port: int,
    argv: Callable[[int], list[str]],
    grace: float = 3.0,
) -> tuple[ProcessRecord, bool]:
    """`serve --detach`: the same server in the background (``argv(port)``: its command
    line without --detach), recorded as ``name``; (its record, whether it started now).
    `service down` gives it its ``grace`` and the clean-up after it to drain."""
    import sys

    from toolctl.errors import UsageError
    from toolctl.names import name_problem
    from toolctl.processes import free_port
    from toolctl.processes.launching import check_origin, registry_origin
    from toolctl.processes.table import ProcessTable
    from toolctl.serve import detached

    problem = name_problem(name)  # its record's and log's file names, `service down NAME`
    if problem is not None:
        raise UsageError(f"--name {name!r}: {problem}")
    running = ProcessTable(settings).get(name)
    if running is not None:  # the same command line (any port, for --port 0) is kept
        check_origin(running, registry_origin(settings))
        same = [sys.executable, "-m", "toolctl", *argv(port or running.port or 0)]
        if running.argv[: len(same)] != same or running.argv[len(same) :][:1] != ["--ready-file"]:
            raise UsageError(
                f"serve '{name}' already runs at {running.url} with other options",
                hint=f"stop it (toolctl service down {name}), or give this one another --name",
            )
    port = port or free_port()
    command = [sys.executable, "-m", "toolctl", *argv(port)]
    drain = grace + CLEAN_UP + 1
    return detached.start_detached(settings, name, command, url_of(host, port), port, drain)
