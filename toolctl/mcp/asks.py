"""What a server sends during a session without being asked: its requests (sampling,
elicitation, roots), answered by the call's ``on_request`` or refused, and the progress and
log notifications handed to the call's callbacks."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from toolctl.mcp.wire import METHOD_NOT_FOUND, Message, error_response


class Progress(NamedTuple):
    progress: float
    total: float | None
    message: str | None


OnProgress = Callable[[Progress], None]
OnLog = Callable[[str, str], None]
"""Where a server's log message goes: its level and its text."""
OnRequest = Callable[[str, dict[str, Any]], dict[str, Any]]
"""Who answers a server's request during a call: its method and params to its result (or
``Refused``)."""


ASKED = frozenset({"sampling/createMessage", "elicitation/create", "roots/list"})
"""The server requests a call's ``on_request`` answers."""
INTERNAL_ERROR = -32603


class Refused(Exception):
    """An ``on_request`` that will not answer: the server gets this JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


SAMPLING_DECLINED = -1
"""The error the protocol gives a client that rejects a sampling request."""


def refusal(message: Message) -> Message:
    """A server request nobody answers: an elicitation declined, a sampling request
    rejected (toolctl declares sampling: a door's client answers it when there is one),
    anything else refused as a method toolctl does not offer (roots)."""
    if message["method"] == "elicitation/create":
        return {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "decline"}}
    if message["method"] == "sampling/createMessage":
        return error_response(
            message["id"], SAMPLING_DECLINED, "toolctl declined sampling: no model answers it here"
        )
    return error_response(
        message["id"], METHOD_NOT_FOUND, f"toolctl does not support {message['method']}"
    )


def report_progress(callback: OnProgress, params: Mapping[str, Any]) -> None:
    progress, total = params.get("progress"), params.get("total")
    if not isinstance(progress, (int, float)):
        return
    message = params.get("message")
    update = Progress(
        float(progress),
        float(total) if isinstance(total, (int, float)) else None,
        message if isinstance(message, str) else None,
    )
    with contextlib.suppress(Exception):  # a display callback must never end the session
        callback(update)


def forward_log(callback: OnLog, params: Mapping[str, Any]) -> None:
    level, data = params.get("level"), params.get("data")
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    with contextlib.suppress(Exception):  # as for progress: never ends the session
        callback(str(level or "info"), text)
