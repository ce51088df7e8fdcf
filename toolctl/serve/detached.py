"""`toolctl serve --detach`: the server as a background process in the process table.

The child is the same `toolctl serve` command with ``--ready-file``, launched through
``toolctl.processes`` like a detached worker: it reports there once it listens (or why it
cannot), and its record (kind ``serve``) carries its URL, so `service status` shows it
and `service down NAME` stops it (SIGTERM: its calls get their grace, then are killed).
"""

from __future__ import annotations

from collections.abc import Sequence

from toolctl.processes import ProcessRecord, launch_detached
from toolctl.settings import Settings

KIND = "serve"


def start_detached(
    settings: Settings,
    name: str,
    command: Sequence[str],
    url: str,
    port: int,
    drain: float,
    timeout: float = 60,
) -> tuple[ProcessRecord, bool]:
    """Launch ``command`` (a `toolctl serve` line) unless ``name`` runs; (record, started now).
    ``drain``: the seconds it may take to stop (`service down` waits that long)."""
    from toolctl.processes.launching import registry_origin

    origin = registry_origin(settings)
    return launch_detached(
        settings,
        name,
        KIND,
        command,
        url=url,
        port=port,
        timeout=timeout,
        origin=origin,
        drain=drain,
    )
