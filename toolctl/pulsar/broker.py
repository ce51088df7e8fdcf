"""The embedded Pulsar broker for one machine: pulsar-lite, started, found and stopped.

pulsar-lite is a Pulsar-protocol broker binary from PyPI. It listens on 127.0.0.1 only,
keeps its data under ``$XDG_STATE_HOME/toolctl/broker`` (or ``--data``), logs to the state
directory's ``logs/broker.log``, and is launched and stopped through ``toolctl.processes``
as ``broker``, so ``broker status|stop`` and ``service status|down`` find it. Its metrics
endpoint (on 0.0.0.0:8080 by default) is switched off by an explicit config file.
``run_broker`` and ``broker_status`` are the work of `toolctl broker start|status`.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl.errors import ToolctlError, TransportUnavailable, UsageError
from toolctl.processes import (
    Health,
    Healthy,
    ProcessRecord,
    ProcessTable,
    StartFailed,
    Stopped,
    free_port,
    launch,
    probe,
    stop,
)
from toolctl.processes.table import is_alive
from toolctl.settings import Settings

if TYPE_CHECKING:
    from toolctl.reporting import Reporter

NAME = "broker"
KIND = "broker"
HOST = "127.0.0.1"
DEFAULT_PORT = 6650
START_TIMEOUT = 15.0
CONFIG = "[metrics]\nenabled = false\n"


@dataclass(frozen=True)
class BrokerLayout:
    """Where a broker listens and keeps its data."""

    port: int
    data_dir: Path
    port_given: bool = False
    """Whether the port was asked for (``--port``), and the data directory (``--data``)."""
    data_given: bool = False

    @property
    def url(self) -> str:
        return f"pulsar://{HOST}:{self.port}"

    @property
    def config(self) -> Path:
        return self.data_dir / "pulsar-lite.toml"

    @property
    def db(self) -> Path:
        return self.data_dir / "broker.db"


# -- the embedded broker -------------------------------------------------------------


def layout(settings: Settings, port: int | None = None, data: Path | None = None) -> BrokerLayout:
    """The broker's port and data directory: the options given, else the defaults."""
    port_given = port is not None
    directory = Path(os.path.expanduser(data)).absolute() if data else settings.state_dir / "broker"
    port = port or _loopback_port(settings.pulsar_url) or DEFAULT_PORT
    return BrokerLayout(port, directory, port_given=port_given, data_given=bool(data))


def _loopback_port(url: str) -> int | None:
    """The port of a Pulsar URL in force on this machine (--pulsar-url, TOOLCTL_PULSAR_URL,
    toolctl.toml), so the broker listens where `run` and `worker` will look for it."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    return port if parts.hostname in ("localhost", "127.0.0.1", "::1") else None


def binary() -> str:
    """The pulsar-lite executable that the pulsar-lite package ships."""
    try:
        from pulsar_lite.binary_finder import find_pulsar_lite_binary

        return str(find_pulsar_lite_binary())
    except (ImportError, OSError, RuntimeError) as exc:
        raise TransportUnavailable(
            f"the pulsar-lite broker binary is not available: {exc}",
            hint="install it with 'pip install pulsar-lite'",
        ) from exc


def argv(where: BrokerLayout) -> list[str]:
    return [
        binary(),
        "--config",
        str(where.config),
        "--addr",
        f"{HOST}:{where.port}",
        "--db-path",
        str(where.db),
        "--log-level",
        "warn",
    ]


def running(settings: Settings) -> ProcessRecord | None:
    """The broker toolctl started, if it still runs."""
    return ProcessTable(settings).get(NAME)


def start(settings: Settings, where: BrokerLayout) -> tuple[ProcessRecord, bool]:
    """Start the broker in the background unless one runs; (its record, whether we started it).

    Returns once it accepts connections; TransportUnavailable if it cannot start (its port
    is taken, its data directory is in use by another broker, it exits).
    """
    record = running(settings)
    if record is not None:
        _same_broker(record, where)
        return record, False
    require_free_port(where.port)
    from toolctl.arguments import is_text, printable_os

    if not is_text(str(where.data_dir)):  # pulsar-lite reads its config as UTF-8 text
        raise UsageError(
            f"the broker data directory {printable_os(str(where.data_dir))} is not a UTF-8 path",
            hint="pass another with --data DIR",
        )
    try:
        where.data_dir.mkdir(parents=True, exist_ok=True)
        where.config.write_text(CONFIG)
    except OSError as exc:  # a file where the directory goes, a read-only place
        if not where.data_given:  # the state directory's: told as every use of it is
            raise
        filed = isinstance(exc, (FileExistsError, NotADirectoryError))
        raise UsageError(
            f"cannot use {printable_os(str(where.data_dir))} as the broker's data directory: "
            + ("a file is in its place" if filed else str(exc.strerror or exc)),
            hint="pass another with --data DIR",
        ) from None
    try:
        return launch(
            settings,
            NAME,
            KIND,
            argv(where),
            Healthy(f"tcp://{HOST}:{where.port}"),
            cwd=str(where.data_dir),
            port=where.port,
            url=where.url,
            timeout=START_TIMEOUT,
        )
    except StartFailed as failure:
        raise _start_failure(where, failure) from failure


def _same_broker(record: ProcessRecord, where: BrokerLayout) -> None:
    """UsageError when the running broker is not the one ``--port`` or ``--data`` asked for:
    "already running" would tell a script its broker is where it is not. (Without them,
    the one running is the broker, and its URL is printed.)"""
    other = []
    if where.port_given and record.port != where.port:
        other.append(f"on port {record.port}, not {where.port}")
    argv = record.argv
    running_db = argv[argv.index("--db-path") + 1] if "--db-path" in argv[:-1] else ""
    if where.data_given and os.path.realpath(running_db) != os.path.realpath(where.db):
        other.append(f"with its data in {Path(running_db).parent}, not {where.data_dir}")
    if other:
        raise UsageError(
            f"the broker already runs at {record.url} (pid {record.pid}), " + " and ".join(other),
            hint="stop it first (toolctl broker stop), or use the one running",
        )


def require_free_port(port: int) -> None:
    """TransportUnavailable when something already listens on 127.0.0.1:``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise TransportUnavailable(f"cannot listen on {HOST}:{port}: {exc}") from exc
            raise _port_taken(port) from exc


def _port_taken(port: int) -> TransportUnavailable:
    return TransportUnavailable(
        f"port {port} on {HOST} is already in use by another program",
        hint="pick another with --port P (then use --pulsar-url pulsar://127.0.0.1:P)",
    )


def _start_failure(where: BrokerLayout, failure: StartFailed) -> ToolctlError:
    """Why the broker did not start, from what pulsar-lite itself printed."""
    if failure.status is None:
        return TransportUnavailable(
            f"the broker did not accept connections on {HOST}:{where.port} "
            f"within {START_TIMEOUT:g} s",
            hint=f"see its log {failure.log}",
        )
    if "Address already in use" in failure.output:
        return _port_taken(where.port)
    if "lock" in failure.output.lower():
        return TransportUnavailable(
            f"the broker data directory {where.data_dir} is in use by another broker",
            hint="stop that one ('toolctl broker stop') or pass --data DIR",
        )
    lines = failure.output.splitlines()
    last = next((line for line in reversed(lines) if line.strip()), "no output")
    return TransportUnavailable(
        f"the broker exited at start with status {failure.status}: {last.strip()}",
        hint=f"see its log {failure.log}",
    )


def answers(record: ProcessRecord, timeout: float) -> bool:
    """Whether the recorded broker accepts connections."""
    return record.port is not None and probe(f"tcp://{HOST}:{record.port}", timeout) is Health.UP


def stop_broker(settings: Settings, grace: float = 5.0) -> Stopped:
    """Stop the broker toolctl started (SIGTERM, then SIGKILL)."""
    return stop(settings, NAME, grace)


@contextmanager
def running_in(state_dir: Path, port: int | None = None) -> Iterator[str]:
    """A broker of its own, recorded under ``state_dir``, for a test session or a benchmark.

    Yields its URL; stopped (with everything it started) when the block ends.
    """
    settings = Settings.load(environ={"XDG_STATE_HOME": str(state_dir), "HOME": str(state_dir)})
    record, _ = start(settings, layout(settings, port or free_port()))
    try:
        yield str(record.url)
    finally:
        stop_broker(settings)


def data_dir_of(record: ProcessRecord) -> str | None:
    """The data directory a recorded broker was started with."""
    if "--db-path" in record.argv[:-1]:
        return str(Path(record.argv[record.argv.index("--db-path") + 1]).parent)
    return None


def exit_status(pid: int) -> int | None:
    """None while ``pid`` runs; then its exit code (``-N`` for signal N) if it is our child."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not a child of this process, or reaped already
        return None if is_alive(pid) else 0
    return None if done == 0 else os.waitstatus_to_exitcode(status)


# -- `toolctl broker start|status`: the commands' work ---------------------------------


def run_broker(
    settings: Settings,
    reporter: Reporter,
    where: BrokerLayout,
    *,
    detach: bool,
    announce: Callable[[ProcessRecord, bool], None],
) -> None:
    """`toolctl broker start`: start the broker unless it runs (``announce`` gets its record
    and whether this call started it);
    without ``detach``, then wait until a signal (the broker is stopped, SIGTERM exits 0)
    or until the broker ends by itself (TransportUnavailable unless it ended cleanly)."""
    if detach:
        _started(settings, reporter, where, announce)
        return
    from toolctl.processes.lifetime import Lifetime

    with Lifetime(clean={signal.SIGTERM}) as lifetime:
        record = _started(settings, reporter, where, announce)
        if record is None:
            return
        reporter.note("running in the foreground; Ctrl-C or SIGTERM stops it")
        status = None
        while not lifetime.stopping.wait(0.2) and (status := exit_status(record.pid)) is None:
            pass
        stop_broker(settings)
        if status not in (None, 0, -signal.SIGTERM, -signal.SIGINT, -signal.SIGKILL):
            raise TransportUnavailable(
                f"the broker exited with status {status}", hint=f"see its log {record.log}"
            )
        reporter.note("broker stopped")
        lifetime.ended(quiet=True)  # stopped cleanly; the note said so


def _started(
    settings: Settings,
    reporter: Reporter,
    where: BrokerLayout,
    announce: Callable[[ProcessRecord, bool], None],
) -> ProcessRecord | None:
    """Start the broker and announce its URL; its record, or None if it ran already."""
    record, started = start(settings, where)
    if not started:
        reporter.note(f"the broker is already running (pid {record.pid})")
        announce(record, False)
        return None
    reporter.note(f"broker started (pid {record.pid}, data {where.data_dir}, log {record.log})")
    announce(record, True)
    return record


def broker_status(settings: Settings) -> dict[str, Any]:
    """`toolctl broker status`: whether the broker runs and answers, and where."""
    record = running(settings)
    answering = record is not None and answers(record, 1)
    status: dict[str, Any] = {"running": record is not None, "answering": answering}
    if record is not None:
        status |= {
            "url": record.url,
            "pid": record.pid,
            "port": record.port,
            "data": data_dir_of(record),
            "log": record.log,
        }
    return status
