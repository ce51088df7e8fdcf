"""Pulsar brokers: reaching one at any URL, and running the embedded one for one machine.

``open_client`` is how the runner and the worker connect: a TCP probe first, so a dead
broker fails at once (exit 5), then a client that logs nowhere; ``translate`` maps
pulsar-client's errors into toolctl's tree. The embedded broker is pulsar-lite, a
Pulsar-protocol broker binary from PyPI. It listens on 127.0.0.1 only, keeps its data
under ``$XDG_STATE_HOME/toolctl/broker`` (or ``--data``), logs to the state directory's
``logs/broker.log`` and is recorded in the ProcessTable as ``broker``, so ``broker
status|stop`` and ``service status|down`` find it. Its metrics endpoint (on 0.0.0.0:8080
by default) is switched off by an explicit config file.
"""

from __future__ import annotations

import errno
import math
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from toolctl.errors import Interrupted, ToolctlError, TransportUnavailable, UsageError
from toolctl.processes.table import ProcessRecord, ProcessTable, is_alive, log_tail, spawn, stop
from toolctl.settings import Settings

NAME = "broker"
KIND = "broker"
HOST = "127.0.0.1"
DEFAULT_PORT = 6650
START_TIMEOUT = 15.0
CONFIG = "[metrics]\nenabled = false\n"
BROKER_HINT = "start one with 'toolctl broker start --detach', or pass --pulsar-url"


@dataclass(frozen=True)
class BrokerLayout:
    """Where a broker listens and keeps its data."""

    port: int
    data_dir: Path

    @property
    def url(self) -> str:
        return f"pulsar://{HOST}:{self.port}"

    @property
    def config(self) -> Path:
        return self.data_dir / "pulsar-lite.toml"

    @property
    def db(self) -> Path:
        return self.data_dir / "broker.db"


# -- reaching a broker, any broker --------------------------------------------------


def open_client(url: str, timeout: float) -> Any:
    """A pulsar.Client for ``url`` after a TCP probe, so a dead broker fails fast (exit 5)."""
    import os

    import pulsar

    probe(url, timeout)
    bounded = min(max(timeout, 0.1), 30.0)
    try:
        return pulsar.Client(
            url,
            operation_timeout_seconds=max(1, math.ceil(bounded)),
            connection_timeout_ms=max(100, int(bounded * 1000)),
            # the C++ client logs to stdout by default, which is where tool output goes
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull),
        )
    except pulsar.PulsarException as exc:
        raise TransportUnavailable(f"bad Pulsar URL {url}: {exc}") from exc


def probe(url: str, timeout: float) -> None:
    """Raise TransportUnavailable unless some host of a ``pulsar://`` URL accepts TCP."""
    parts = urlsplit(url)
    if parts.scheme not in ("pulsar", "pulsar+ssl"):
        if parts.scheme in ("http", "https"):
            return  # an HTTP lookup service: the client finds the broker itself
        raise UsageError(f"bad Pulsar URL {url!r}: expected pulsar://HOST:PORT")
    default_port = 6651 if parts.scheme == "pulsar+ssl" else 6650
    reason = "no host"
    for host in parts.netloc.rpartition("@")[2].split(","):
        name, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
        try:
            with socket.create_connection(
                (name or host, int(port or default_port)), timeout=min(max(timeout, 0.1), 5.0)
            ):
                return
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    raise TransportUnavailable(
        f"cannot reach the Pulsar broker at {url}: {reason.lower()}", hint=BROKER_HINT
    )


def needs_acknowledging(topic: str) -> bool:
    """Whether consumed messages must be acknowledged: not on a non-persistent topic.

    There an acknowledgement changes nothing, yet costs a blocking call (and a GIL round
    trip) per message, about a third of a pipelined call's cost in the client.
    """
    return not topic.startswith("non-persistent://")


def translate(exc: Exception, url: str, doing: str) -> ToolctlError:
    """A pulsar-client exception as toolctl's error: the one place that maps them."""
    import pulsar

    if isinstance(exc, pulsar.Interrupted):
        return Interrupted("interrupted")
    if isinstance(exc, (pulsar.Timeout, pulsar.ConnectError)):
        return TransportUnavailable(
            f"the Pulsar broker at {url} did not answer while {doing}", hint=BROKER_HINT
        )
    name = type(exc).__name__
    return TransportUnavailable(f"Pulsar broker at {url}: {doing} failed: {name}: {exc}")


# -- the embedded broker -------------------------------------------------------------


def layout(settings: Settings, port: int | None = None, data: Path | None = None) -> BrokerLayout:
    """The broker's port and data directory: the options given, else the defaults."""
    directory = Path(data).expanduser().absolute() if data else settings.state_dir / "broker"
    return BrokerLayout(port or DEFAULT_PORT, directory)


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
    table = ProcessTable(settings)
    with table.starting(NAME):
        record = table.get(NAME)
        if record is not None:
            return record, False
        require_free_port(where.port)
        where.data_dir.mkdir(parents=True, exist_ok=True)
        where.config.write_text(CONFIG)
        command = argv(where)
        log = table.log_path(NAME)
        child = spawn(command, log=log, cwd=str(where.data_dir))
        wait_until_ready(child, where, log)
        record = ProcessRecord(NAME, KIND, child.pid, command, str(log), where.port, where.url)
        table.put(record)
        return record, True


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


def wait_until_ready(child: subprocess.Popen[bytes], where: BrokerLayout, log: Path) -> None:
    """Poll until the broker accepts TCP; explain from its log if it exits or stalls."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise _start_failure(where, log, child.returncode)
        if answers(where.port, 0.2):
            return
        time.sleep(0.005)
    child.terminate()
    child.wait(timeout=5)
    raise TransportUnavailable(
        f"the broker did not accept connections on {HOST}:{where.port} within {START_TIMEOUT:g} s",
        hint=f"see its log {log}",
    )


def _start_failure(where: BrokerLayout, log: Path, status: int) -> ToolctlError:
    tail = log_tail(log, 40)
    if "Address already in use" in tail:
        return _port_taken(where.port)
    if "lock" in tail.lower():
        return TransportUnavailable(
            f"the broker data directory {where.data_dir} is in use by another broker",
            hint="stop that one ('toolctl broker stop') or pass --data DIR",
        )
    last = next((line for line in reversed(tail.splitlines()) if line.strip()), "no output")
    return TransportUnavailable(
        f"the broker exited at start with status {status}: {last.strip()}",
        hint=f"see its log {log}",
    )


def answers(port: int, timeout: float) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def stop_broker(settings: Settings, grace: float = 5.0) -> ProcessRecord | None:
    """Stop the broker toolctl started (SIGTERM, then SIGKILL); its record, or None."""
    table = ProcessTable(settings)
    record = table.get(NAME)
    if record is None:
        return None
    stop(record.pid, grace=grace)
    table.remove(NAME)
    return record


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
