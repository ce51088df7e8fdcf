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

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from toolctl.arguments import printable_text
from toolctl.errors import (
    PinDrift,
    TimedOut,
    ToolctlError,
    TransportUnavailable,
    UsageError,
)
from toolctl.runners.base import (
    Call,
    Sink,
    ToolResult,
    ToolSpec,
    expand_env,
    expand_env_map,
    finite_json,
)
from toolctl.runtimes import MCP_IDLE_TIMEOUT

if TYPE_CHECKING:
    from toolctl.mcp import Progress, Session
    from toolctl.mcp.keeper import KeptSession
    from toolctl.settings import Settings

_T = TypeVar("_T")

SLOW_START = 2.0
"""A server that takes longer than this to start gets the keep_alive suggestion (`npx`
fetching a package takes several seconds; a Python SDK server starts in 1-1.5 s, and
advice repeated at each of its runs is noise)."""
WEDGED_AFTER = 2.0
"""Seconds a server on which a call was cancelled has to answer a ping before the next
call, else it is stopped and started afresh (see McpRunner._answers)."""


class ToolVanished(ToolctlError):
    """A pinned MCP tool the server no longer offers: exit 4, like an unknown tool."""

    exit_code = 4


class _Live:
    """One open session and the tool definitions it listed, by the server's names, and
    the service definition (with its directory) it was opened for."""

    def __init__(
        self,
        session: Session | KeptSession,
        listed: Iterable[Mapping[str, Any]],
        opened_for: str = "",
    ) -> None:
        self.session = session
        self.opened_for = opened_for
        self.verified: dict[str, Any] = {}
        """Each tool's pin its server's definition matched at a call of this session."""
        self.take(listed)

    def take(self, listed: Iterable[Mapping[str, Any]]) -> None:
        """The server's tool list, as listed now, and its pins worked out on use (one
        assignment: a call on another thread sees the old listing or the new, whole)."""
        from toolctl.mcp.pins import by_name

        tools = by_name(listed)
        self._listing: tuple[dict[str, Mapping[str, Any]], dict[str, str]] = (tools, {})

    @property
    def tools(self) -> Mapping[str, Mapping[str, Any]]:
        return self._listing[0]

    def pin(self, remote: str) -> str | None:
        """The pin of the server's definition of ``remote`` (None: it offers none), worked
        out once per listing rather than at every call."""
        tools, pins = self._listing
        found = pins.get(remote)
        if found is None and remote in tools:
            from toolctl.mcp.pins import pin_of

            found = pins[remote] = pin_of(tools[remote])
        return found

    def drifted(self, remote: str, pin: str | None) -> bool:
        """Whether ``remote`` is missing or not the definition the registry pins."""
        return remote not in self.tools or (pin is not None and self.pin(remote) != pin)


def _definition(tool: ToolSpec) -> str:
    """What a session is opened from: the service's [service.mcp] and its directory. A
    server that runs long (`serve`) reads the registry again as it changes: a session of a
    definition since changed (a command removed, a secret rotated) is not used again."""
    section = (tool.service or {}).get("mcp") or {}
    return json.dumps([section, str(tool.service_dir)], sort_keys=True, default=str)


class McpRunner:
    """Runs ``[tool.mcp]``: one ``tools/call`` per call over one session per service."""

    runtime = "mcp"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._live: dict[str, _Live] = {}
        self._lock = threading.Lock()
        self._gates: dict[str, threading.Lock] = {}
        """One per service: the calls of a service wait for the one that connects to it;
        the calls of other services do not (a server stuck in its handshake held every
        MCP call of a gateway up to its connect_timeout)."""
        self._closed = False

    # -- --dry-run ------------------------------------------------------------------------

    def describe(self, call: Call) -> dict[str, Any]:
        tool = call.tool
        section, service, name = _section(tool), _service(tool), _service_name(tool)
        plan: dict[str, Any] = {"transport": self.runtime, "service": name}
        from toolctl.mcp.kept import KEPT
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
        started = time.perf_counter()
        deadline = time.monotonic() + call.timeout
        attempt = lambda: self._run(call, started, deadline)  # noqa: E731
        return _once_more(call.tool, attempt, self._drop)

    def _run(self, call: Call, started: float, deadline: float) -> ToolResult:
        from toolctl.mcp import ServerError, map_result

        tool = call.tool
        section = _section(tool)
        live = self._session(tool, max(deadline - time.monotonic(), 0.001), call.sink)
        remote = str(section["name"])
        pin = section.get("pin")
        self._listed(live, remote, pin, deadline)
        if live.drifted(remote, pin) and _own_server(live) and live.verified.get(remote) != pin:
            # not a server that changed under a pin it matched: one started before the
            # registry pinned what it pins now (a change accepted while a server serving
            # long held the session), and a new one offers what was accepted
            self._forget(_service_name(tool), live)
            live = self._session(tool, max(deadline - time.monotonic(), 0.001), call.sink)
        definition = live.tools.get(remote)
        if definition is None:
            from toolctl.mcp.pins import UPDATE_HINT

            raise ToolVanished(
                f"MCP tool '{remote}' of service '{_service_name(tool)}' is gone: "
                f"the server no longer offers it (tool '{tool.name}')",
                hint=UPDATE_HINT.format(service=_service_name(tool)),
            )
        if live.drifted(remote, pin):
            _pin_drift(tool, section, definition)
        live.verified[remote] = pin
        if section.get("pin") is None:
            call.sink.warning(
                f"tool '{tool.name}' has no pin: its definition is not checked; "
                f"pin it with 'toolctl import mcp {_service_name(tool)} --update --yes'"
            )
        left = max(deadline - time.monotonic(), 0.001)

        def progress(update: Progress) -> None:
            call.sink.progress(update.progress, update.total, update.message)

        try:
            meta = {"traceparent": call.traceparent} if call.traceparent else None
            result = live.session.call_tool(
                remote, call.arguments, left, on_progress=progress, meta=meta,
                on_log=call.sink.log, on_request=_asker(call, _service(tool)),
            )  # fmt: skip
        except ServerError as exc:
            duration = round((time.perf_counter() - started) * 1000, 3)
            return ToolResult(
                False, "", None, printable_text(str(exc)), duration_ms=duration,
                transport=self.runtime,
            )  # fmt: skip
        except TimedOut as exc:
            from toolctl.mcp.session import CallTimedOut

            if isinstance(exc, CallTimedOut):  # others run on it: the session told the cancel,
                ended = "the server was told"  # and the next call pings it first
            else:
                self._forget(_service_name(tool), live)
                ended = "the server stopped" if live.session.local else "the session closed"
            raise TimedOut(
                f"MCP tool '{remote}' ran past its {call.timeout:g} s timeout;"
                f" the call was cancelled and {ended}"
            ) from exc
        except TransportUnavailable:
            self._forget(_service_name(tool), live)
            raise
        duration = round((time.perf_counter() - started) * 1000, 3)
        # a lone surrogate ("\ud800" in its JSON) is no text any writer takes: as its escape
        result = finite_json(result)
        if result is None:  # nested past what JSON is written to: no answer to pass on
            reason = f"MCP tool '{remote}' answered a result nested too deep to pass on"
            return ToolResult(False, "", None, reason, duration_ms=duration, transport=self.runtime)
        answer = map_result(result)
        output, dropped = _capped(answer.output, call.max_output)
        broken = None if answer.is_error else _unlike_schema(section, result)
        if broken is not None:  # what a client checks, and would blame on toolctl
            reason = f"MCP tool '{remote}' answered against its outputSchema: {broken}"
            refused = {"content": [{"type": "text", "text": reason}], "isError": True}
            return ToolResult(
                False, output, answer.data, reason, duration_ms=duration,
                transport=self.runtime, truncated=dropped, mcp=refused,
            )  # fmt: skip
        if answer.is_error:
            reason = output or f"MCP tool '{remote}' reported an error"
            return ToolResult(
                False, output, answer.data, reason, duration_ms=duration,
                transport=self.runtime, truncated=dropped, mcp=result,
            )  # fmt: skip
        return ToolResult(
            True, output, answer.data, duration_ms=duration, transport=self.runtime,
            truncated=dropped, mcp=result,
        )  # fmt: skip

    def _listed(self, live: _Live, remote: str, pin: str | None, deadline: float) -> None:
        """The session's listing made current for a call of ``remote``: listed again when
        the server said its list changed, or when the listing is not what the registry
        pins now (a session serving long outlives a change accepted since)."""
        if live.session.tools_changed or live.drifted(remote, pin):
            live.session.tools_changed = False  # before listing: a change during it counts
            live.take(live.session.list_tools(max(deadline - time.monotonic(), 0.001)))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            live, self._live = list(self._live.values()), {}
        for each in live:
            each.session.close()

    # -- the session ----------------------------------------------------------------------

    def session(self, tool: ToolSpec, timeout: float) -> Session:
        """The session with ``tool``'s service the calls use (opened if need be), for what
        else a door asks of that server (its resources, prompts, completions)."""
        return self._door_session(tool, timeout)[1]

    def request(
        self, tool: ToolSpec, method: str, params: dict[str, Any] | None, timeout: float
    ) -> dict[str, Any]:
        """One request a door forwards to ``tool``'s service (a listing, a read, a prompt),
        over the calls' session: refused with a token a refresh has since replaced, it
        goes again once in a new session, as a call does."""
        attempt = lambda: self._request(tool, method, params, timeout)  # noqa: E731
        return _once_more(tool, attempt, self._drop)

    def _request(
        self, tool: ToolSpec, method: str, params: dict[str, Any] | None, timeout: float
    ) -> dict[str, Any]:
        live, session = self._door_session(tool, timeout)
        try:
            return session.request(method, params, timeout)
        except TransportUnavailable:  # a refreshed login too: the next session uses it
            self._forget(_service_name(tool), live)
            raise

    def _door_session(self, tool: ToolSpec, timeout: float) -> tuple[_Live, Session]:
        """The calls' session with ``tool``'s service, for a door: refused when kept (a
        kept session carries tool calls only)."""
        from toolctl.mcp.keeper import KeptSession

        live = self._session(tool, timeout, Sink())
        if isinstance(live.session, KeptSession):
            raise TransportUnavailable(
                f"MCP service '{_service_name(tool)}' runs in a kept session, which carries "
                "tool calls only"
            )
        return live, live.session

    def _session(self, tool: ToolSpec, timeout: float, sink: Sink) -> _Live:
        name = _service_name(tool)
        with self._lock:
            self._refuse_closed()
            gate = self._gates.setdefault(name, threading.Lock())
        with _entered(gate):  # this service's calls wait for the one that connects
            with self._lock:
                self._refuse_closed()
                live = self._live.get(name)
                if live is not None and live.opened_for != _definition(tool):
                    del self._live[name]  # opened for a definition no longer in the registry
                    live.session.close()
                    live = None
            if live is not None and not self._answers(name, live):
                live = None  # wedged on a cancelled call: it was stopped, connect afresh
            if live is None:
                live = self._connect(tool, timeout, sink)
                with self._lock:
                    if self._closed:  # closed while it connected: nobody would close it
                        live.session.kill()
                        self._refuse_closed()
                    self._live[name] = live
            return live

    def _answers(self, name: str, live: _Live) -> bool:
        """Whether a session on which a call was cancelled still answers: its server may
        go on with that call (a sync tool blocks FastMCP's loop), and the next call then
        waited its whole timeout. A ping within WEDGED_AFTER seconds says; a local server
        that does not answer is stopped (False), one over HTTP is kept (it serves
        requests side by side, and cannot be stopped from here)."""
        from toolctl.mcp.session import Session

        session = live.session
        if not isinstance(session, Session) or not session.abandoned or not session.local:
            return True  # a kept session: its keeper holds the server
        try:
            session.request("ping", None, WEDGED_AFTER)
        except ToolctlError:
            self._forget(name, live)
            return False
        session.abandoned = False
        return True

    def _refuse_closed(self) -> None:
        if self._closed:
            from toolctl.errors import Interrupted

            raise Interrupted("the call was stopped")

    def _drop(self, name: str) -> None:
        """Forget the session held for service ``name``, whatever it is."""
        with self._lock:
            live = self._live.get(name)
        if live is not None:
            self._forget(name, live)

    def _forget(self, name: str, live: _Live) -> None:
        with self._lock:
            if self._live.get(name) is live:
                del self._live[name]
        live.session.kill()

    def _connect(self, tool: ToolSpec, timeout: float, sink: Sink) -> _Live:
        from toolctl.mcp.kept import kept_session
        from toolctl.mcp.service import connect

        service = _service(tool)
        name = _service_name(tool)
        budget = min(float(service.get("connect_timeout") or timeout), timeout)
        session: Session | KeptSession | None = kept_session(
            self.settings, name, service, tool.service_dir
        )
        if session is None:
            started = time.perf_counter()
            session = connect(self.settings, name, service, tool.service_dir, budget)
            _suggest_keep_alive(name, service, time.perf_counter() - started, sink)
        from toolctl.processes.cancelling import on_cancel

        try:
            with on_cancel(session.kill):  # a cancelled call stops the server it started
                listed = session.list_tools(budget)
        except BaseException:
            session.kill()
            raise
        return _Live(session, listed, _definition(tool))


@contextlib.contextmanager
def _entered(gate: threading.Lock) -> Iterator[None]:
    """Hold ``gate``, waiting for it as long as the call is not cancelled: a call waiting
    for another to connect its service stops when it is (its client gave up)."""
    from toolctl.errors import Interrupted
    from toolctl.processes.cancelling import on_cancel

    stop = threading.Event()
    with on_cancel(stop.set):
        while not gate.acquire(timeout=0.05):
            if stop.is_set():
                raise Interrupted("the call was stopped")
    try:
        yield
    finally:
        gate.release()


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


def _asker(call: Call, service: Mapping[str, Any]) -> Callable[[str, dict[str, Any]], Any]:
    """Who answers the server's requests during ``call``: whoever made the call (an MCP
    door's client); else, for an elicitation, the answers declared for the service
    (``elicit``) and given to the run (``--elicit``), or a decline; else a refusal."""

    def ask(method: str, params: dict[str, Any]) -> Any:
        from toolctl.mcp.asks import SAMPLING_DECLINED, Refused
        from toolctl.mcp.elicit import declared_answer
        from toolctl.mcp.wire import METHOD_NOT_FOUND

        answer = call.sink.ask(method, params)
        if answer is not None:
            return answer
        if method == "elicitation/create":
            answers = {**(service.get("elicit") or {}), **call.sink.answers}
            return declared_answer(
                params, answers, defaults=bool(service.get("elicit_defaults")),
                declined=call.sink.warning,
            )  # fmt: skip
        if method == "sampling/createMessage":  # declared in the handshake: rejected, -1
            raise Refused(SAMPLING_DECLINED, "toolctl declined sampling: no model answers it here")
        raise Refused(METHOD_NOT_FOUND, f"toolctl has nobody to ask for {method} here")

    return ask


def _unlike_schema(section: Mapping[str, Any], result: Mapping[str, Any]) -> str | None:
    """How a result breaks the ``outputSchema`` its tool declares (MCP: a server MUST give
    ``structuredContent`` conforming to it, and clients check), or None."""
    schema = section.get("output_schema")
    if not isinstance(schema, dict):
        return None
    structured = result.get("structuredContent")
    if structured is None:
        return "it gave no structuredContent"
    from toolctl.schemas import SchemaProblem

    try:
        _output_validator(json.dumps(schema, sort_keys=True))(structured)
    except SchemaProblem:
        return None  # a schema no validator takes: `check` tells of it, not each call
    except Exception as exc:  # fastjsonschema's JsonSchemaValueException
        return str(getattr(exc, "message", exc))[:300]
    return None


@functools.lru_cache(maxsize=64)
def _output_validator(schema: str) -> Callable[[Any], Any]:
    """A compiled validator of an ``outputSchema`` (its JSON text): compiled once, not at
    every call (fastjsonschema generates and compiles code)."""
    from toolctl.schemas import compile_schema

    return compile_schema(json.loads(schema))


def _own_server(live: _Live) -> bool:
    """Whether the session's server is a process of this runner's own (stdio, not kept)."""
    from toolctl.mcp.keeper import KeptSession

    return live.session.local and not isinstance(live.session, KeptSession)


def _pin_drift(tool: ToolSpec, section: Mapping[str, Any], definition: Mapping[str, Any]) -> None:
    """PinDrift for a tool whose server's ``definition`` is not the one pinned."""
    from toolctl.mcp.pins import UPDATE_HINT, changed_fields

    changed = changed_fields(tool.data, section, definition)
    what = ", ".join(changed)
    service = _service_name(tool)
    raise PinDrift(
        f"MCP tool '{section['name']}' of service '{service}' changed since it was pinned "
        f"({what}); tool '{tool.name}' is not run",
        hint=UPDATE_HINT.format(service=service),
    )


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


def _once_more(tool: ToolSpec, attempt: Callable[[], _T], drop: Callable[[str], None]) -> _T:
    """``attempt()``; refused with a token a refresh has since replaced, or in a session the
    server no longer knows (HTTP 404: a server restarted), the request was never run, and
    it goes once more for each, in a new session (``drop`` forgets the old one), as the
    protocol says a client starts a new session."""
    from toolctl.mcp.http import SessionExpired
    from toolctl.mcp.oauth import LoginNeeded, Refreshed

    again: set[type[Exception]] = set()
    while True:
        try:
            return attempt()
        except SessionExpired:
            if SessionExpired in again:
                raise
            again.add(SessionExpired)
            drop(_service_name(tool))
        except Refreshed as refused:
            if Refreshed in again:
                raise LoginNeeded(
                    f"MCP service '{_service_name(tool)}' needs a login (a refreshed token "
                    "was refused too)",
                    hint=refused.hint,
                ) from None
            again.add(Refreshed)


def _service_name(tool: ToolSpec) -> str:
    return str((tool.service or {}).get("name", "?"))


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
