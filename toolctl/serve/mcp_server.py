"""The registry as an MCP server on the official SDK's low-level Server (stdio or HTTP).

``tools/list`` is the catalog's listing, which is ``export --format mcp`` of the selected
tools, as it is. ``tools/call`` goes through the Dispatcher. Errors follow the 2025-11-25
revision: an unknown tool is a JSON-RPC error (-32602); invalid arguments, a failed tool,
a timeout, an unreachable transport or a pinned MCP tool its server changed are ``isError``
results carrying toolctl's one-line message, so the model can correct itself.
``notifications/tools/list_changed`` goes to every session that has asked for the list
once the registry changes on disk. With
``--adaptive K`` (``serve/adaptive.py``) each session is listed its own top K tools, and
told list_changed when a call changes them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
import weakref
from typing import TYPE_CHECKING, Any

import anyio
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.session import ServerSession
from mcp.shared.exceptions import McpError
from pydantic import PrivateAttr

from toolctl import __version__
from toolctl.arguments import is_text, printable_text
from toolctl.errors import NameConflict, NotFound, PinDrift, RegistryError, ToolctlError
from toolctl.records import Origin
from toolctl.runners.base import ToolResult
from toolctl.serve.dispatch import Dispatcher

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

    from toolctl.processes.lifetime import Lifetime
    from toolctl.serve.adaptive import Adaptive

    Incoming = MemoryObjectReceiveStream[SessionMessage | Exception]
    Outgoing = MemoryObjectSendStream[SessionMessage]

POLL_SECONDS = 1.0
"""How often the registry's fingerprint is compared for list_changed."""


class ToolServer:
    """The low-level MCP Server with toolctl's two handlers and its listening sessions."""

    def __init__(self, dispatcher: Dispatcher, adaptive: Adaptive | None = None) -> None:
        self.dispatcher, self.adaptive = dispatcher, adaptive
        self.server: Server[Any, Any] = _Server("toolctl", version=__version__)
        self.server.request_handlers[types.ListToolsRequest] = self._list
        self.server.request_handlers[types.CallToolRequest] = self._call
        self.server.request_handlers[types.SetLevelRequest] = self._set_level
        from toolctl.serve.upstream import Upstreams, install

        install(self.server, Upstreams(dispatcher))
        self._sessions: weakref.WeakSet[ServerSession] = weakref.WeakSet()
        self._levels: weakref.WeakKeyDictionary[ServerSession, str] = weakref.WeakKeyDictionary()
        self._listed: tuple[dict[str, Any], _Listing] | None = None
        self._running: dict[tuple[str | None, str | None], anyio.CancelScope] = {}
        self.stdio_session = f"mcp-{uuid.uuid4().hex[:16]}"
        """The session of every call over stdio (one client per process)."""

    def initialization_options(self) -> Any:
        return self.server.create_initialization_options()

    async def _list(self, request: types.ListToolsRequest) -> types.ServerResult:
        session = self.server.request_context.session
        cursor = request.params.cursor if request.params is not None else None
        if cursor is not None:  # the list is one page: no cursor was handed out (MCP: -32602)
            raise McpError(
                types.ErrorData(
                    code=types.INVALID_PARAMS,
                    message="Invalid params: unknown cursor (tools/list is one page)",
                )
            )
        self._sessions.add(session)
        if self.adaptive is not None:
            return self._narrowed(session, self.adaptive)
        listing = self.dispatcher.catalog.snapshot.listing
        if self._listed is None or self._listed[0] is not listing:
            result = types.ServerResult(types.ListToolsResult.model_validate(listing))
            self._listed = (listing, _Listing.of(result))
        return self._listed[1]

    def _narrowed(self, session: ServerSession, adaptive: Adaptive) -> types.ServerResult:
        """The session's own list: its pinned and top K tools, in that order."""
        snapshot = self.dispatcher.catalog.snapshot
        by_name = {tool["name"]: tool for tool in snapshot.listing.get("tools", [])}
        listed = {name: data for name, data in snapshot.tools.items() if name in by_name}
        shown = adaptive.shown(session, listed)
        tools = [by_name[name] for name in shown if name in by_name]
        listing = {**snapshot.listing, "tools": tools}
        return types.ServerResult(types.ListToolsResult.model_validate(listing))

    async def _set_level(self, request: types.SetLevelRequest) -> types.ServerResult:
        """``logging/setLevel``: the least level of the log messages this session is sent."""
        self._levels[self.server.request_context.session] = request.params.level
        return types.ServerResult(types.EmptyResult())

    async def _call(self, request: types.CallToolRequest) -> types.ServerResult:
        from toolctl.serve.mcp_forward import CallSink

        context = self.server.request_context
        session = context.session
        self._sessions.add(session)
        name = request.params.name
        if not is_text(name):  # no tool has such a name, and the answer must not carry it
            raise McpError(
                types.ErrorData(
                    code=types.INVALID_PARAMS,
                    message=f"Unknown tool: {printable_text(name)} is not valid Unicode",
                )
            )
        origin = self._origin()
        sink = CallSink(
            self.dispatcher.log_sink,
            session,
            request_id=context.request_id,
            progress_token=context.meta.progressToken if context.meta is not None else None,
            logger=name,
            level=self._levels.get(session),
        )
        key = (origin.session, origin.call_id)
        try:
            with anyio.CancelScope() as scope:
                self._running[key] = scope
                result = await self.dispatcher.call(
                    name, request.params.arguments or {}, via="mcp", origin=origin, sink=sink
                )
            if scope.cancelled_caught:  # its client went away (cancel_call): nobody reads this
                return types.ServerResult(_failed("the client went away; the call was cancelled"))
        except (NotFound, NameConflict) as exc:  # a look-alike is no tool to call either
            raise McpError(
                types.ErrorData(code=types.INVALID_PARAMS, message=f"Unknown tool: {exc}")
            ) from None
        except PinDrift as exc:  # its server changed the tool: the tool's answer, told
            answer = _failed(str(exc))
        except RegistryError as exc:
            raise McpError(types.ErrorData(code=types.INTERNAL_ERROR, message=str(exc))) from None
        except ToolctlError as exc:
            answer = _failed(str(exc))
        else:
            answer = call_result(result)
        finally:
            self._running.pop(key, None)
        await sink.flush()
        await self._after_call(session, name)
        return types.ServerResult(answer)

    def cancel_call(self, session: str | None, call_id: str) -> bool:
        """Cancel the running tools/call ``call_id`` of an HTTP ``session`` (its client went
        away); whether one was running."""
        scope = self._running.get((recorded_session(session) or self.stdio_session, call_id))
        if scope is not None:
            scope.cancel()
        return scope is not None

    async def _after_call(self, session: ServerSession, name: str) -> None:
        """Adaptive serving: a call that changes the session's list is announced to it
        before its result goes out, so the client's next turn lists the new tools."""
        tools = self.dispatcher.catalog.snapshot.tools
        if self.adaptive is None or name not in tools:
            return
        if self.adaptive.called(session, name, tools):
            with contextlib.suppress(Exception):  # a client gone away: its result fails too
                await session.send_tool_list_changed()

    def _origin(self) -> Origin:
        """Who makes this tools/call: its MCP session (the ``Mcp-Session-Id`` over HTTP, the
        process's over stdio), its ``traceparent`` (``_meta``, else the HTTP header), its
        request id."""
        context = self.server.request_context
        meta = context.meta.model_extra if context.meta is not None else None
        traceparent = (meta or {}).get("traceparent")
        session = self.stdio_session
        http = context.request
        headers = getattr(http, "headers", None)
        if headers is not None:
            session = recorded_session(headers.get("mcp-session-id")) or session
            traceparent = traceparent or headers.get("traceparent")
        if not isinstance(traceparent, str):
            traceparent = None
        return Origin("mcp", session, traceparent, str(context.request_id))

    async def watch(self, interval: float = POLL_SECONDS) -> None:
        """Poll the registry; on a changed listing tell every session that listed tools."""
        while True:
            await anyio.sleep(interval)
            if await anyio.to_thread.run_sync(self.dispatcher.catalog.refresh):
                await self.notify_list_changed()

    async def notify_list_changed(self) -> None:
        for session in list(self._sessions):
            try:
                await session.send_tool_list_changed()
            except Exception:  # a session whose client went away: forget it
                self._sessions.discard(session)


class _Server(Server[Any, Any]):
    """The SDK's Server, advertising ``tools.listChanged`` whoever asks for its options:
    the streamable HTTP manager asks with none, and list_changed is sent over HTTP too."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
    ) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities or {},
        )


_SDK_DUMP = {"by_alias": True, "mode": "json", "exclude_none": True}
"""How the SDK dumps a handler's result before it sends it (``BaseSession._send_response``)."""


class _Listing(types.ServerResult):
    """A tools/list result dumped once, not on every request: the SDK dumps whatever a
    handler returns each time, which for 10,000 tools is ~100 ms and ~100,000 objects."""

    _dumped: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def of(cls, result: types.ServerResult) -> _Listing:
        listing = cls(result.root)
        listing._dumped = result.model_dump(**_SDK_DUMP)  # type: ignore[arg-type]
        return listing

    def model_dump(self, **options: Any) -> dict[str, Any]:
        if options == _SDK_DUMP:
            return self._dumped
        dumped: dict[str, Any] = super().model_dump(**options)
        return dumped


def call_result(result: ToolResult) -> types.CallToolResult:
    """A ToolResult as MCP content: the MCP result the tool gave, as it is (an MCP
    server's, or a tool's declaring ``output = "mcp"``); else the output as text, JSON
    object data as structured."""
    if result.mcp is not None:
        with contextlib.suppress(ValueError):  # pydantic's ValidationError is one
            return types.CallToolResult.model_validate(result.mcp)
    if not result.success:
        failed = _failed(f"the tool failed: {result.error or 'no reason given'}", result.output)
        failed.content.extend(_cut(result))
        return failed
    structured = result.data if isinstance(result.data, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.output), *_cut(result)],
        structuredContent=structured,
        isError=False,
    )


def _cut(result: ToolResult) -> list[types.ContentBlock]:
    """A note that the output was cut at its max_output, as `run` says it (the model would
    otherwise take what it got for the whole answer)."""
    if not result.truncated:
        return []
    note = (
        f"toolctl: output truncated: {result.truncated} bytes past the tool's max_output "
        "were dropped"
    )
    return [types.TextContent(type="text", text=note)]


def recorded_session(session_id: str | None) -> str | None:
    """How an HTTP client's ``Mcp-Session-Id`` is kept (the run history, the logs): a
    digest, never the id, which is what another client would need to act in its session."""
    if not session_id:
        return None
    import hashlib

    return "mcp-" + hashlib.sha256(session_id.encode(errors="replace")).hexdigest()[:24]


def _failed(message: str, output: str = "") -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=message)]
    if output:
        content.append(types.TextContent(type="text", text=output))
    return types.CallToolResult(content=content, isError=True)


async def serve_stdio(
    tools: ToolServer, *, interval: float = POLL_SECONDS, lifetime: Lifetime | None = None
) -> None:
    """Serve on stdin/stdout until stdin closes, or until the ``lifetime``'s first signal;
    in-flight calls are then cancelled (their processes killed). File descriptor 1 is
    pointed at stderr first, so nothing but protocol (no stray print, no child's output)
    can reach stdout."""
    import asyncio

    from toolctl.serve.stdio_wire import stdio_transport

    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stdin = sys.stdin.buffer
    with anyio.CancelScope() as stopping:
        if lifetime is not None:
            loop = asyncio.get_running_loop()

            def stop(_signum: int) -> None:
                # a signal after serving ended (while upstream servers are being closed):
                # the loop is gone, and the lifetime's other callbacks end what is left
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(stopping.cancel)

            lifetime.on_stop(stop)
        async with (
            stdio_transport(stdin, protocol) as (read, write),
            anyio.create_task_group() as group,
        ):
            group.start_soon(tools.watch, interval)
            await tools.server.run(read, write, tools.initialization_options())
            group.cancel_scope.cancel()
