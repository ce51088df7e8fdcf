"""What an HTTP tool's request carries and how its answer reads: headers checked and kept
out of messages, GET query values, the result of a success or a failure."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolctl.errors import UsageError
from toolctl.runners.base import ToolResult, finite_json
from toolctl.urls import header_problem, shown_header

if TYPE_CHECKING:
    import httpx

RUNTIME = "http"
MAX_REDIRECTS = 5
EXCERPT = 200


def query(arguments: Mapping[str, Any]) -> dict[str, str]:
    """GET parameters: strings as they are, everything else JSON-encoded (``true``, ``3``)."""
    return {
        key: value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        for key, value in arguments.items()
        if value is not None
    }


def same_origin(target: httpx.URL, origin: httpx.URL) -> bool:
    return (target.scheme, target.host, target.port) == (origin.scheme, origin.host, origin.port)


def success_result(text: str, duration_ms: float) -> ToolResult:
    result = ToolResult.from_answer(text, runtime=RUNTIME, duration_ms=duration_ms)
    # plain JSON data (not ToolResult-shaped) with an "output" field: that is the observation
    if isinstance(result.data, dict) and result.output == text.rstrip("\n"):
        answer = result.data.get("output")
        if isinstance(answer, str):
            return result._replace(output=answer)
    return result


def failure_result(
    response: httpx.Response, method: str, url: str, duration_ms: float, text: str
) -> ToolResult:
    """A failed answer as the call's result: its status and an excerpt of ``text`` (its
    body decoded) as the error, its JSON (when it is JSON) as ``data``."""
    status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
    location = response.headers.get("location")
    if response.is_redirect and location:
        reason = f"{status} from {method} {url}: redirect to {location} not followed"
        following = response.next_request
        cross = following is not None and not same_origin(following.url, response.request.url)
        reason += " (another host)" if cross else f" (more than {MAX_REDIRECTS} redirects)"
    else:
        reason = f"{status} from {method} {url}: {_excerpt(text) or '(empty body)'}"
    try:  # a body nested past Python's recursion is no JSON to keep either
        data = finite_json(json.loads(text)) if text.strip() else None
    except (ValueError, RecursionError):
        data = None
    return ToolResult(False, "", data, reason, duration_ms=duration_ms, transport=RUNTIME)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[:EXCERPT] + "…"


def check_headers(tool: str, headers: Mapping[str, str]) -> None:
    """A UsageError (exit 2) naming the first header that cannot be sent, and why; the value
    itself (a secret from ``${env:...}``, as often as not) is never part of the message."""
    for name, value in headers.items():
        why = header_problem(name, value)
        if why:
            raise UsageError(
                f"tool '{tool}': header {shown_header(name)} cannot be sent: {why} "
                "(the value is not shown)",
                hint="check the environment variable the header takes its value from",
            )


def redact(message: str, headers: Mapping[str, str]) -> str:
    """``message`` with every header value (and its repr) replaced by ``***``."""
    for value in headers.values():
        for shown in {
            value,
            value.strip(),
            repr(value)[1:-1],
            repr(value.encode(errors="replace"))[2:-1],
        }:
            if len(shown) >= 4:
                message = message.replace(shown, "***")
    return message
