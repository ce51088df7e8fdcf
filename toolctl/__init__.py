"""toolctl: a first-wins registry and runner for agent tools.

The public API: load settings, open the registry, look definitions up. Runners and the
toolkit graph live in ``toolctl.runners`` and ``toolctl.graph``.
"""

from toolctl.errors import (
    InvalidArguments,
    NameConflict,
    NotFound,
    RegistryError,
    TimedOut,
    ToolctlError,
    ToolFailed,
    TransportUnavailable,
    UsageError,
)

__version__ = "0.1.0"

__all__ = [
    "InvalidArguments",
    "NameConflict",
    "NotFound",
    "RegistryError",
    "TimedOut",
    "ToolFailed",
    "ToolctlError",
    "TransportUnavailable",
    "UsageError",
    "__version__",
]
