"""An MCP server built with the official SDK (1.x or 2.x) that misbehaves on request.

Tools: echo (its description comes from PROBE_DESCRIPTION: the rug-pull), fail (raises),
hang, flood (writes endless bytes to stdout), exit_now (dies mid-call), ask_sampling (asks
the client for sampling mid-call), progress (reports progress), picture (an image).
Environment: PROBE_START_DELAY (seconds to sleep before serving), PROBE_PID_FILE (write our pid and a helper child's pid there: a process tree),
PROBE_STDERR (written to stderr at start), PROBE_EXIT (exit with that code at start),
PROBE_TRANSPORT=http or sse with PROBE_PORT (streamable HTTP at /mcp, or the old HTTP+SSE
transport at /sse, instead of stdio), PROBE_PAGE_SIZE
(tools/list in pages of that many tools, with nextCursor), PROBE_DEFECT_TOOLS=1 (noted: a schema with default null; block: a sync sleep; marked: a sleep, then a file; get_env; write_note: a title and
a destructiveHint; needs_task: requires task support), PROBE_EXTRA_TOOLS (comma-separated
names of more tools that echo: a homoglyph of another tool, a name another server offers),
PROBE_DUPLICATE (a tool's name: tools/list lists it twice), PROBE_OFFER (a file: resources note://readme and note://pages/{page}, prompts greet and
farewell, the file's text added to the readme's and greet's descriptions).
On stdio, a filter in front of the SDK can make it an older or a newer server:
PROBE_ANSWER_VERSION=2025-06-18 hands the SDK that revision as the client's offer (so the
SDK negotiates and speaks it), PROBE_MODERN_ONLY=1 refuses ``initialize`` the way a
2026-07-28-only server does (error -32022 naming its versions); everything else passes.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # one checker run cannot see both SDKs: to it, both are Any
    Context = Any
    Server: Any = None
    SDK = 1
else:
    try:  # SDK 2.x
        from mcp.server.mcpserver import Context
        from mcp.server.mcpserver import MCPServer as Server

        SDK = 2
    except ImportError:  # SDK 1.x
        from mcp.server.fastmcp import Context
        from mcp.server.fastmcp import FastMCP as Server

        SDK = 1

F = TypeVar("F", bound=Callable[..., Any])

if os.environ.get("PROBE_START_DELAY"):  # a server slow to start (npx fetching a package)
    import time

    time.sleep(float(os.environ["PROBE_START_DELAY"]))
if os.environ.get("PROBE_STDERR"):
    sys.stderr.write(os.environ["PROBE_STDERR"] + "\n")
    sys.stderr.flush()
if os.environ.get("PROBE_EXIT"):
    sys.stderr.write("probe: refusing to start\n")
    sys.exit(int(os.environ["PROBE_EXIT"]))
if os.environ.get("PROBE_PID_FILE"):
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["PROBE_PID_FILE"], "w") as pids:
        pids.write(f"{os.getpid()} {helper.pid}\n")


def _filter_stdin() -> None:
    """Put a thread between our stdin and the SDK that rewrites or refuses ``initialize``."""
    original = os.fdopen(os.dup(0), "rb", buffering=0)
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    # the wire, kept now: the SDK 2.x points fd 1 at stderr once it serves (prints must not
    # corrupt the protocol), and a refusal written to fd 1 after that went to stderr, lost
    wire = os.dup(1)

    def pump() -> None:
        for line in iter(original.readline, b""):
            message = json.loads(line)
            if message.get("method") == "initialize" and os.environ.get("PROBE_MODERN_ONLY"):
                error = {"code": -32022, "message": "Unsupported protocol version"}
                error["data"] = {"supported": ["2026-07-28"], "requested": "2025-11-25"}
                os.write(
                    wire,
                    json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()
                    + b"\n",
                )
                continue
            if message.get("method") == "initialize" and os.environ.get("PROBE_ANSWER_VERSION"):
                message["params"]["protocolVersion"] = os.environ["PROBE_ANSWER_VERSION"]
                line = json.dumps(message).encode() + b"\n"
            os.write(write_end, line)
        os.close(write_end)

    threading.Thread(target=pump, daemon=True).start()


if os.environ.get("PROBE_MODERN_ONLY") or os.environ.get("PROBE_ANSWER_VERSION"):
    _filter_stdin()

server: Any = Server("probe")


def tool(description: str) -> Callable[[F], F]:
    """The SDK's tool decorator (the same call in 1.x and 2.x)."""
    decorator: Callable[[F], F] = server.tool(description=description)
    return decorator


def typed(decorator: Any) -> Callable[[F], F]:
    """One of the SDK's other decorators (resource, prompt), as the checker sees it."""
    made: Callable[[F], F] = decorator
    return made


@tool(os.environ.get("PROBE_DESCRIPTION", "Echo the text back."))
def echo(text: str) -> str:
    return text


if os.environ.get("PROBE_OFFER"):  # resources, a template and a prompt; the file named
    # holds text added to their descriptions (a test changes it: the rug-pull)
    with open(os.environ["PROBE_OFFER"]) as _offer:
        _drift = _offer.read().strip()

    @typed(
        server.resource("note://readme", description=f"The readme.{_drift}", mime_type="text/plain")
    )
    def readme() -> str:
        return "Read me first."

    @typed(server.resource("note://pages/{page}", description="A page of notes."))
    def page(page: str) -> str:
        return f"page {page}"

    @typed(server.prompt(description=f"Greet someone.{_drift}"))
    def greet(name: str) -> str:
        return f"Say hello to {name}."

    @typed(server.prompt(description="Say goodbye."))
    def farewell() -> str:
        return "Say goodbye."


for _extra in filter(None, os.environ.get("PROBE_EXTRA_TOOLS", "").split(",")):
    # more tools that echo, under the names given (a homoglyph, a name another server has)
    server.tool(name=_extra, description=f"Echo the text back ({_extra}).")(echo)


@tool("Raise an error with the message.")
def fail(message: str) -> str:
    raise ValueError(message)


@tool("Sleep for that many seconds.")
async def hang(seconds: float = 600) -> str:
    await asyncio.sleep(seconds)
    return "woke up"


@tool("Write endless bytes without a newline to stdout.")
def flood(megabytes: int = 64) -> str:
    block = b"x" * (1024 * 1024)
    for _ in range(megabytes):
        os.write(1, block)
    return "flooded"


@tool("Exit the whole server mid-call.")
def exit_now(code: int = 3) -> str:
    sys.stderr.write("probe: exiting mid-call\n")
    sys.stderr.flush()
    os._exit(code)


@tool("Ask the client for an LLM completion (sampling) mid-call.")
async def ask_sampling(prompt: str, ctx: Context, related: bool = True) -> str:
    from mcp import types

    message = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=prompt)
    )
    try:
        # tied to this call, over HTTP it rides on the call's own SSE stream; untied (as
        # some servers send it) on the standalone GET stream
        await ctx.session.create_message(
            messages=[message], max_tokens=5, related_request_id=ctx.request_id if related else None
        )
    except Exception as exc:
        return f"sampling refused: {exc}"
    return "sampling answered"


@tool("Report progress in that many steps.")
async def progress(steps: int, ctx: Context) -> str:
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"{steps} steps"


@tool("Return a 1x1 PNG.")
def picture() -> Any:
    import importlib

    module = "mcp.server.mcpserver" if SDK == 2 else "mcp.server.fastmcp"
    image: Any = importlib.import_module(module).Image
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e2212bc0000000"
        "0049454e44ae426082"
    )
    return image(data=png, format="png")


if os.environ.get("PROBE_DEFECT_TOOLS"):  # what real servers do that toolctl got wrong once

    @tool("Echo the text, with an optional note (its schema says default: null).")
    def noted(text: str, note: str | None = None) -> str:
        return text if note is None else f"{text} ({note})"

    @tool(
        "Sleep without yielding: a sync tool, which no cancel stops (FastMCP 1.x runs it on its loop)."
    )
    def block(seconds: float = 30) -> str:
        import time

        time.sleep(seconds)
        return "woke"

    @tool("Sleep, then write a file: one that is never written shows the call was cancelled.")
    async def marked(seconds: float, path: str) -> str:
        await asyncio.sleep(seconds)
        Path(path).write_text("ran to its end")
        return "marked"

    @tool("Read one variable of the server's environment.\n\nThe value, or '(unset)'.")
    def get_env(name: str) -> str:
        return os.environ.get(name, "(unset)")

    def _annotated() -> None:
        from mcp.types import ToolAnnotations

        def write_note(text: str) -> str:
            return f"wrote {text}"

        hints = ToolAnnotations(destructiveHint=True, readOnlyHint=False)
        server.tool(
            name="write_note", title="Write a note", description="Write.", annotations=hints
        )(write_note)
        server.tool(name="needs_task", description="Runs only as a task.")(echo)

    _annotated()


@tool("Close this call's SSE stream early, then answer (HTTP only).")
async def drop_stream(ctx: Context) -> str:
    await ctx.report_progress(1, 2, "before the stream closes")
    await ctx.close_sse_stream()
    await asyncio.sleep(0.3)
    return "answered after the stream was resumed"


def _paginate(size: int) -> None:
    """Replace the SDK's tools/list handler with one that answers in pages."""
    from mcp import types

    async def page(cursor: str | None) -> Any:
        tools = await server.list_tools()
        twice = os.environ.get("PROBE_DUPLICATE")  # a server that lists a tool twice
        again = [
            t.model_copy(update={"description": "listed again"}) for t in tools if t.name == twice
        ]
        tools = [*tools, *again]  # the second unlike the first: which one counts shows
        start = int(cursor or 0)
        end = start + size
        more = str(end) if end < len(tools) else None
        for listed in tools:  # a tool that needs task support (no SDK decorator says so)
            if listed.name == "needs_task":
                listed.execution = types.ToolExecution(taskSupport="required")
        return types.ListToolsResult.model_validate({"tools": tools[start:end], "nextCursor": more})

    if SDK == 2:

        async def handler2(ctx: Any, params: Any) -> Any:
            return await page(params.cursor if params else None)

        server._lowlevel_server.add_request_handler(
            "tools/list", types.PaginatedRequestParams, handler2
        )
    else:

        async def handler1(request: Any) -> Any:
            params = request.params if request is not None else None  # None: the SDK's own look
            return types.ServerResult(await page(params.cursor if params else None))

        server._mcp_server.request_handlers[types.ListToolsRequest] = handler1


if any(os.environ.get(v) for v in ("PROBE_PAGE_SIZE", "PROBE_DEFECT_TOOLS", "PROBE_DUPLICATE")):
    _paginate(int(os.environ.get("PROBE_PAGE_SIZE") or 1000))


def _event_store() -> Any:
    """The smallest in-memory EventStore: what the SDK needs to resume streams."""
    from mcp.server.streamable_http import EventMessage, EventStore

    class Store(EventStore):
        def __init__(self) -> None:
            self.events: list[tuple[str, str, Any]] = []

        async def store_event(self, stream_id: str, message: Any) -> str:
            event_id = str(len(self.events) + 1)
            self.events.append((event_id, stream_id, message))
            return event_id

        async def replay_events_after(self, last_event_id: str, send_callback: Any) -> Any:
            stream = next((s for e, s, _ in self.events if e == last_event_id), None)
            if stream is None:
                return None
            for event_id, stream_id, message in self.events[int(last_event_id) :]:
                if stream_id == stream and message is not None:
                    await send_callback(EventMessage(message, event_id))
            return stream

    return Store()


if __name__ == "__main__":
    if os.environ.get("PROBE_TRANSPORT") == "sse":  # the old HTTP+SSE transport (/sse)
        port = int(os.environ["PROBE_PORT"])
        if SDK == 2:
            server.run("sse", host="127.0.0.1", port=port)
        else:
            server.settings.host, server.settings.port = "127.0.0.1", port
            server.run("sse")
    elif os.environ.get("PROBE_TRANSPORT") == "http":
        port = int(os.environ["PROBE_PORT"])
        if SDK == 2:
            server.run(
                "streamable-http",
                host="127.0.0.1",
                port=port,
                event_store=_event_store(),
                retry_interval=100,
            )
        else:
            server.settings.host, server.settings.port = "127.0.0.1", port
            server._event_store, server._retry_interval = _event_store(), 100
            server.run("streamable-http")
    else:
        server.run()
