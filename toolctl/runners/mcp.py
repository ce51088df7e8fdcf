"""The MCP runtime: a tool is one ``tools/call`` on an MCP server, its definition pinned.

A run connects to the tool's service (stdio: starts its ``command`` in its own process
group; HTTP: opens a session with its ``url``), lists the server's tools and compares the
live definition of the tool with its ``pin`` before calling it: a changed definition (the
rug-pull) is exit 3 naming the fields that changed, a vanished tool exit 4. One runner keeps
one session per service for all its calls, so ``--batch`` sends every line over one
session with ``--concurrency`` calls in flight (the client multiplexes threads on one stdio
pipe). The timeout covers start, handshake and call; on expiry the client sends
``notifications/cancelled`` and ends the server's whole process tree (exit 124).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from toolctl.errors import (
    RegistryError,
    TimedOut,
    ToolctlError,
    TransportUnavailable,
    UsageError,
)
from toolctl.runners.base import Call, Sink, ToolResult, ToolSpec, expand_env, expand_env_map
from toolctl.runtimes import MCP_IDLE_TIMEOUT

if TYPE_CHECKING:
    from toolctl.mcp import Progress, Session
    from toolctl.mcp.keeper import KeptSession
    from toolctl.processes import ProcessRecord
    from toolctl.settings import Settings

KEPT = "mcp-session"
"""The process-table kind of a kept MCP session (its record is named after the service)."""
SLOW_START = 1.0
"""A server that takes longer than this to start gets the keep_alive suggestion."""

UPDATE_HINT = "review it with 'toolctl import mcp {service} --update'"
REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


class PinDrift(RegistryError):
    """A pinned MCP tool's live definition differs from its pin (the rug-pull): exit 3."""


class ToolVanished(ToolctlError):
    """A pinned MCP tool the server no longer offers: exit 4, like an unknown tool."""

    exit_code = 4


class _Live:
    """One open session and the tool definitions it listed, by the server's names."""

    def __init__(
        self, session: Session | KeptSession, tools: Mapping[str, Mapping[str, Any]]
    ) -> None:
        self.session = session
        self.tools = tools


class McpRunner:
    """Runs ``[tool.mcp]``: one ``tools/call`` per call over one session per service."""

    transport = "mcp"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._live: dict[str, _Live] = {}
        self._lock = threading.Lock()
        self._closed = False

    # -- --dry-run ------------------------------------------------------------------------

    def describe(self, call: Call) -> dict[str, Any]:
        tool = call.tool
        section, service, name = _section(tool), _service(tool), _service_name(tool)
        plan: dict[str, Any] = {"transport": self.transport, "service": name}
        from toolctl.processes.table import ProcessTable

        record = ProcessTable(self.settings).get(name)
        if record is not None and record.kind == KEPT:
            plan["kept_session"] = f"running (pid {record.pid}, {record.url})"
        elif service.get("keep_alive"):
            plan["kept_session"] = "not running: started on first use (keep_alive)"
        if service.get("url"):
            from toolctl.mcp.http import safe_url

            plan["url"] = safe_url(expand_env(str(service["url"]), self.settings, mask=True))
            if service.get("transport"):
                plan["mcp_transport"] = service["transport"]
            plan["headers"] = expand_env_map(service.get("headers") or {}, self.settings, mask=True)
        else:
            plan["argv"] = [
                expand_env(str(a), self.settings, mask=True) for a in service["command"]
            ]
            plan["env"] = expand_env_map(service.get("env") or {}, self.settings, mask=True)
            if service.get("cwd"):
                plan["cwd"] = service["cwd"]
        plan["pin"] = section.get("pin")
        plan["request"] = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": section["name"], "arguments": call.arguments},
        }
        plan["timeout"] = call.timeout
        return plan

    # -- a call ---------------------------------------------------------------------------

    def run(self, call: Call) -> ToolResult:
        from toolctl.mcp import ServerError, map_result

        tool = call.tool
        section = _section(tool)
        started = time.perf_counter()
        deadline = time.monotonic() + call.timeout
        live = self._session(tool, call.timeout, call.sink)
        remote = str(section["name"])
        definition = live.tools.get(remote)
        if definition is None:
            raise ToolVanished(
                f"MCP tool '{remote}' of service '{_service_name(tool)}' is gone: "
                f"the server no longer offers it (tool '{tool.name}')",
                hint=UPDATE_HINT.format(service=_service_name(tool)),
            )
        _check_pin(tool, section, definition)
        if section.get("pin") is None:
            call.sink.warning(
                f"tool '{tool.name}' has no pin: its definition is not checked; "
                f"pin it with 'toolctl import mcp {_service_name(tool)} --update --yes'"
            )
        left = max(deadline - time.monotonic(), 0.001)

        def progress(update: Progress) -> None:
            total = f"/{update.total:g}" if update.total is not None else ""
            message = f" {update.message}" if update.message else ""
            call.sink.stderr(f"{tool.name}: progress {update.progress:g}{total}{message}\n")

        try:
            meta = {"traceparent": call.traceparent} if call.traceparent else None
            result = live.session.call_tool(
                remote, call.arguments, left, on_progress=progress, meta=meta
            )
        except ServerError as exc:
            duration = round((time.perf_counter() - started) * 1000, 3)
            return ToolResult(
                False, "", None, str(exc), duration_ms=duration, transport=self.transport
            )
        except TimedOut as exc:
            self._forget(_service_name(tool), live)
            raise TimedOut(
                f"MCP tool '{remote}' ran past its {call.timeout:g} s timeout;"
                " the call was cancelled and the server stopped"
            ) from exc
        except TransportUnavailable:
            self._forget(_service_name(tool), live)
            raise
        answer = map_result(result)
        duration = round((time.perf_counter() - started) * 1000, 3)
        output, dropped = _capped(answer.output, call.max_output)
        if answer.is_error:
            reason = output or f"MCP tool '{remote}' reported an error"
            return ToolResult(
                False, output, answer.data, reason, duration_ms=duration,
                transport=self.transport, truncated=dropped,
            )  # fmt: skip
        return ToolResult(
            True, output, answer.data, duration_ms=duration, transport=self.transport,
            truncated=dropped,
        )  # fmt: skip

    def close(self) -> None:
        with self._lock:
            self._closed = True
            live, self._live = list(self._live.values()), {}
        for each in live:
            each.session.close()

    # -- the session ----------------------------------------------------------------------

    def _session(self, tool: ToolSpec, timeout: float, sink: Sink) -> _Live:
        name = _service_name(tool)
        with self._lock:  # batch threads wait for the one that connects
            if self._closed:
                from toolctl.errors import Interrupted

                raise Interrupted("the call was stopped")
            live = self._live.get(name)
            if live is None:
                live = self._connect(tool, timeout, sink)
                self._live[name] = live
            return live

    def _forget(self, name: str, live: _Live) -> None:
        with self._lock:
            if self._live.get(name) is live:
                del self._live[name]
        live.session.kill()

    def _connect(self, tool: ToolSpec, timeout: float, sink: Sink) -> _Live:
        service = _service(tool)
        name = _service_name(tool)
        budget = min(float(service.get("connect_timeout") or timeout), timeout)
        session: Session | KeptSession | None = kept_session(self.settings, name, service)
        if session is None:
            started = time.perf_counter()
            session = connect(
                self.settings, name, service, _service_dir(self.settings, name), budget
            )
            _suggest_keep_alive(name, service, time.perf_counter() - started, sink)
        try:
            tools = {str(each["name"]): each for each in session.list_tools(budget)}
        except BaseException:
            session.kill()
            raise
        return _Live(session, tools)


def _suggest_keep_alive(name: str, service: Mapping[str, Any], took: float, sink: Sink) -> None:
    """A stdio server slow to start (``npx`` fetching a package): say how to keep it warm.
    Not on by default: a kept session is a background process holding the server's secrets,
    and toolctl starts none that outlives the call unless the registry asks for it."""
    if took <= SLOW_START or not service.get("command") or service.get("keep_alive"):
        return
    idle = float(service.get("idle_timeout", MCP_IDLE_TIMEOUT))
    sink.warning(
        f"MCP server '{name}' took {took:.1f} s to start; keep_alive = true in its "
        f"[service.mcp] keeps it warm between runs (it ends after {idle:g} s without a call), "
        f"or 'toolctl service up {name}' until 'toolctl service down {name}'"
    )


def connect(
    settings: Settings, name: str, service: Mapping[str, Any], base: Path, timeout: float
) -> Session:
    """A session with the MCP server ``service`` (its ``[service.mcp]``), handshake done."""
    from toolctl.mcp import connect_stdio

    if service.get("url"):
        from toolctl.mcp.http import safe_url
        from toolctl.mcp.sse import connect_remote

        headers = expand_env_map(service.get("headers") or {}, settings)
        url = expand_env(str(service["url"]), settings)
        shown = safe_url(expand_env(str(service["url"]), settings, mask=True))
        transport = service.get("transport")
        return connect_remote(
            url, headers=headers, timeout=timeout, transport=transport, shown=shown
        )
    from toolctl.descriptor_env import descriptor_cwd

    env = service.get("env") or {}
    expanded = expand_env_map(env, settings)  # a missing variable: exit 2
    argv = [expand_env(str(item), settings) for item in service["command"]]
    secrets = [expanded[key] for key, value in env.items() if "${env:" in value and expanded[key]]
    secrets += [argv[n] for n, item in enumerate(service["command"]) if "${env:" in str(item)]
    cwd = descriptor_cwd(f"service '{name}'", base, service.get("cwd"))
    try:
        return connect_stdio(
            argv,
            env={**settings.environ, **expanded},
            cwd=cwd,
            secrets=secrets,
            timeout=timeout,
        )
    except FileNotFoundError as exc:
        raise TransportUnavailable(
            f"MCP server '{name}' cannot start: {argv[0]} not found",
            hint="check the service's command",
        ) from exc
    except PermissionError as exc:
        raise TransportUnavailable(
            f"MCP server '{name}' cannot start: {argv[0]}: permission denied"
        ) from exc


def kept_session(settings: Settings, name: str, service: Mapping[str, Any]) -> KeptSession | None:
    """The kept session of ``name`` when one runs (``service up``) or the service asks for
    one (``keep_alive``: started now); None when calls connect directly."""
    from toolctl.mcp.keeper import KeptSession
    from toolctl.processes.table import ProcessTable

    record = ProcessTable(settings).get(name)
    wanted = service.get("keep_alive") and service.get("command")
    if (record is None or record.kind != KEPT) and wanted:
        idle = float(service.get("idle_timeout", MCP_IDLE_TIMEOUT))
        record, _ = keep(settings, name, idle=idle or None)
    if record is None or record.kind != KEPT or record.port is None:
        return None
    token = _token_file(settings, name, record.port)
    try:
        return KeptSession(name, record.port, token.read_text().strip())
    except OSError as exc:
        raise TransportUnavailable(
            f"kept session of MCP service '{name}' has no token ({token}): {exc.strerror}",
            hint=f"restart it: 'toolctl service down {name}; toolctl service up {name}'",
        ) from exc


def keep(settings: Settings, name: str, *, idle: float | None = None) -> tuple[ProcessRecord, bool]:
    """Start the kept session of stdio MCP service ``name`` unless it runs; (record, started).

    A background process (``toolctl.mcp.keeper``) in the process table, named after the
    service, holds the server's session and relays calls from 127.0.0.1:PORT; with
    ``idle``, it ends after that many seconds without a call.
    """
    import json
    import sys

    from toolctl.descriptor_env import descriptor_cwd
    from toolctl.mcp.keeper import SPEC_VARIABLE, new_token
    from toolctl.processes import ReadyFile, free_port, launch
    from toolctl.processes.table import ProcessTable
    from toolctl.registry.index import Registry

    definition = Registry.open(settings).resolve("service", name)
    service = definition.data.get("mcp")
    if not isinstance(service, dict) or not service.get("command"):
        raise UsageError(
            f"service '{name}' is not a stdio MCP service; only those are kept by toolctl",
            hint="a service with [service.mcp] command = [...]",
        )
    table = ProcessTable(settings)
    current = table.get(name)
    if current is not None and current.kind == KEPT:
        return current, False
    env = service.get("env") or {}
    expanded = expand_env_map(env, settings)  # a missing variable: exit 2
    for item in service["command"]:
        expand_env(str(item), settings)  # the same for the command's items
    port = free_port()
    token_file = _token_file(settings, name, port)
    for stale in token_file.parent.glob(f"{token_file.name.split('.')[0]}.*.token"):
        stale.unlink(missing_ok=True)
    new_token(token_file)
    timeout = float(service.get("connect_timeout") or 30)
    spec = {
        "name": name,
        "argv": [str(item) for item in service["command"]],  # ${env:} expanded by the keeper
        "cwd": descriptor_cwd(
            f"service '{name}'", Path(definition.file).parent, service.get("cwd")
        ),
        "secrets": sorted(
            {key for value in env.values() for key in REFERENCE.findall(value)}
            | {key for item in service["command"] for key in REFERENCE.findall(str(item))}
        ),
        "port": port,
        "token_file": str(token_file),
        "ready": str(table.ready_path(name)),
        "connect_timeout": timeout,
        "idle_timeout": idle,
    }
    record, started = launch(
        settings,
        name,
        KEPT,
        [sys.executable, "-m", "toolctl.mcp.keeper"],
        ReadyFile(table.ready_path(name)),
        env={**settings.environ, **expanded, SPEC_VARIABLE: json.dumps(spec)},
        port=port,
        url=f"tcp://127.0.0.1:{port}",
        timeout=timeout + 5,
    )
    if not started:
        token_file.unlink(missing_ok=True)
    return record, started


def _token_file(settings: Settings, name: str, port: int) -> Path:
    from toolctl.processes.table import ProcessTable

    log = ProcessTable(settings).log_path(name)
    return log.with_name(f"{log.stem}.{port}.token")


def live_tools(settings: Settings, name: str, timeout: float | None = None) -> list[dict[str, Any]]:
    """The tools MCP service ``name`` offers now (connects, lists, closes)."""
    from toolctl.registry.index import Registry

    definition = Registry.open(settings).resolve("service", name)
    service = definition.data.get("mcp")
    if not isinstance(service, dict):
        raise UsageError(
            f"service '{name}' is not an MCP service ({definition.file}:{definition.line})",
            hint="only a service with [service.mcp] offers MCP tools",
        )
    budget = float(timeout or service.get("connect_timeout") or 30)
    session = connect(settings, name, service, Path(definition.file).parent, budget)
    try:
        return session.list_tools(budget)
    finally:
        session.close()


def _check_pin(tool: ToolSpec, section: Mapping[str, Any], definition: Mapping[str, Any]) -> None:
    from toolctl.mcp import pin_of

    pin = section.get("pin")
    if pin is None or pin_of(definition) == pin:
        return
    changed = changed_fields(tool.data, section, definition)
    what = ", ".join(changed) if changed else "its definition"
    service = _service_name(tool)
    raise PinDrift(
        f"MCP tool '{section['name']}' of service '{service}' changed since it was pinned "
        f"({what}); tool '{tool.name}' is not run",
        hint=UPDATE_HINT.format(service=service),
    )


def changed_fields(
    stored: Mapping[str, Any], section: Mapping[str, Any], live: Mapping[str, Any]
) -> list[str]:
    """The fields of ``live`` that differ from what the registry kept at import time."""
    changed = []
    if str(live.get("description") or "") != str(stored.get("description") or ""):
        changed.append("description")
    params = section.get("parameters")
    if params is not None and live.get("inputSchema") != params:
        changed.append("inputSchema")
    return changed


def _section(tool: ToolSpec) -> Mapping[str, Any]:
    section: Mapping[str, Any] | None = tool.data.get("mcp")
    if not section:
        raise UsageError(
            f"tool '{tool.name}' uses MCP service '{_service_name(tool)}' but has no [tool.mcp]",
            hint=f"run 'toolctl import mcp {_service_name(tool)}'; 'toolctl check' reports this",
        )
    return section


def _service(tool: ToolSpec) -> Mapping[str, Any]:
    service: Mapping[str, Any] | None = (tool.service or {}).get("mcp")
    if not service:
        raise UsageError(
            f"tool '{tool.name}': [tool.mcp] needs an MCP service, "
            f"'{_service_name(tool)}' is not one",
            hint="run 'toolctl check'",
        )
    return service


def _service_name(tool: ToolSpec) -> str:
    return str((tool.service or {}).get("name", "?"))


def _service_dir(settings: Settings, name: str) -> Path:
    """The directory of the file that defines the service: its ``cwd`` is relative to it."""
    from toolctl.registry.index import Registry

    return Path(Registry.open(settings).resolve("service", name).file).parent


class LiveFinding(NamedTuple):
    """What ``check --live`` found about one MCP service or tool."""

    severity: str
    code: str
    file: str
    line: int
    message: str


def live_check(settings: Settings, *, strict: bool = False) -> list[LiveFinding]:
    """Connect to every MCP service (in parallel, each bounded by its connect timeout) and
    compare: changed pins and vanished tools are errors, tools not imported warnings, an
    unreachable server a warning (an error when ``strict``)."""
    from concurrent.futures import ThreadPoolExecutor

    from toolctl.errors import ToolctlError
    from toolctl.mcp import pin_of
    from toolctl.registry.index import Registry

    registry = Registry.open(settings, full=True)
    services = [  # a disabled service is not connected to (its client config had it off)
        d
        for d in registry.winners("service")
        if isinstance(d.data.get("mcp"), dict) and d.data.get("state", "active") == "active"
    ]
    tools = [d for d in registry.winners("tool") if isinstance(d.data.get("mcp"), dict)]

    def listed(service: Any) -> list[dict[str, Any]] | ToolctlError:
        section = service.data["mcp"]
        budget = float(section.get("connect_timeout") or 30)
        try:
            session = connect(settings, service.name, section, Path(service.file).parent, budget)
            try:
                return session.list_tools(budget)
            finally:
                session.kill()
        except ToolctlError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=min(8, max(len(services), 1))) as pool:
        answers = list(pool.map(listed, services))
    found: list[LiveFinding] = []
    for service, answer in zip(services, answers, strict=True):
        mine = [t for t in tools if t.data.get("service") == service.name]
        if isinstance(answer, Exception):
            found.append(
                LiveFinding(
                    "error" if strict else "warning",
                    "mcp-unreachable",
                    service.file,
                    service.line,
                    f"MCP service '{service.name}' is unreachable: {answer.message}",
                )
            )
            continue
        live = {str(each["name"]): each for each in answer}
        for tool in mine:
            section = tool.data["mcp"]
            remote = str(section["name"])
            if remote not in live:
                message = (
                    f"MCP tool '{remote}' of service '{service.name}' vanished from the server"
                )
                found.append(LiveFinding("error", "mcp-vanished", tool.file, tool.line, message))
            elif section.get("pin") is None:
                message = f"tool '{tool.name}' has no pin: its definition is never checked"
                found.append(LiveFinding("warning", "mcp-unpinned", tool.file, tool.line, message))
            elif pin_of(live[remote]) != section["pin"]:
                changed = changed_fields(tool.data, section, live[remote])
                message = (
                    f"MCP tool '{remote}' of service '{service.name}' changed since it was "
                    f"pinned ({', '.join(changed) or 'its definition'}); "
                    + UPDATE_HINT.format(service=service.name)
                )
                found.append(LiveFinding("error", "mcp-pin", tool.file, tool.line, message))
        new = sorted(set(live) - {str(t.data["mcp"]["name"]) for t in mine})
        if new:
            shown = ", ".join(new[:10]) + (", ..." if len(new) > 10 else "")
            message = (
                f"MCP service '{service.name}' offers {len(new)} tool(s) not imported: "
                f"{shown} ('toolctl import mcp {service.name}')"
            )
            found.append(LiveFinding("warning", "mcp-new", service.file, service.line, message))
    return found


def _capped(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` bytes of UTF-8 (never inside a character); bytes dropped.

    The answer is already bounded by the client's message limit; the cap keeps what the
    result holds to the tool's ``max_output``, as for every other runtime.
    """
    encoded = text.encode("utf-8", errors="surrogatepass")
    if len(encoded) <= limit:
        return text, 0
    kept = encoded[:limit].decode("utf-8", errors="ignore")
    return kept, len(encoded) - len(kept.encode("utf-8", errors="surrogatepass"))
