"""Background processes toolctl started and left running: managed services, the broker, workers.

Each is recorded as one JSON file under ``$XDG_STATE_HOME/toolctl/processes`` (name, pid,
port, log), so later runs, even from other processes, find and reuse it. Starting one holds
a per-name lock file, so two runs racing to start the same service start it once.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolctl.settings import Settings


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class ProcessTable:
    """The records under the state directory; stale ones (dead pids) are dropped on read."""

    def __init__(self, settings: Settings) -> None:
        self.directory = settings.state_dir / "processes"
        self.logs = settings.state_dir / "logs"

    def get(self, name: str) -> ProcessRecord | None:
        path = self._path(name)
        try:
            record = ProcessRecord(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None
        if not is_alive(record.pid):
            path.unlink(missing_ok=True)
            return None
        return record

    def put(self, record: ProcessRecord) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.directory / f".{_safe(record.name)}.{os.getpid()}.tmp"
        temporary.write_text(json.dumps(record.to_json(), sort_keys=True))
        os.replace(temporary, self._path(record.name))

    def remove(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)

    def all(self) -> list[ProcessRecord]:
        if not self.directory.is_dir():
            return []
        names = sorted(p.stem for p in self.directory.glob("*.json"))
        return [r for n in names if (r := self.get(_unsafe(n))) is not None]

    def log_path(self, name: str) -> Path:
        self.logs.mkdir(parents=True, exist_ok=True)
        return self.logs / f"{_safe(name)}.log"

    @contextmanager
    def starting(self, name: str) -> Iterator[None]:
        """Hold the per-name start lock: whoever gets it second finds the first one's record."""
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
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def spawn(
    argv: Sequence[str], *, log: Path, cwd: str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start a detached process (own session, output to ``log``) that outlives toolctl."""
    with open(log, "ab") as output:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )


def stop(pid: int, *, grace: float = 5.0) -> bool:
    """SIGTERM the process group, then SIGKILL after ``grace`` seconds; True if it was running."""
    if not is_alive(pid):
        return False
    _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not is_alive(pid):
            return True
        time.sleep(0.02)
    _signal_group(pid, signal.SIGKILL)
    while is_alive(pid) and time.monotonic() < deadline + 2:
        time.sleep(0.02)
    return True


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        with suppress(ProcessLookupError):
            os.kill(pid, signum)


def log_tail(path: str | Path, lines: int = 10) -> str:
    """The last lines of a log, for error messages about a process that died."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 8192))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
