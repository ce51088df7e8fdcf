"""Every background process toolctl starts: one table, one launch, one stop, one probe; and
the one lifetime of a long-running command (``lifetime``: what its signals do); and the
reaper (``reaper``: no process a call started outlives it).

Managed services, the embedded broker, detached workers, kept MCP sessions and
``serve --detach`` are all launched with ``launch`` and stopped with ``stop``, under the
table's per-name lock. This room imports nothing above models, errors and settings.

The names below load their module on first use (PEP 562): `toolctl run` imports
``processes.lifetime`` for its signals and ``processes.reaper`` for every call, and must
not pay ~6 ms for the launcher, the table and the probe it never uses. (Hence no module
is named like a function it exports: a submodule imported later would hide the function
of the same name.)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolctl.processes.launching import StartFailed, launch, launch_detached
    from toolctl.processes.probing import Health, free_port, probe
    from toolctl.processes.ready import (
        Healthy,
        Ready,
        ReadyFile,
        ReportedFailure,
        report_failure,
        report_ready,
    )
    from toolctl.processes.stopping import Stopped, stop
    from toolctl.processes.table import ProcessRecord, ProcessTable, State

_HOMES = {
    "launching": ("StartFailed", "launch", "launch_detached"),
    "probing": ("Health", "free_port", "probe"),
    "ready": ("Healthy", "Ready", "ReadyFile", "ReportedFailure", "report_failure", "report_ready"),
    "stopping": ("Stopped", "stop"),
    "table": ("ProcessRecord", "ProcessTable", "State"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "Health",
    "Healthy",
    "ProcessRecord",
    "ProcessTable",
    "Ready",
    "ReadyFile",
    "ReportedFailure",
    "StartFailed",
    "State",
    "Stopped",
    "free_port",
    "launch",
    "launch_detached",
    "probe",
    "report_failure",
    "report_ready",
    "stop",
]


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
