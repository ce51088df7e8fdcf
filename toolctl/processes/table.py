"""The table of background processes toolctl started: managed services, the broker, workers.

Each is one JSON file under ``$XDG_STATE_HOME/toolctl/processes`` (name, kind, pid, port,
log, and the pid's identity), so later runs, even from other processes, find it. A pid
alone can be reused by an unrelated process once ours has gone; the identity (the
process's start time, field 22 of ``/proc/PID/stat``, and the boot id) tells them apart,
so nothing is ever signalled on the word of a stale record. ``lock(name)`` is the
per-name lock that launching and stopping hold.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import functools
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolctl.descriptor_env import PROCESS_TAG
from toolctl.settings import Settings

PROC = Path("/proc")
TAG_VARIABLE = PROCESS_TAG
"""Set in a background process's environment to its record's ``tag``."""


@dataclass(frozen=True)
class ProcessRecord:
    """One background process toolctl owns."""

    name: str
    kind: str
    pid: int
    argv: list[str]
    log: str
    port: int | None = None
    url: str | None = None
    started: float = field(default_factory=time.time)
    start_time: int | None = None
    """Clock ticks after boot at which ``pid`` started (``/proc/PID/stat`` field 22)."""
    boot_id: str | None = None
    tag: str | None = None
    """The value of ``TAG_VARIABLE`` in its environment, which all it starts inherits: how
    `stop` finds its helpers once they are nobody's children (its leader was killed)."""
    origin: str | None = None
    """Whose it is, for a name two projects may both use: a managed service's descriptor
    directory, a worker's or server's registry search path. None: the machine's (the
    broker), or a record written before toolctl kept it."""
    drain: float | None = None
    """Seconds a server or worker may take to drain once told to stop (its grace and the
    clean-up after it): what `stop` waits before it kills. None: the stop's own grace."""

    @classmethod
    def of(
        cls,
        name: str,
        kind: str,
        pid: int,
        argv: list[str],
        log: str,
        *,
        port: int | None = None,
        url: str | None = None,
        tag: str | None = None,
        origin: str | None = None,
        drain: float | None = None,
    ) -> ProcessRecord:
        """The record of running process ``pid``, with its identity read now."""
        identity = identify(pid)
        start_time, boot_id = identity if identity is not None else (None, None)
        return cls(
            name,
            kind,
            pid,
            argv,
            log,
            port,
            url,
            time.time(),
            start_time,
            boot_id,
            tag,
            origin,
            drain,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class State(enum.Enum):
    """What a record's pid is now."""

    RUNNING = "running"
    GONE = "gone"
    STALE = "stale"
    """The pid runs, but it is another process than the one recorded (it was reused)."""


def state_of(record: ProcessRecord) -> State:
    """Whether the recorded process still runs, is gone, or its pid now names another."""
    if not is_alive(record.pid):
        return State.GONE
    if not PROC.is_dir():  # no /proc (not Linux): the pid is all there is to go by
        return State.RUNNING
    now = identify(record.pid)
    if now is None:
        return State.GONE
    return State.RUNNING if now == (record.start_time, record.boot_id) else State.STALE


def identify(pid: int) -> tuple[int, str] | None:
    """(start time in clock ticks after boot, boot id) of a running pid; None if unknown."""
    fields, boot = _stat(pid), boot_id()
    return None if fields is None or boot is None else (int(fields[19]), boot)


@functools.cache
def boot_id() -> str | None:
    """This boot's id: start times count from boot, so they compare only within one."""
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (field 3 is index 0)."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


class ProcessTable:
    """The records under the state directory; reads skip (and drop) dead ones."""

    def __init__(self, settings: Settings) -> None:
        self.directory = settings.state_dir / "processes"
        self.logs = settings.state_dir / "logs"

    def read(self, name: str) -> ProcessRecord | None:
        """The record as written, whatever its pid is doing now; None for one that is not a
        record (a pid that is not a process id: `"x"` or 2**80 made every command looking at
        it exit 70, `service down` too)."""
        try:
            record = ProcessRecord(**json.loads(self._path(name).read_text()))
        except (OSError, ValueError, TypeError):
            return None
        pid = record.pid
        return record if type(pid) is int and 0 < pid < 2**31 else None

    def get(self, name: str) -> ProcessRecord | None:
        """The record if its process still runs; a dead one's record is dropped.

        A stale record (the pid now names another process) is skipped but kept, so that
        stopping it can say so.
        """
        record = self.read(name)
        if record is None:
            return None
        state = state_of(record)
        if state is State.GONE:
            self.remove(name)
            if record.tag:  # (a kept session's keeper killed: its server's processes run on)
                _kill_left(record.tag)
        return record if state is State.RUNNING else None

    def put(self, record: ProcessRecord) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.directory / f".{_safe(record.name)}.{os.getpid()}.tmp"
        temporary.write_text(json.dumps(record.to_json(), sort_keys=True))
        os.replace(temporary, self._path(record.name))

    def remove(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)

    def names(self) -> list[str]:
        """Every recorded name, running or not."""
        if not self.directory.is_dir():
            return []
        return sorted(_unsafe(p.stem) for p in self.directory.glob("*.json"))

    def all(self) -> list[ProcessRecord]:
        """The records whose processes still run."""
        return [r for n in self.names() if (r := self.get(n)) is not None]

    def log_path(self, name: str) -> Path:
        """Where a process launched now as ``name`` logs (``logs/worker@orders.log``). One
        launched by an earlier build logs where its record's ``log`` says."""
        self.logs.mkdir(parents=True, exist_ok=True)
        return self.logs / f"{_log_name(name)}.log"

    def ready_path(self, name: str) -> Path:
        """Where a launched toolctl process reports that it is ready (or why it is not)."""
        return self.log_path(name).with_suffix(".ready")

    @contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """Hold the per-name lock that launching and stopping ``name`` take."""
        locks = self.directory / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(locks / f"{_safe(name)}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)

    def _path(self, name: str) -> Path:
        return self.directory / f"{_safe(name)}.json"


def _safe(name: str) -> str:
    return name.replace("/", "%2F").replace(":", "%3A")


def _log_name(name: str) -> str:
    """A log's file name for record ``name``: a worker's ``worker:orders`` is
    ``worker@orders`` (as systemd names an instance). No registry name holds an '@', so no
    two records share a log (a '-' would give the worker of service ``orders`` the log of a
    service named ``worker-orders``)."""
    return _safe(name.replace(":", "@"))


def _unsafe(stem: str) -> str:
    return stem.replace("%3A", ":").replace("%2F", "/")


def is_alive(pid: int) -> bool:
    """Whether ``pid`` runs and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _stat(pid)
    return fields is None or fields[0] != "Z"


def log_tail(path: str | Path, lines: int = 10, *, since: int = 0) -> str:
    """The last lines of a log (from byte ``since`` on), for errors about a process that died."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(since, handle.tell() - 16384))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _kill_left(tag: str) -> None:
    """SIGKILL what a process gone without its clean stop left running (its children, in
    sessions of their own or not: all carry its tag), before its record is forgotten and,
    with it, the one way to find them."""
    import signal

    for pid, start_time in tagged(tag).items():
        fields = stat_of(PROC / str(pid))  # still the process found (a pid is reused)
        if fields is not None and int(fields[19]) == start_time:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def tagged(tag: str) -> dict[int, int]:
    """{pid: start time} of every live process whose environment holds ``tag`` as its
    ``TAG_VARIABLE`` (set when it was launched, inherited by all it started, found even
    when it is nobody's child any more). Processes of other users cannot be read: skipped."""
    if not PROC.is_dir():
        return {}
    needle = f"{TAG_VARIABLE}={tag}".encode()
    found: dict[int, int] = {}
    for entry in PROC.glob("[0-9]*"):
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            fields = stat_of(entry)
            if fields is not None and fields[0] not in ("Z", "X"):
                found[int(entry.name)] = int(fields[19])
    for mine in _ancestry():  # a stop asked from inside the tree never signals its asker
        found.pop(mine, None)
    return found


def _ancestry() -> list[int]:
    """This process and its ancestors."""
    chain = [os.getpid()]
    while chain[-1] > 1 and len(chain) < 256:
        fields = stat_of(PROC / str(chain[-1]))
        if fields is None:
            break
        chain.append(int(fields[1]))
    return chain


def stat_of(entry: Path) -> list[str] | None:
    """A /proc/PID entry's stat fields after its name (state first), None once it is gone."""
    try:
        return (entry / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
