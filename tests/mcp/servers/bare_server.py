"""A bare MCP server over stdio, its JSON-RPC written by hand (no SDK), for what an SDK
server will not do. One tool, ``t``, answering "ok"; ``BARE_CALL`` changes what
``tools/call`` does:

* ``silent``: never answered (a handler that blocks: cancelled or not, no answer comes);
* ``noisy``: a progress notification and a log message full of terminal escapes first;
* ``schema``: the tool is ``weather`` with an ``outputSchema`` (``temp``: a number); its
  answer for ``city`` ``ok`` conforms, ``bad`` breaks it, ``none`` gives no structured
  content;
* ``malformed``: more tools: ``broken``, whose ``inputSchema`` is a string; ``lone``, whose
  description holds a lone surrogate; ``deep``, whose ``inputSchema`` nests 300 levels; ``huge``, an enum of 200,000 values;
  ``annotated``, whose ``title`` annotation is a number; two entries that are no tools
  (a name that is a number, a string); and ``t`` answers a lone surrogate.

``BARE_PID_FILE`` gets the server's pid; ``BARE_LINGER`` seconds it stays once its stdin
has closed (a ``docker run -i`` server, work to finish: slow to stop).
"""

import json
import os
import sys
import time
from typing import Any

MODE = os.environ.get("BARE_CALL", "answer")
if os.environ.get("BARE_PID_FILE"):
    with open(os.environ["BARE_PID_FILE"], "w") as pid:
        pid.write(str(os.getpid()))

TOOL: dict[str, Any] = {"name": "t", "description": "d", "inputSchema": {"type": "object"}}
WEATHER: dict[str, Any] = {
    "name": "weather",
    "description": "d",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    "outputSchema": {
        "type": "object",
        "properties": {"temp": {"type": "number"}},
        "required": ["temp"],
    },
}
FORECASTS: dict[str, dict[str, Any]] = {
    "ok": {"content": [{"type": "text", "text": "21"}], "structuredContent": {"temp": 21}},
    "bad": {"content": [{"type": "text", "text": "hot"}], "structuredContent": {"temp": "hot"}},
    "none": {"content": [{"type": "text", "text": "?"}]},
}
NOTES: list[dict[str, Any]] = [
    {"method": "notifications/progress", "params": {"progress": 1, "total": 2,
     "message": "prog \x1b[2J\u202eevil"}},
    {"method": "notifications/message", "params": {"level": "info",
     "data": "log \x1b]0;pwned\x07 end"}},
]  # fmt: skip


def send(message: dict[str, Any]) -> None:
    print(json.dumps({"jsonrpc": "2.0", **message}), flush=True)


def called(params: dict[str, Any]) -> dict[str, Any] | None:
    if MODE == "silent":
        return None
    if MODE == "schema":
        return FORECASTS.get(params.get("arguments", {}).get("city"), {})
    if MODE == "noisy":
        token = params.get("_meta", {}).get("progressToken")
        for note in NOTES:
            if note["method"] == "notifications/progress":
                note = {**note, "params": {**note["params"], "progressToken": token}}
            send(note)
    if MODE == "malformed":
        return {"content": [{"type": "text", "text": "bad \ud800"}]}
    return {"content": [{"type": "text", "text": "ok"}]}


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, params = message["method"], message.get("params") or {}
    result: dict[str, Any] | None
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "bare", "version": "1"}}  # fmt: skip
    elif method == "tools/list":
        result = {"tools": [WEATHER if MODE == "schema" else TOOL]}
        if MODE == "malformed":
            deep: dict[str, Any] = {"type": "object"}
            for _ in range(300):
                deep = {"type": "object", "properties": {"x": deep}}
            result["tools"] += [
                {"name": "broken", "description": "d", "inputSchema": "x"},
                {"name": "lone", "description": "bad \ud800", "inputSchema": {"type": "object"}},
                {"name": "deep", "description": "d", "inputSchema": deep},
                {"name": "huge", "description": "d", "inputSchema": {"type": "object",
                 "properties": {"a": {"enum": list(range(200_000))}}}},
                {"name": "annotated", "description": "d", "inputSchema": {"type": "object"},
                 "annotations": {"title": 5, "readOnlyHint": True}},
                {"name": 5}, "x",
            ]  # fmt: skip
    elif method == "tools/call":
        result = called(params)
        if result is None:
            continue
    else:
        result = {}
    send({"id": message["id"], "result": result})
time.sleep(float(os.environ.get("BARE_LINGER", "0")))
