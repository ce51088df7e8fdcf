"""`toolctl serve --detach`: the server as a background process in the process table.

The child is the same `toolctl serve` command with ``--ready-file``: it writes its URL
there once it listens, and the record (kind ``serve``) carries that URL, so `service
status` shows it and `service down NAME` stops it (SIGTERM: its calls get their grace).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from toolctl.errors import ToolctlError, TransportUnavailable
from toolctl.processes.table import ProcessRecord, ProcessTable, log_tail, spawn, stop
from toolctl.settings import Settings

KIND = "serve"


def start_detached(
    settings: Settings, name: str, command: Sequence[str], timeout: float = 60.0
) -> tuple[ProcessRecord, bool]:
    """Start ``command`` in the background unless ``name`` runs; (its record, started now)."""
    table = ProcessTable(settings)
    with table.starting(name):
        record = table.get(name)
        if record is not None:
            return record, False
        log = table.log_path(name)
        ready = log.with_suffix(".ready")
        ready.unlink(missing_ok=True)
        child = spawn([*command, "--ready-file", str(ready)], log=log, cwd=os.getcwd())
        deadline = time.monotonic() + timeout
        while not (ready.exists() and ready.read_text()):
            if child.poll() is not None:
                raise _exited(name, str(log), child.returncode)
            if time.monotonic() > deadline:
                stop(child.pid)
                raise TransportUnavailable(
                    f"{name} did not start serving within {timeout:g} s", hint=f"see {log}"
                )
            time.sleep(0.02)
        url = ready.read_text().strip()
        ready.unlink(missing_ok=True)
        port = int(url.rsplit(":", 1)[1])
        record = ProcessRecord(name, KIND, child.pid, list(command), str(log), port=port, url=url)
        table.put(record)
        return record, True


def _exited(name: str, log: str, status: int) -> ToolctlError:
    """The error the server died of, as its own last error line said it."""
    said = [
        line.split("error: ", 1)[1] for line in log_tail(log, 20).splitlines() if "error: " in line
    ]
    error = ToolctlError(said[-1] if said else f"{name} exited with status {status}; see {log}")
    error.exit_code = status if status > 0 else 1
    return error
