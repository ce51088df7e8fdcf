"""OAuth for MCP servers reached over HTTP, as the MCP authorization spec describes it: what
a run needs (the kept tokens, a refresh, what a refusal means); the login itself, on the
official SDK's client pieces (``mcp.client.auth``), is ``oauth_flow``, imported only there.

``toolctl mcp login SERVICE`` runs the whole flow once: protected resource metadata, then
authorization server metadata; a pre-registered client (``[service.mcp.oauth]``
``client_id``), a client ID metadata document (``client_metadata_url``) or dynamic client
registration; PKCE authorization code with a loopback redirect (the URL is printed, and a
browser opened where there is one), or client credentials for CI (``grant =
"client_credentials"``); scopes as the server asks for them, resource indicators. The
tokens are kept in a file only its owner can read (0600), never printed.

A run sends the kept access token. A 401 refreshes it once when a refresh token is kept;
otherwise, or on a 403 ``insufficient_scope`` (more scope wanted: it is remembered for the
next login), the run is exit 5 naming the command to run: nothing asks a question.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl.errors import TransportUnavailable

if TYPE_CHECKING:
    from toolctl.mcp.http import HttpRefused
    from toolctl.settings import Settings


class LoginNeeded(TransportUnavailable):
    """An MCP server wants a login toolctl does not hold (exit 5, the command in the hint)."""


class Refreshed(LoginNeeded):
    """An open session's request was refused (401) with the kept token, which a refresh
    has since replaced: the request was not run, and may be sent again in a new session."""


def login_hint(service: str) -> str:
    return f"run 'toolctl mcp login {service}'"


def token_file(settings: Settings, service: str) -> Path:
    """Where ``service``'s login is kept: ``$XDG_STATE_HOME/toolctl/oauth/SERVICE.json``.
    A login kept where earlier builds put it (``toolctl/toolctl/oauth``, the state
    directory named twice) is moved here first, so no login is lost."""
    path = settings.state_dir / "oauth" / f"{service}.json"
    if path.exists():
        return path
    return _moved(settings.state_dir / "toolctl" / "oauth" / f"{service}.json", path)


def _moved(old: Path, new: Path) -> Path:
    """``new``, after moving the file at ``old`` there (its inode, so its mode, 0600, with
    it); ``old`` when it cannot be moved, to be read where it is. A link, then an unlink:
    unlike a rename it never replaces a login another process has just written at ``new``."""
    if not old.exists():
        return new
    try:
        new.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.link(old, new)
    except FileExistsError:
        pass  # another process moved it (or logged in) meanwhile: ``new`` holds the login
    except OSError:
        return old  # another file system, or no links there: read where it is
    old.unlink(missing_ok=True)
    for directory in (old.parent, old.parent.parent):  # toolctl/toolctl/oauth, once empty
        try:
            directory.rmdir()
        except OSError:
            break
    return new


class Kept:
    """What a login leaves for the runs: tokens, the client, where to refresh (0600)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError, RecursionError):
            return {}
        return data if isinstance(data, dict) else {}

    def write(self, **changes: Any) -> None:
        data = {**self.read(), **changes}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            json.dump(data, handle)
        os.replace(temporary, self.path)

    # the SDK's TokenStorage

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        tokens = self.read().get("tokens")
        if not isinstance(tokens, dict) or not tokens:  # a damaged file: no login kept
            return None
        try:
            return OAuthToken.model_validate(tokens)
        except ValueError:  # pydantic's ValidationError: the same
            return None

    async def set_tokens(self, tokens: Any) -> None:
        self.write(tokens=tokens.model_dump(mode="json", exclude_none=True), at=time.time())

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        info = self.read().get("client")
        if not isinstance(info, dict) or not info:
            return None
        try:
            return OAuthClientInformationFull.model_validate(info)
        except ValueError:
            return None

    async def set_client_info(self, client_info: Any) -> None:
        self.write(client=client_info.model_dump(mode="json", exclude_none=True))


def bearer(settings: Settings, service: str) -> str | None:
    """The kept access token of ``service``, if a login left one."""
    tokens = Kept(token_file(settings, service)).read().get("tokens")
    token = tokens.get("access_token") if isinstance(tokens, dict) else None
    # a header carries visible ASCII: a damaged file's other text made the call exit 70
    usable = isinstance(token, str) and token and all("!" <= c <= "~" for c in token)
    return token if usable else None


def refresh(settings: Settings, service: str, section: Mapping[str, Any]) -> bool:
    """Trade the kept refresh token for new tokens; False when there is none, or it failed."""
    import httpx

    kept = Kept(token_file(settings, service))
    data = kept.read()
    tokens, client = data.get("tokens") or {}, data.get("client") or {}
    endpoint = data.get("token_endpoint")
    if not (tokens.get("refresh_token") and endpoint and client.get("client_id")):
        return False
    form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    if data.get("resource"):
        form["resource"] = data["resource"]
    auth = None
    if (
        client.get("client_secret")
        and client.get("token_endpoint_auth_method") != "client_secret_post"
    ):
        auth = (client["client_id"], client["client_secret"])
    else:
        form["client_id"] = client["client_id"]
        if client.get("client_secret"):
            form["client_secret"] = client["client_secret"]
    try:
        answer = httpx.post(endpoint, data=form, auth=auth, timeout=30)
        fresh = answer.json() if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, RecursionError):
        return False
    if not isinstance(fresh, dict) or not isinstance(fresh.get("access_token"), str):
        return False
    if not fresh["access_token"] or any(char in fresh["access_token"] for char in "\r\n\0"):
        return False  # no header can carry it
    kept.write(tokens={**tokens, **fresh}, at=time.time())
    return True


def merge_scopes(*scopes: str | None) -> str:
    """The union of space-separated scope lists, in the order first named."""
    return " ".join(dict.fromkeys(part for each in scopes if each for part in each.split()))


def wanted_scope(settings: Settings, service: str, scope: str) -> str:
    """Remember a scope the server asked for (a 403 step-up) for the next login: the union
    of what was asked and granted before and ``scope``, which is returned."""
    kept = Kept(token_file(settings, service))
    data = kept.read()
    union = merge_scopes(data.get("scope"), (data.get("tokens") or {}).get("scope"), scope)
    kept.write(scope=union)
    return union


def login_needed(
    settings: Settings, service: str, refused: HttpRefused, token: str | None
) -> TransportUnavailable:
    """What an HTTP refusal of ``service``'s server means for a run that sent ``token``:
    a 401 is a login to run; a 403 ``insufficient_scope`` is a login asking for more scope
    (remembered; the next login asks for it); anything else stays what it is."""
    if refused.status == 403 and "insufficient_scope" in refused.challenge:
        scope = wanted_scope(settings, service, refused.scope or "")
        return LoginNeeded(
            f"MCP service '{service}' needs a login with "
            + (f"scope '{scope}'" if scope else "more scope"),
            hint=login_hint(service),
        )
    if refused.status == 401:
        return LoginNeeded(
            f"MCP service '{service}' needs a login"
            + (" (the kept one was refused)" if token else ""),
            hint=login_hint(service),
        )
    return refused
