"""Opening an MCP session: a stdio server started (argv, never a shell) or a streamable
HTTP endpoint, the handshake finished within a timeout or the server ended."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from toolctl.errors import TimedOut
from toolctl.mcp.http import HttpTransport
from toolctl.mcp.session import Session


def connect_stdio(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    secrets: Iterable[str] = (),
    timeout: float = 30.0,
    prefer_modern: bool = False,
    name: str | None = None,
) -> Session:
    """Start the server (argv, never a shell) and finish the handshake within ``timeout``.

    ``env`` is the child's whole environment (None: ours), ``${env:NAME}`` already expanded
    by the caller, which also passes the expanded secret values so that stderr tails in
    errors show them as ``***``. ``name`` (default: the program's) names it in errors.
    """
    from toolctl.mcp.stdio import StdioTransport

    session = Session()
    session.transport = StdioTransport(
        argv, inbound=session.inbound, env=env, cwd=cwd, secrets=secrets, name=name
    )
    return finish_handshake(session, timeout, prefer_modern)


def connect_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    prefer_modern: bool = False,
) -> Session:
    """Open a session with a streamable HTTP endpoint within ``timeout`` seconds."""
    session = Session()
    session.transport = HttpTransport(url, inbound=session.inbound, headers=headers)
    return finish_handshake(session, timeout, prefer_modern)


def finish_handshake(session: Session, timeout: float, prefer_modern: bool) -> Session:
    """The handshake within ``timeout``; a call cancelled meanwhile (a client's cancel, a
    server stopping) stops the server at once (the call waited out the whole timeout,
    and a client that gave up left the server running)."""
    from toolctl.processes.cancelling import on_cancel

    try:
        with on_cancel(session.transport.kill):
            session.handshake(timeout, prefer_modern=prefer_modern)
    except TimedOut as exc:
        session.transport.kill()
        ended = "it was stopped" if session.local else "the connection was closed"
        raise TimedOut(
            f"MCP server '{session.transport.name}' did not finish the handshake in "
            f"{round(timeout, 1):g} s;"
            f" {ended}",
            hint="a first start can be slow (npx and uvx fetch the server then): give it "
            "longer with connect_timeout = SECONDS in the service's [service.mcp]",
        ) from exc
    except BaseException:
        session.transport.kill()
        raise
    return session
