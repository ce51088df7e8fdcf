"""toolctl: a first-wins registry and runner for agent tools.

The public API: load settings, open the registry, look definitions up. Runners and the
toolkit graph live in ``toolctl.runners`` and ``toolctl.graph``.

The error types are loaded when first asked for, so that importing the package loads
nothing: the ``toolctl`` command holds Ctrl-C from its own first line on (see
``toolctl.cli``), and everything before that line is Python's to tell.
"""

__version__ = "0.1.0"

__all__ = [
    "Interrupted",
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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from toolctl.errors import (
        Interrupted,
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


def __getattr__(name: str) -> object:
    if name in __all__:
        from toolctl import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'toolctl' has no attribute {name!r}")
