"""tool_agent's router as a runtime: ``POST {router}/run_tool {"tool_id", "params"}``.

Registered like any third-party runtime (``runtime = "tool-agent"``); the tool's
``options`` say where the router is (``router``, tool_agent's fixed port 8001 by default)
and which ``tool_id`` it knows the tool by. A router that cannot be reached is exit 5;
an HTTP error status is the tool failing (exit 1). Standard library only: the router is
on this machine and one call is one request.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any

from toolctl.errors import TimedOut, TransportUnavailable, UsageError
from toolctl.runners.base import Call, ToolResult, ToolSpec
from toolctl.settings import Settings

RUNTIME = "tool-agent"
DEFAULT_ROUTER = "http://127.0.0.1:8001"
GATEWAY_HEADER = "X-Toolctl-Gateway"
GATEWAY_ID = os.urandom(8).hex()
"""This process's mark on every call it sends a router. `toolctl serve` listens on 8001
too, tool_agent's port: serving tools imported from tool_agent with both defaults, each
call was sent to the gateway itself, and on (one call, a dozen nested, every slot held
until the timeout). A gateway that receives its own mark refuses the call at once."""


class ToolAgentRunner:
    runtime = RUNTIME

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def describe(self, call: Call) -> dict[str, Any]:
        router, tool_id = _target(call.tool)
        return {
            "transport": RUNTIME,
            "url": f"{router}/run_tool",
            "body": {"tool_id": tool_id, "params": call.arguments},
            "timeout": call.timeout,
        }

    def run(self, call: Call) -> ToolResult:
        router, tool_id = _target(call.tool)
        body = json.dumps({"tool_id": tool_id, "params": call.arguments}).encode()
        headers = {"Content-Type": "application/json", GATEWAY_HEADER: GATEWAY_ID}
        if call.traceparent:
            headers["traceparent"] = call.traceparent
        request = urllib.request.Request(f"{router}/run_tool", body, headers)
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=call.timeout) as response:
                text = response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")
            took = _ms(started)
            error = f"tool_agent router answered HTTP {exc.code}" + _said(detail)
            return ToolResult(False, detail, None, error, None, took, RUNTIME)
        except TimeoutError as exc:
            raise TimedOut(
                f"no answer from tool_agent router {router} within {call.timeout:g} s"
            ) from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                raise TimedOut(
                    f"no answer from tool_agent router {router} within {call.timeout:g} s"
                ) from exc
            raise TransportUnavailable(
                f"tool_agent router {router} is not reachable: {reason}",
                hint="start tool_agent (its router listens on port 8001) or set "
                "options.router in the tool's descriptor",
            ) from exc
        return ToolResult.from_answer(text, runtime=RUNTIME, gateway=True, duration_ms=_ms(started))

    def close(self) -> None:
        pass


def _said(detail: str) -> str:
    """``: ERROR`` when an error answer is a result (`toolctl serve`'s) saying why."""
    try:
        said = json.loads(detail).get("error")
    except (ValueError, AttributeError):
        return ""
    return f": {said}" if isinstance(said, str) and said else ""


def _target(tool: ToolSpec) -> tuple[str, str]:
    options = tool.data.get("options") or {}
    router = str(options.get("router") or DEFAULT_ROUTER).rstrip("/")
    if not router.startswith(("http://", "https://")):
        raise UsageError(f"tool '{tool.name}': options.router must be an http(s) URL")
    return router, str(options.get("tool_id") or tool.name)


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)
