"""An MCP service as a registry entry describes it (``[service.mcp]``), and connecting to one.

This room never opens the registry: its callers hand it the entries they resolved (a
``registry.loader.Definition`` is an ``Entry``), or a section and the directory of the file
that defines it (what a resolved tool carries), as the MCP runner does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from toolctl.descriptor_env import child_environment, descriptor_cwd, expand_env, expand_env_map
from toolctl.errors import TransportUnavailable, UsageError
from toolctl.urls import header_problem, shown_header, url_problem

if TYPE_CHECKING:
    from toolctl.mcp.http import HttpRefused
    from toolctl.mcp.session import Session
    from toolctl.settings import Settings

DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds to start and list a server whose service sets no ``connect_timeout``, when no
call's timeout bounds it (``import mcp``, ``check --live``, a kept session)."""


class Entry(Protocol):
    """A registry entry as far as this room reads one: a service or a tool, where it is
    defined, and its normalised data."""

    @property
    def name(self) -> str: ...

    @property
    def file(self) -> str: ...

    @property
    def line(self) -> int: ...

    @property
    def data(self) -> Mapping[str, Any]: ...


def connect_budget(section: Mapping[str, Any], timeout: float | None = None) -> float:
    """Seconds to start and list the server of ``section``: ``timeout`` if given, else its
    ``connect_timeout``, else DEFAULT_CONNECT_TIMEOUT."""
    return float(timeout or section.get("connect_timeout") or DEFAULT_CONNECT_TIMEOUT)


def connect(
    settings: Settings, name: str, section: Mapping[str, Any], base: Path, timeout: float
) -> Session:
    """A session with the MCP server of service ``name`` (its ``[service.mcp]``
    ``section``; ``base`` is the directory of the file defining it), handshake done."""
    from toolctl.mcp.connect import connect_stdio

    if section.get("url"):
        from toolctl.mcp.http import safe_url
        from toolctl.mcp.sse import connect_remote

        headers = expand_env_map(section.get("headers") or {}, settings)
        for header, value in headers.items():
            why = header_problem(header, value)
            if why:
                raise UsageError(
                    f"MCP service '{name}': header {shown_header(header)} cannot be sent: "
                    f"{why} (the value is not shown)",
                    hint="check its headers and the environment variables they take values from",
                )
        url = expand_env(str(section["url"]), settings)
        if url_problem(url):  # only a ${env:} value can make it so: loading checked the rest
            raise UsageError(
                f"MCP service '{name}': its url, with its ${{env:}} values, is not an http(s)"
                " URL toolctl can send to (check those variables)"
            )
        shown = safe_url(expand_env(str(section["url"]), settings, mask=True))
        transport = section.get("transport")
        return _with_login(
            settings,
            name,
            section,
            headers,
            lambda sent: connect_remote(
                url, headers=sent, timeout=timeout, transport=transport, shown=shown
            ),
        )
    env = section.get("env") or {}
    expanded = expand_env_map(env, settings)  # a missing variable: exit 2
    argv = [expand_env(str(item), settings) for item in section["command"]]
    secrets = [expanded[key] for key, value in env.items() if "${env:" in value and expanded[key]]
    secrets += [argv[n] for n, item in enumerate(section["command"]) if "${env:" in str(item)]
    cwd = descriptor_cwd(f"service '{name}'", base, section.get("cwd"))
    try:
        return connect_stdio(
            argv,
            env=child_environment(settings.environ, expanded, section.get("pass_env") or ()),
            cwd=cwd,
            secrets=secrets,
            timeout=timeout,
            name=name,
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


def _with_login(
    settings: Settings,
    name: str,
    section: Mapping[str, Any],
    headers: dict[str, str],
    open_session: Callable[[dict[str, str]], Session],
) -> Session:
    """Open the session with the access token a login left (unless the service's headers
    carry their own); a 401 refreshes it once, else it is exit 5 naming the login. Once
    open, a 401, or a 403 ``insufficient_scope`` (step-up: the scope is remembered for the
    next login), is exit 5 naming the login too: a run never asks anyone anything."""
    from toolctl.mcp.http import HttpRefused, HttpTransport
    from toolctl.mcp.oauth import bearer, login_needed, refresh

    own = any(key.lower() == "authorization" for key in headers)
    for attempt in range(2):
        token = None if own else bearer(settings, name)
        sent = {**headers, "Authorization": f"Bearer {token}"} if token else headers
        try:
            session = open_session(sent)
        except HttpRefused as exc:
            if own:
                raise
            if exc.status == 401 and attempt == 0 and token and refresh(settings, name, section):
                continue
            raise login_needed(settings, name, exc, token) from None
        if not own and isinstance(session.transport, HttpTransport):
            session.transport.on_refused = _refused(settings, name, section, token)
        return session
    raise AssertionError("unreachable")


def _refused(
    settings: Settings, name: str, section: Mapping[str, Any], token: str | None
) -> Callable[[HttpRefused], Exception]:
    """What a refusal in an open session of service ``name`` (sent ``token``) becomes: a
    401 once the kept token has expired is ``Refreshed`` when the refresh token still
    trades for a new one (a long-lived session, such as a gateway's, outlives its token)."""
    from toolctl.mcp.oauth import Refreshed, login_hint, login_needed, refresh

    def refused(answer: HttpRefused) -> Exception:
        if answer.status == 401 and token and refresh(settings, name, section):
            return Refreshed(
                f"MCP service '{name}': its token expired and was refreshed",
                hint=login_hint(name),
            )
        return login_needed(settings, name, answer, token)

    return refused
