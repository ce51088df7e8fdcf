"""The TrustGraph tool-service envelope, both directions, byte for byte.

Byte-compatible with TrustGraph's ``DynamicToolService`` (trustgraph-base 2.11), which
serialises its dataclasses with ``json.dumps`` and its default separators:

* request body ``{"user": U, "config": "<JSON>", "arguments": "<JSON>"}`` (config and
  arguments are JSON *strings*), message property ``id`` = a fresh UUID;
* response body ``{"error": null | {"type": T, "message": M}, "response": "<text>",
  "end_of_stream": bool}`` with the request's ``id``; a stream is several responses, the
  last with ``end_of_stream`` true.

toolctl adds message properties to a request: ``deadline``, when its caller gives up
(milliseconds since the epoch), ``traceparent``, the caller's W3C trace context, and
``progress`` = ``1`` when the caller takes progress. A TrustGraph worker ignores
properties it does not know; toolctl's worker skips a request whose deadline has passed,
continues the caller's trace, and answers a request that takes progress with partial
responses before the final one:

    {"error": null, "response": "", "end_of_stream": false,
     "progress": {"progress": 50, "total": 100, "message": "halfway"}}
    {"error": null, "response": "", "end_of_stream": false,
     "log": {"level": "info", "message": "..."}}

Only when asked: TrustGraph's ``ToolServiceClient.call`` takes the *first* response with
the request's id as the answer, so an unasked partial would become an empty answer. A
streaming TrustGraph client (``call_streaming``) that got one anyway would skip it: its
``response`` is empty and its dataclass drops keys it does not know.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolctl.arguments import printable_text

ERROR_TYPE = "tool-service-error"
"""The error ``type`` a worker answers with when its handler raised."""
TIMED_OUT_TYPE = "toolctl-timed-out"
"""The error type of a hosted tool that ran past the timeout its worker's descriptor sets:
the caller ends as a call that timed out (124), not as a tool that failed."""
STOPPED_TYPE = "toolctl-worker-stopped"
"""The error type of a call its worker gave up as it stopped (past its drain, or a second
signal): the tool did not fail, its host went away (a toolctl caller: exit 5)."""
DEADLINE = "deadline"
"""The request property: when the caller gives up, in ms since the epoch (wall clock)."""


PROGRESS = "progress"
"""The request property saying the caller takes partial responses reporting progress and
log messages (value ``1``); a request without it gets none."""
TRACEPARENT = "traceparent"
"""The request property carrying the caller's W3C trace context (the worker's span
continues its trace); TrustGraph workers ignore it as they ignore ``deadline``."""


def request_properties(
    call_id: str, timeout: float, traceparent: str | None = None, progress: bool = False
) -> dict[str, str]:
    """A request's message properties: its ``id``, its ``deadline`` ``timeout`` s away,
    the caller's ``traceparent`` when it has one, and ``progress`` when it takes progress."""
    properties = {"id": call_id, DEADLINE: str(int((time.time() + timeout) * 1000))}
    if traceparent:
        properties[TRACEPARENT] = traceparent
    if progress:
        properties[PROGRESS] = "1"
    return properties


def takes_progress(properties: Mapping[str, str]) -> bool:
    """Whether a request asked for progress partials (its ``progress`` property is ``1``)."""
    return properties.get(PROGRESS) == "1"


def expired(properties: Mapping[str, str], now: float | None = None) -> bool:
    """Whether a request's ``deadline`` has passed (no or a malformed deadline: never)."""
    given = properties.get(DEADLINE)
    if not given or len(given) > 18 or not (given.isascii() and given.isdigit()):
        return False
    return int(given) < (time.time() if now is None else now) * 1000


def encode_request(user: str, config: Mapping[str, Any], arguments: Mapping[str, Any]) -> bytes:
    """The request body, byte for byte what TrustGraph's ToolServiceClient sends."""
    body = {"user": user, "config": json.dumps(dict(config)), "arguments": json.dumps(arguments)}
    return json.dumps(body).encode("utf-8")


def decode_request(body: bytes) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(config, arguments, user) of a request body; ValueError says what is wrong with it.

    As in TrustGraph, an empty config or arguments is ``{}`` and a missing user is
    ``trustgraph``; an object where a JSON string belongs is accepted as it is.
    """
    try:
        request = json.loads(body)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the stack
        raise ValueError(f"request is not JSON: {exc}") from exc
    if not isinstance(request, dict):
        raise ValueError("request is not a JSON object")
    config = _json_field(request, "config")
    arguments = _json_field(request, "arguments")
    return config, arguments, str(request.get("user") or "trustgraph")


def _json_field(request: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = request.get(key) or {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"request {key} is not a JSON string: {exc}") from exc
    if not isinstance(value, dict):
        raise ValueError(f"request {key} is not a JSON object")
    return value


def encode_response(
    text: str = "", *, error: tuple[str, str] | None = None, end_of_stream: bool = True
) -> bytes:
    """A response body, byte for byte what TrustGraph's DynamicToolService sends."""
    body = {
        "error": None if error is None else {"type": error[0], "message": error[1]},
        "response": text,
        "end_of_stream": end_of_stream,
    }
    return json.dumps(body).encode("utf-8")


def encode_progress(progress: float, total: float | None, message: str | None) -> bytes:
    """A partial response reporting progress (sent only to a request that takes it)."""
    report = {"progress": progress, "total": total, "message": message}
    return _partial("progress", report)


def encode_log(level: str, message: str) -> bytes:
    """A partial response carrying a log message (sent only to a request that takes it)."""
    return _partial("log", {"level": level, "message": message})


def _partial(key: str, report: dict[str, Any]) -> bytes:
    body = {"error": None, "response": "", "end_of_stream": False, key: report}
    return json.dumps(body).encode("utf-8")


@dataclass(frozen=True)
class Response:
    """One response message: a chunk of text, or an error, and whether the stream ended;
    a partial may report progress ``(progress, total, message)`` or a log ``(level,
    message)`` instead of text."""

    text: str
    error: str | None
    end_of_stream: bool
    progress: tuple[float, float | None, str | None] | None = None
    log: tuple[str, str] | None = None


def decode_response(body: bytes) -> Response:
    """Read a response body; a non-string ``response`` is JSON, a malformed body an error."""
    try:
        parsed = json.loads(body)
        if not isinstance(parsed, dict):
            raise ValueError("not a JSON object")
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past Python's stack
        return Response("", f"malformed response: {exc}", True)
    error, answer = parsed.get("error"), parsed.get("response")
    text = answer if isinstance(answer, str) else ("" if answer is None else json.dumps(answer))
    text = printable_text(text)  # "\ud83d", half an emoji: no UTF-8 writer takes it (exit 70)
    if error:
        kind, message = (
            (_said(error.get("type")) or "error", _said(error.get("message")))
            if isinstance(error, dict)
            else ("error", _said(error))
        )
        told = printable_text(f"{kind}: {message}" if message else kind)
        return Response(text, told, True)
    end = bool(parsed.get("end_of_stream", True))
    if not end:
        report = _progress(parsed.get("progress"))
        return Response(text, None, False, report, _log(parsed.get("log")))
    return Response(text, None, True)


def _said(value: Any) -> str:
    """An error's type or message as text: itself when it is text, else its JSON (a list
    or an object was told as a Python repr, ``{'x': 1}``)."""
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _finite(value: Any) -> float | None:
    """A JSON number as a finite float; None for anything else (NaN, infinities, an integer
    too large for a float, a boolean, a string)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _progress(report: Any) -> tuple[float, float | None, str | None] | None:
    """A partial's progress report, or None when it has none (or a malformed one)."""
    if not isinstance(report, dict):
        return None
    progress = _finite(report.get("progress"))
    if progress is None:
        return None
    message = report.get("message")
    return (
        progress,
        _finite(report.get("total")),
        printable_text(message) if isinstance(message, str) and message else None,
    )


def _log(report: Any) -> tuple[str, str] | None:
    """A partial's log message, or None when it has none (or a malformed one)."""
    if not isinstance(report, dict):
        return None
    level, message = report.get("level"), report.get("message")
    if not isinstance(level, str) or not isinstance(message, str):
        return None
    return printable_text(level), printable_text(message)


def fresh_id() -> str:
    """A random (version 4) UUID for a request's ``id``.

    From a PRNG seeded from the OS once per process: ``uuid.uuid4()`` asks the kernel for 16
    bytes per call, a system call that costs as much as the rest of a pipelined call under
    gVisor. A forked child seeds it again: with the parent's state, every child of a fork
    pool made the same ids, and callers sharing a response topic took each other's answers.
    """
    return str(uuid.UUID(int=_random.getrandbits(128), version=4))


_random = random.Random()
os.register_at_fork(after_in_child=_random.seed)
