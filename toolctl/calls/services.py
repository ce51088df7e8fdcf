"""A registered service by name, brought up, stopped and shown: `toolctl service up|down|status`.

As ``toolctl.calls`` resolves a tool and hands it to its runner, this resolves a service
and hands it to the room that runs it: a managed HTTP service to ``processes.services``,
a stdio MCP service's kept session to the MCP side. ``down`` and ``status`` work on the
process table, which also lists the broker, workers and detached servers; the registry is
asked only to tell "not running" from "no such service" (exit 4).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from toolctl.registry import open_registry

if TYPE_CHECKING:
    from toolctl.processes import ProcessRecord, Stopped
    from toolctl.reporting import Reporter
    from toolctl.settings import Settings


class Up(NamedTuple):
    """A service brought up: what it is (for people), its record, whether it started now."""

    what: str
    record: ProcessRecord
    started: bool


def service_up(settings: Settings, reporter: Reporter, name: str) -> Up:
    """Start the managed service ``name`` (or a stdio MCP service's kept session) unless it
    runs. UsageError for a service toolctl does not start, NotFound for no such service."""
    from toolctl.processes.services import ManagedService, ensure_running

    definition = open_registry(settings, reporter).resolve("service", name)
    if definition.data.get("transport") == "mcp":
        from toolctl.mcp.kept import keep

        record, started = keep(settings, definition)
        return Up(f"kept session of MCP service '{name}'", record, started)
    _require_managed(definition.data)
    service = ManagedService(name, definition.data["http"], Path(definition.file).parent)
    record, started = ensure_running(settings, service)
    return Up(f"service '{name}'", record, started)


def service_login(
    settings: Settings, reporter: Reporter, name: str, *, browser: bool = True
) -> str | None:
    """`mcp login`: OAuth with the MCP server of service ``name`` (reached by URL), the
    tokens kept for its runs; the authorization URL goes to the reporter. Returns the scope
    granted, or None when the server asked for no login. UsageError for a service that is
    not an MCP server reached by URL."""
    from toolctl.descriptor_env import expand_env, expand_env_map
    from toolctl.errors import UsageError
    from toolctl.mcp.oauth_flow import login
    from toolctl.mcp.oauth_settings import CREDENTIALS

    definition = open_registry(settings, reporter).resolve("service", name)
    section = definition.data.get("mcp") or {}
    if not section.get("url"):
        raise UsageError(
            f"service '{name}' is not an MCP server reached by URL: nothing to log in to"
        )
    oauth = expand_env_map(section.get("oauth") or {}, settings)
    url = expand_env(str(section["url"]), settings)
    granted = login(
        settings, name, url, oauth, lambda link: reporter.note(f"open {link} to log in"),
        browser=browser,
    )  # fmt: skip
    if not granted.needed:
        return None
    sent = [key for key in CREDENTIALS if oauth.get(key)]
    if sent and not oauth.get("issuer"):
        reporter.warn(
            f"service '{name}': [service.mcp.oauth] names no issuer, so its {sent[0]} goes to"
            " whichever authorization server the MCP server names; add issuer ="
            f' "{granted.issuer}" to send it there only'
        )
    return granted.scope


def _require_managed(service: dict[str, Any]) -> None:
    from toolctl.errors import UsageError
    from toolctl.processes.services import is_managed
    from toolctl.runtimes import BY_NAME

    if is_managed(service):
        return
    runtime = service["transport"]  # a service's runtime, as its normalised data names it
    message, hint = BY_NAME[runtime].not_managed
    fields = {**(service.get(runtime) or {}), "name": service["name"]}
    raise UsageError(message.format(**fields), hint=hint.format(**fields) or None)


def service_down(settings: Settings, reporter: Reporter, name: str | None) -> list[Stopped]:
    """Stop ``name`` (anything the process table lists), or everything when None: SIGTERM,
    then SIGKILL. Stopping what is not running succeeds; NotFound when ``name`` is neither
    running nor a service."""
    from toolctl.processes import stop
    from toolctl.processes.services import stop_all

    if name is None:
        return stop_all(settings)
    stopped = stop(settings, name)
    if not (stopped.stopped or stopped.stale or _own_process(name)):
        _known_service(settings, reporter, name)  # nothing ran: exit 4 unless it is a service
    return [stopped]


def service_status(
    settings: Settings, reporter: Reporter, name: str | None = None
) -> list[ProcessRecord]:
    """What toolctl runs in the background, by kind and name (only ``name`` if given:
    NotFound when it is not running, hinting how to start it if it is a managed service)."""
    from toolctl.processes import ProcessTable

    records = sorted(ProcessTable(settings).all(), key=lambda r: (r.kind, r.name))
    if name is not None:
        records = [r for r in records if r.name == name]
        if not records:
            _not_running(settings, reporter, name)
    return records


def _known_service(settings: Settings, reporter: Reporter, name: str) -> dict[str, Any]:
    """The service's descriptor; NotFound (exit 4) unless ``name`` is in the registry."""
    return open_registry(settings, reporter).resolve("service", name).data


def _own_process(name: str) -> str | None:
    """How to start ``name`` when it names one of toolctl's own background processes as
    `status` lists them (the broker, a worker, a `serve` of the default name), else None:
    such a name is known even while nothing of it runs."""
    if name == "broker":
        return "start it with 'toolctl broker start --detach'"
    if name == "serve":
        return "start it with 'toolctl serve --detach'"
    kind, _, rest = name.partition(":")
    tool = rest.removeprefix("tool:")
    if kind == "worker" and tool and not tool.startswith(":"):
        target = f"--tool {tool}" if rest.startswith("tool:") else rest
        return f"start it with 'toolctl worker {target} --detach'"
    return None


def _not_running(settings: Settings, reporter: Reporter, name: str) -> NoReturn:
    from toolctl.errors import NotFound
    from toolctl.processes.services import is_managed

    own = _own_process(name)
    if own is not None:
        raise NotFound("running process", name, hint=own)
    managed = is_managed(_known_service(settings, reporter, name))
    hint = f"start it with 'toolctl service up {name}'" if managed else "it is not managed"
    raise NotFound("running process", name, hint=hint)
