"""`toolctl serve --detach`: the server as a background process in the process table.

The child is the same `toolctl serve` command with ``--ready-file``, launched through
``toolctl.processes`` like a detached worker: it reports there once it listens (or why it
cannot), and its record (kind ``serve``) carries its URL, so `service status` shows it
and `service down NAME` stops it (SIGTERM: its calls get their grace, then are killed).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from toolctl.processes import ProcessRecord, ProcessTable, ReadyFile, ReportedFailure, launch
from toolctl.processes.launch import StartFailed
from toolctl.settings import Settings

KIND = "serve"


def start_detached(
    settings: Settings, name: str, command: Sequence[str], url: str, port: int, timeout: float = 60
) -> tuple[ProcessRecord, bool]:
    """Launch ``command`` (a `toolctl serve` line) unless ``name`` runs; (record, started now)."""
    ready = ProcessTable(settings).ready_path(name)
    try:
        return launch(
            settings,
            name,
            KIND,
            [*command, "--ready-file", str(ready)],
            ReadyFile(ready),
            cwd=os.getcwd(),
            port=port,
            url=url,
            timeout=timeout,
        )
    except StartFailed as failure:
        if failure.status is None or failure.status <= 0:
            raise
        # it died before it could report (a bad option, a crash): keep its exit code
        error = ReportedFailure(failure.message, exit_code=failure.status, hint=failure.hint)
        error.details = failure.details
        raise error from failure
