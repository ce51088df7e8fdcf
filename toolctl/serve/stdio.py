"""`toolctl mcp serve`: the MCP door on stdin/stdout, a config and a server.

``StdioServer(config, reporter, log).run()`` serves until stdin closes (then returns) or
until a signal (``toolctl.processes.lifetime``): either way it stops reading, cancels the
calls in flight (their processes are killed, a container removed), waits for them to
clean up, and reaps what they left (a tool's ``setsid`` grandchildren), so nothing it
started outlives it. A signal then ends the command with 128 + its number (143 SIGTERM,
130 SIGINT), quietly: stdout is the protocol's. A second signal ends it at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolctl.reporting import Reporter
    from toolctl.serve.adaptive import AdaptiveConfig
    from toolctl.serve.catalog import Selection
    from toolctl.serve.dispatch import LogLine
    from toolctl.settings import Settings


@dataclass(frozen=True)
class StdioConfig:
    """What `toolctl mcp serve` serves and how many calls run at once."""

    settings: Settings
    selection: Selection
    concurrency: int = 8
    adaptive: AdaptiveConfig | None = None


class StdioServer:
    """Serves a StdioConfig over MCP on stdio (see the module docstring)."""

    def __init__(self, config: StdioConfig, reporter: Reporter, log: LogLine | None = None) -> None:
        self.config, self.reporter, self.log = config, reporter, log

    def run(self) -> None:
        import anyio

        from toolctl.errors import StopSignal
        from toolctl.processes.lifetime import Lifetime
        from toolctl.processes.reaper import kill_now
        from toolctl.records import write_all
        from toolctl.serve.adaptive import served_adaptive
        from toolctl.serve.front import open_front
        from toolctl.serve.mcp_server import ToolServer, serve_stdio

        config = self.config
        dispatcher = open_front(
            config.settings, self.reporter, config.selection, config.concurrency, log=self.log
        )
        tools = ToolServer(dispatcher, served_adaptive(dispatcher, config.adaptive, self.reporter))
        with Lifetime() as lifetime:
            lifetime.on_stop(lambda signum: dispatcher.caller.stop(StopSignal(signum)))
            lifetime.at_once(dispatcher.cancel_all)
            lifetime.at_once(dispatcher.caller.abandon)  # containers, before their clients go
            lifetime.at_once(lambda: kill_now(config.settings))  # setsid children too
            lifetime.at_once(lambda: write_all(self.reporter.warn))
            try:
                anyio.run(lambda: serve_stdio(tools, lifetime=lifetime))
            finally:
                dispatcher.close()
        lifetime.ended(quiet=True)
