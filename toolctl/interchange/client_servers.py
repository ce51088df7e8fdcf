"""One server of an MCP client config, whichever client wrote it, as a ``Server``.

The fields each client spells its own way are read here in one place: the transport
(``type``/``transport``, ``url``/``httpUrl``/``serverUrl``), headers (``headers``, Codex's
``http_headers``, ``env_http_headers`` and ``bearer_token_env_var``, Continue's
``requestOptions.headers``), the state (``disabled``, ``enabled``), the tools to keep off
(``disabledTools``, ``disabled_tools``, ``excludeTools``) or on (``enabled_tools``,
``includeTools``), and the timeouts in the client's unit (Gemini CLI and Kiro count in
milliseconds, Cline and Roo Code in seconds, Codex says which).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from typing import Any

from toolctl.arguments import MAX_TIMEOUT
from toolctl.interchange.client_configs import KNOWN, NO_EQUIVALENT, Server

HTTP_TYPES = {"http", "streamable-http", "streamablehttp", "streamable_http", "streamable"}
MILLISECONDS = {"gemini", "kiro"}
SECONDS = {"cline", "roo"}


class _Bad(ValueError):
    """What makes one server unusable (the others in its file still import)."""


def server_of(name: str, value: Any, dialect: str) -> Server:
    """``value`` (a server's object in the file) read as a Server; a malformed one is a
    Server with a ``problem``."""
    if not isinstance(value, dict):
        return Server(name, problem="is not a JSON object")
    server = Server(name)
    if value.get("source") == "extension" and "command" not in value and "url" not in value:
        server.skip = "a Zed extension starts it: toolctl cannot see the command it runs"
        return server
    try:
        _where(server, value, dialect)
        _state(server, value)
        _timeouts(server, value, dialect)
    except _Bad as exc:
        return Server(name, problem=str(exc))
    description = value.get("description")
    server.description = description if isinstance(description, str) else None
    server.unmapped = _unmapped(value)
    return server


def _where(server: Server, value: Mapping[str, Any], dialect: str) -> None:
    given = value.get("transport")
    nested: dict[str, Any] = given if isinstance(given, dict) else {}
    merged = {**value, **nested}
    kind = merged.get("type", value.get("transport") if not nested else None)
    kind = str(kind).lower() if kind is not None else None
    url = merged.get("httpUrl") or merged.get("url") or merged.get("serverUrl")
    if "command" in merged and kind not in ("sse", *HTTP_TYPES):
        _stdio(server, merged)
        return
    if url is None:
        raise _Bad("neither 'command' (stdio) nor 'url' (streamable HTTP or SSE)")
    if not isinstance(url, str):
        raise _Bad("'url' is not a string")
    if kind in ("ws", "websocket"):
        raise _Bad("the WebSocket transport is not one toolctl's MCP client speaks")
    server.url = url
    if "httpUrl" in merged or kind in HTTP_TYPES:
        server.transport = "http"
    elif kind == "sse" or (dialect == "gemini" and "url" in merged):
        server.transport = "sse"  # Gemini CLI: url is SSE, httpUrl streamable HTTP
    server.headers = _headers(merged)


def _stdio(server: Server, value: Mapping[str, Any]) -> None:
    command = value["command"]
    args = value.get("args") or []
    env = value.get("env") or {}
    if isinstance(command, dict):  # Zed before 0.190: {"path", "args", "env"}
        args, env = command.get("args") or [], command.get("env") or {}
        command = command.get("path")
    if not isinstance(command, str) or not command:
        raise _Bad("'command' is not a non-empty string")
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        raise _Bad("'args' is not a list of strings")
    if not args and " " in command.strip():
        try:
            command, *args = shlex.split(command)  # "npx -y pkg" in one string
        except ValueError as exc:  # a quote never closed: this server is unreadable
            raise _Bad(f"'command' cannot be split into words: {exc}") from None
    server.command, server.args = command, [str(a) for a in args]
    server.env = _strings(env, "env")
    names = value.get("env_vars") or []  # Codex: variables passed through from the caller
    if not isinstance(names, list):
        raise _Bad("'env_vars' is not a list of names")
    for variable in names:
        server.env.setdefault(str(variable), "${env:" + str(variable) + "}")
    cwd = value.get("cwd")
    server.cwd = cwd if isinstance(cwd, str) and cwd else None


def _headers(value: Mapping[str, Any]) -> dict[str, str]:
    options = value.get("requestOptions")
    headers = {
        **_strings(value.get("headers") or {}, "headers"),
        **_strings(value.get("http_headers") or {}, "http_headers"),
        **_strings((options or {}).get("headers") or {} if isinstance(options, dict) else {},
                   "requestOptions.headers"),
    }  # fmt: skip
    for header, variable in _strings(
        value.get("env_http_headers") or {}, "env_http_headers"
    ).items():
        headers[header] = "${env:" + variable + "}"
    token = value.get("bearer_token_env_var")
    if isinstance(token, str) and token:
        headers["Authorization"] = "Bearer ${env:" + token + "}"
    return headers


def _strings(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _Bad(f"'{what}' is not an object")
    out = {}
    for key, item in value.items():
        if isinstance(item, (dict, list)) or item is None:
            raise _Bad(f"'{what}' value of {key} is not a string")
        out[str(key)] = str(item).lower() if isinstance(item, bool) else str(item)
    return out


def _state(server: Server, value: Mapping[str, Any]) -> None:
    server.disabled = value.get("disabled") is True or value.get("enabled") is False
    for key in ("disabledTools", "disabled_tools", "excludeTools"):
        server.disabled_tools += _names(value.get(key), key)
    for key in ("enabled_tools", "includeTools"):
        if value.get(key) is not None:
            server.enabled_tools = [*(server.enabled_tools or []), *_names(value[key], key)]


def _names(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad(f"'{key}' is not a list of tool names")
    return list(value)


def _timeouts(server: Server, value: Mapping[str, Any], dialect: str) -> None:
    """Timeouts in seconds, from whichever unit the client counts in."""
    if value.get("tool_timeout_sec") is not None:
        server.tool_timeout = _seconds(value["tool_timeout_sec"], "tool_timeout_sec", 1)
    elif value.get("timeout") is not None:
        server.tool_timeout = _seconds(
            value["timeout"], "timeout", _unit(value["timeout"], dialect)
        )
    if value.get("startup_timeout_sec") is not None:
        server.connect_timeout = _seconds(value["startup_timeout_sec"], "startup_timeout_sec", 1)
    elif value.get("startup_timeout_ms") is not None:
        server.connect_timeout = _seconds(value["startup_timeout_ms"], "startup_timeout_ms", 1000)
    elif value.get("connectionTimeout") is not None:
        given = value["connectionTimeout"]
        server.connect_timeout = _seconds(given, "connectionTimeout", _unit(given, dialect))


def _unit(given: Any, dialect: str) -> float:
    """1000 where the client counts in milliseconds; for a client that does not say,
    a number of 1000 or more is taken as milliseconds (no tool waits 17 minutes by default)."""
    if dialect in MILLISECONDS:
        return 1000
    if dialect in SECONDS:
        return 1
    return 1000 if isinstance(given, (int, float)) and given >= 1000 else 1


def _seconds(given: Any, key: str, unit: float) -> float:
    if isinstance(given, bool) or not isinstance(given, (int, float)):
        raise _Bad(f"'{key}' is not a number")
    if isinstance(given, int) and abs(given) > 10**15:  # 400 digits: no float holds it
        raise _Bad(f"'{key}' is far too large: a timeout must be at most a day")
    if not math.isfinite(given):
        raise _Bad(f"'{key}' is not a number")
    seconds = given / unit
    if not 0 < seconds <= MAX_TIMEOUT:
        raise _Bad(f"'{key}' is {given}: a timeout must be above 0 and at most a day")
    return float(seconds)


def _unmapped(value: Mapping[str, Any]) -> dict[str, str]:
    """Fields set (not empty, not false) that have no equivalent in toolctl, with why."""
    out = {}
    for key, item in value.items():
        if key in KNOWN or item in (None, False, [], {}, ""):
            continue
        out[key] = NO_EQUIVALENT.get(key, "toolctl has no equivalent")
    return out
