"""OAuth for MCP servers reached over HTTP, as the MCP authorization spec describes it, on
the official SDK's client pieces (``mcp.client.auth``).

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

import contextlib
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from toolctl.errors import TransportUnavailable, UsageError

if TYPE_CHECKING:
    import httpx

    from toolctl.mcp.http import HttpRefused
    from toolctl.settings import Settings

LOGIN_SECONDS = 300.0
"""How long `mcp login` waits for the browser to come back."""


class LoginNeeded(TransportUnavailable):
    """An MCP server wants a login toolctl does not hold (exit 5, the command in the hint)."""


def login_hint(service: str) -> str:
    return f"run 'toolctl mcp login {service}'"


def token_file(settings: Settings, service: str) -> Path:
    return settings.state_dir / "toolctl" / "oauth" / f"{service}.json"


class Kept:
    """What a login leaves for the runs: tokens, the client, where to refresh (0600)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
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
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: Any) -> None:
        self.write(tokens=tokens.model_dump(mode="json", exclude_none=True), at=time.time())

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        info = self.read().get("client")
        return OAuthClientInformationFull.model_validate(info) if info else None

    async def set_client_info(self, client_info: Any) -> None:
        self.write(client=client_info.model_dump(mode="json", exclude_none=True))


def bearer(settings: Settings, service: str) -> str | None:
    """The kept access token of ``service``, if a login left one."""
    tokens = Kept(token_file(settings, service)).read().get("tokens") or {}
    token = tokens.get("access_token")
    return token if isinstance(token, str) and token else None


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
    except (httpx.HTTPError, ValueError):
        return False
    if not isinstance(fresh, dict) or not fresh.get("access_token"):
        return False
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


# -- login ---------------------------------------------------------------------------------------


def login(
    settings: Settings,
    service: str,
    url: str,
    oauth: Mapping[str, Any],
    show: Callable[[str], None],
    *,
    browser: bool = True,
) -> str:
    """The whole flow against the MCP server at ``url``; ``show`` gets the authorization
    URL (never a token). Returns the scope granted ("" when the server says none)."""
    import anyio

    return anyio.run(_login, settings, service, url, oauth, show, browser)


async def _login(
    settings: Settings,
    service: str,
    url: str,
    oauth: Mapping[str, Any],
    show: Callable[[str], None],
    browser: bool,
) -> str:
    import httpx
    from mcp.client.auth.exceptions import OAuthFlowError

    kept = Kept(token_file(settings, service))
    scope = merge_scopes(oauth.get("scope"), kept.read().get("scope")) or None
    kept.write(tokens=None)  # a fresh login: the old tokens go
    with Loopback() as loopback:
        provider = _provider(kept, url, oauth, scope, loopback, show, browser)
        try:
            async with httpx.AsyncClient(auth=provider, timeout=30) as client:
                answer = await _session(client, url)
        except (OAuthFlowError, httpx.HTTPError, ValueError) as exc:
            raise TransportUnavailable(
                f"login to MCP service '{service}' failed: {_one_line(exc)}"
            ) from None
    if answer.status_code == 403 and "insufficient_scope" in answer.headers.get(
        "www-authenticate", ""
    ):
        raise LoginNeeded(
            f"login to MCP service '{service}' failed: the server still wants more scope"
            f" than it granted (asked for '{provider.asked or ''}')"
        )
    if answer.status_code in (401, 403):
        raise TransportUnavailable(
            f"login to MCP service '{service}' failed: the server still answers "
            f"HTTP {answer.status_code}"
        )
    context = provider.context
    metadata = context.oauth_metadata
    kept.write(
        token_endpoint=str(metadata.token_endpoint) if metadata else None,
        resource=context.get_resource_url() if context.should_include_resource_param() else None,
        scope=provider.asked,
    )
    tokens = kept.read().get("tokens") or {}
    return str(tokens.get("scope") or "")


STEP_UPS = 1
"""How often one login asks again when its `tools/list` gets a 403 ``insufficient_scope``
(each ask is one more authorization, with the union of the scopes): then it stops."""


async def _session(client: httpx.AsyncClient, url: str) -> httpx.Response:
    """What a run does first, under the login's OAuth: initialize, then `tools/list` (a
    server may let `initialize` through and want a token, or more scope, for the rest).
    The last answer; the session is ended."""
    answer = await client.post(url, json=_INITIALIZE, headers=_HEADERS)
    if answer.status_code >= 400:
        return answer
    headers = {**_HEADERS, "MCP-Protocol-Version": _version(answer)}
    if answer.headers.get("mcp-session-id"):
        headers["mcp-session-id"] = answer.headers["mcp-session-id"]
    try:
        await client.post(url, json=_INITIALIZED, headers=headers)
        for _ in range(1 + STEP_UPS):
            answer = await client.post(url, json=_LIST, headers=headers)
            if answer.status_code != 403:
                break
    finally:
        if "mcp-session-id" in headers:
            with contextlib.suppress(Exception):
                await client.delete(url, headers=headers)
    return answer


def _version(answer: httpx.Response) -> str:
    """The protocol version an initialize answer (JSON, or one SSE event) agreed on."""
    text = answer.text
    if "text/event-stream" in answer.headers.get("content-type", ""):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[-1] if data else ""
    with contextlib.suppress(ValueError, AttributeError):
        version = json.loads(text)["result"]["protocolVersion"]
        if isinstance(version, str):
            return version
    return str(_HEADERS["MCP-Protocol-Version"])


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _provider(
    kept: Kept,
    url: str,
    oauth: Mapping[str, Any],
    scope: str | None,
    loopback: Loopback,
    show: Callable[[str], None],
    browser: bool,
) -> Any:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    from toolctl.mcp.oauth_flow import IdJag, Login

    client_id, secret = oauth.get("client_id"), oauth.get("client_secret")
    if oauth.get("grant") == "client_credentials":
        provider = _client_credentials(kept, url, oauth, scope)
    elif oauth.get("grant") == "id_jag":
        missing = [key for key in _ID_JAG if not oauth.get(key)]
        if missing:
            raise UsageError(f'grant = "id_jag" needs {", ".join(missing)} in [service.mcp.oauth]')
        kept.write(client=None)
        provider = IdJag(url, kept, oauth, scope)
    else:
        method = oauth.get("token_endpoint_auth_method") or (
            "client_secret_basic" if secret else "none"
        )
        metadata = OAuthClientMetadata(
            client_name="toolctl",
            redirect_uris=[loopback.redirect_uri],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method=method,  # type: ignore[arg-type]  # the server says
            scope=scope,
        )
        if client_id:  # pre-registered: no registration at all
            info = OAuthClientInformationFull(
                **metadata.model_dump(exclude={"redirect_uris"}),
                redirect_uris=[loopback.redirect_uri],  # type: ignore[list-item]
                client_id=client_id,
                client_secret=secret,
            )
            kept.write(client=info.model_dump(mode="json", exclude_none=True))
        else:
            kept.write(client=None)

        async def redirect(authorization_url: str) -> None:
            show(authorization_url)
            if browser:
                _open_browser(authorization_url)

        provider = Login(
            url,
            metadata,
            kept,
            redirect_handler=redirect,
            callback_handler=loopback.wait,
            timeout=LOGIN_SECONDS,
            client_metadata_url=oauth.get("client_metadata_url"),
        )
    provider.asked = scope
    return provider


_ID_JAG = ("client_id", "idp_token_endpoint", "idp_id_token")
"""What ``grant = "id_jag"`` needs in ``[service.mcp.oauth]``."""


def _client_credentials(kept: Kept, url: str, oauth: Mapping[str, Any], scope: str | None) -> Any:
    from mcp.client.auth.extensions.client_credentials import SignedJWTParameters

    from toolctl.mcp.oauth_flow import ClientCredentials, KeyCredentials

    client_id = oauth.get("client_id")
    if not client_id:
        raise UsageError('grant = "client_credentials" needs client_id in [service.mcp.oauth]')
    kept.write(client=None)
    if oauth.get("private_key_pem"):
        signed = SignedJWTParameters(
            issuer=client_id,
            subject=client_id,
            signing_key=oauth["private_key_pem"],
            signing_algorithm=oauth.get("signing_algorithm") or "ES256",
        )
        return KeyCredentials(
            url, kept, client_id, signed.create_assertion_provider(), scopes=scope
        )
    method = oauth.get("token_endpoint_auth_method") or "client_secret_basic"
    return ClientCredentials(
        url,
        kept,
        client_id,
        str(oauth.get("client_secret") or ""),
        method,  # type: ignore[arg-type]
        scopes=scope,
    )


def _open_browser(url: str) -> None:
    """Open ``url`` where a browser can be opened; the printed URL does the rest."""
    if os.environ.get("BROWSER") == "" or not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform == "darwin"
    ):
        return
    import webbrowser

    with contextlib.suppress(webbrowser.Error):
        webbrowser.open(url)


_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "toolctl", "version": "login"},
    },
}


class Loopback:
    """The redirect's listener on 127.0.0.1 (a free port): each ``wait`` takes the next
    ``code`` (a step-up in one login is a second authorization)."""

    def __init__(self) -> None:
        self._answers: queue.Queue[tuple[str, str | None] | str] = queue.Queue()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                code, state = query.get("code", [None])[0], query.get("state", [None])[0]
                if code:
                    outer._answers.put((code, state))
                    text = "toolctl: logged in; you can close this page."
                else:
                    error = (query.get("error") or ["no code"])[0]
                    outer._answers.put(error)
                    text = f"toolctl: login failed: {error}"
                body = text.encode()
                self.send_response(200 if code else 400)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = HTTPServer(("127.0.0.1", 0), Handler)
        self.redirect_uri = f"http://127.0.0.1:{self._server.server_address[1]}/callback"

    def __enter__(self) -> Loopback:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    async def wait(self) -> tuple[str, str | None]:
        import anyio

        def take() -> tuple[str, str | None] | str | None:
            try:
                return self._answers.get(timeout=LOGIN_SECONDS)
            except queue.Empty:
                return None

        answer = await anyio.to_thread.run_sync(take)
        if answer is None:
            raise TransportUnavailable(f"no login came back in {LOGIN_SECONDS:g} s")
        if isinstance(answer, str):
            raise TransportUnavailable(f"the authorization server refused: {answer}")
        return answer
