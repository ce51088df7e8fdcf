"""What a Pulsar worker hosts: a service's handler, imported from the project, on its
request and response queues."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolctl.errors import UsageError

Handler = Callable[[dict[str, Any], dict[str, Any], str], Any]
HANDLER_PATTERN = re.compile(r"^[\w.]+:[\w.]+$")
AT_LEAST_ONCE = "at-least-once"


@dataclass(frozen=True)
class Hosting:
    """What a worker serves: a handler on a request queue, answering on a response queue."""

    name: str
    request_queue: str
    response_queue: str
    handler: Handler
    origin: str
    close: Callable[[], None] = lambda: None
    delivery: str = "at-most-once"
    recorded: bool = False
    """The handler records its calls itself (through ``toolctl.calls``)."""
    stopping: Callable[[int], None] = lambda signum: None
    """Told the signal that stops the worker (its calls cut short are recorded with it)."""

    @property
    def subscription(self) -> str:
        return f"{self.name}-request"


def host_service(
    name: str, section: Mapping[str, Any], roots: Sequence[Path], handler: str | None = None
) -> Hosting:
    """The Hosting of Pulsar service ``name`` (its ``[service.pulsar]`` section).

    Its handler is ``handler``, else the section's, imported with ``roots`` first on sys.path.
    """
    target = handler or section.get("handler")
    if not target:
        raise UsageError(
            f"service '{name}' names no handler",
            hint="add handler = 'module:function' to [service.pulsar] or pass --handler",
        )
    return Hosting(
        name,
        section["request_queue"],
        section["response_queue"],
        load_handler(target, roots),
        target,
        delivery=section.get("delivery") or "at-most-once",
    )


def handler_roots(definition_file: Path, search_path: Sequence[Path]) -> list[Path]:
    """Where a handler module is imported from: the project root, then the working directory.

    The project root is the parent of the registry directory that defines the service, so
    ``registry/jokes.toml`` with ``handler = "plugins.joke.service:invoke"`` imports
    ``plugins/joke/service.py`` next to ``registry/``, wherever toolctl runs from.
    """
    registry_dir = next(
        (d for d in search_path if definition_file.is_relative_to(d)),
        definition_file.parent,
    )
    return list(dict.fromkeys([registry_dir.parent, Path.cwd()]))


def load_handler(target: str, roots: Sequence[Path]) -> Handler:
    """Import ``module:attribute`` with ``roots`` first on sys.path; UsageError if it fails."""
    if not HANDLER_PATTERN.match(target):
        raise UsageError(f"handler {target!r} is not 'module:function'")
    module_name, _, attribute = target.partition(":")
    for root in reversed(roots):
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
    looked = ", ".join(str(r) for r in roots)
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except ImportError as exc:
        raise UsageError(f"handler {target}: {exc}", hint=f"looked in {looked}") from exc
    except AttributeError as exc:
        raise UsageError(f"handler {target}: {module_name} has no {attribute}") from exc
    except Exception as exc:  # the module itself is broken: say how, without a traceback
        raise UsageError(
            f"handler {target}: importing failed: {type(exc).__name__}: {exc}"
        ) from exc
    if not callable(found):
        raise UsageError(f"handler {target} is not callable")
    handler: Handler = found
    return handler
