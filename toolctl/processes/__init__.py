"""Every background process toolctl starts: one table, one launch, one stop, one probe.

Managed services, the embedded broker and detached workers (and next, kept MCP sessions
and ``serve --detach``) are all launched with ``launch`` and stopped with ``stop``, under
the table's per-name lock. This room imports nothing above models, errors and settings.
"""

from toolctl.processes.launch import StartFailed, launch, launch_detached
from toolctl.processes.probe import Health, free_port, probe
from toolctl.processes.ready import (
    Healthy,
    Ready,
    ReadyFile,
    ReportedFailure,
    report_failure,
    report_ready,
)
from toolctl.processes.stop import Stopped, stop
from toolctl.processes.table import ProcessRecord, ProcessTable, State

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
