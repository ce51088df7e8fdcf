"""`toolctl mcp login SERVICE` (see ``oauth``), on the SDK's ``mcp.client.auth``; imported
only by a login. On top of the SDK's providers:

* scopes add up: each authorization asks for the union of what was asked before in this
  login (the ``scope`` configured, the scope a 403 step-up left for the next login) and
  what the server asks for now, never only the latest (the SDK takes the
  ``WWW-Authenticate`` scope alone);
* a 2025-03-26 server (no protected resource metadata) keeps its authorization server
  metadata at the root of its own origin; its ``issuer`` may name a path there (a
  ``routePrefix``): an issuer on the MCP server's own origin is taken as that origin,
  which is what the 2025-03-26 discovery names, instead of failing the login;
* ``grant = "id_jag"``: enterprise-managed authorization (SEP-990): the ID token the
  identity provider issued is exchanged there (RFC 8693) for an ID-JAG, which is the
  JWT bearer grant (RFC 7523) at the MCP server's authorization server
  (``oauth_idjag``).

The browser and the redirect's listener are ``oauth_loopback``. No message here quotes a
token or a secret.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import warnings
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

import httpx
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.exceptions import OAuthFlowError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
)
from mcp.client.auth.utils import issuers_match
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

from toolctl.errors import TransportUnavailable, UsageError
from toolctl.mcp.oauth import Kept, LoginNeeded, merge_scopes, token_file
from toolctl.mcp.oauth_idjag import IdJagProvider
from toolctl.mcp.oauth_loopback import LOGIN_SECONDS, Loopback, open_browser
from toolctl.mcp.oauth_settings import check_settings

if TYPE_CHECKING:
    from toolctl.settings import Settings

ROOT_METADATA = "/.well-known/oauth-authorization-server"

# The SDK logs a failed flow with its traceback ("OAuth flow error"); the login reports the
# error in one line instead.
logging.getLogger("mcp.client.auth").addHandler(logging.NullHandler())
logging.getLogger("mcp.client.auth").propagate = False

if TYPE_CHECKING:
    _Base = OAuthClientProvider
else:
    _Base = object


class Toolctl(_Base):
    """What every provider of a login does on top of the SDK's (see the module)."""

    asked: str | None = None
    """The scope asked for so far in this login (space-separated), or None."""
    issuer: str | None = None
    """``issuer`` of ``[service.mcp.oauth]``: the one authorization server this login's
    credentials (a client secret or key, an ID token) and browser may go to, whatever
    server the MCP server names."""

    def authorization_server(self) -> str:
        """The issuer of the authorization server this login deals with: its metadata's, or
        without metadata the one the MCP server named (else its origin), whose /token and
        /authorize the flow then uses."""
        context = self.context
        if context.oauth_metadata is not None:
            return str(context.oauth_metadata.issuer)
        return context.auth_server_url or _origin(context.server_url)

    def _select_authorization_server(self, advertised: list[str]) -> str:
        issuer = self.issuer
        if issuer is None:
            return str(super()._select_authorization_server(advertised))
        return next((s for s in advertised if issuers_match(s, issuer)), advertised[0])

    async def _perform_authorization(self) -> httpx.Request:
        found = self.authorization_server()
        if self.issuer is not None and not issuers_match(found, self.issuer):
            raise OAuthFlowError(
                f"the server's authorization server is {found}, not the issuer configured"
                f" ({self.issuer}); nothing was sent to it"
            )
        wanted = merge_scopes(self.asked, self.context.client_metadata.scope) or None
        self.context.client_metadata.scope = self.asked = wanted
        request: httpx.Request = await super()._perform_authorization()
        return request

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        flow = super().async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                outgoing = await flow.asend(await self._legacy_metadata(outgoing, response))
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    async def _legacy_metadata(
        self, sent: httpx.Request, response: httpx.Response
    ) -> httpx.Response:
        """Root authorization server metadata of a server without protected resource
        metadata, whose issuer is on the server's own origin: the issuer taken as that
        origin (see the module). Any other answer as it is."""
        context = self.context
        origin = _origin(context.server_url)
        if (
            context.protected_resource_metadata is not None
            or context.auth_server_url
            or sent.method != "GET"
            or sent.url.path != ROOT_METADATA
            or _origin(str(sent.url)) != origin
            or response.status_code != 200
        ):
            return response
        try:
            metadata = json.loads(await response.aread())
        except (ValueError, RecursionError):
            return response
        issuer = metadata.get("issuer") if isinstance(metadata, dict) else None
        if not isinstance(issuer, str) or _origin(issuer) != origin:
            return response
        metadata["issuer"] = origin
        return httpx.Response(200, json=metadata, request=sent)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class Login(Toolctl, OAuthClientProvider):
    """PKCE authorization code with a loopback redirect."""


class ClientCredentials(Toolctl, ClientCredentialsOAuthProvider):
    """Client credentials with a client secret (CI)."""


class KeyCredentials(Toolctl, PrivateKeyJWTOAuthProvider):
    """Client credentials with a private key JWT (CI)."""


class IdJag(Toolctl, IdJagProvider):
    """``grant = "id_jag"`` (see toolctl.mcp.oauth_idjag)."""


def login(
    settings: Settings,
    service: str,
    url: str,
    oauth: Mapping[str, Any],
    show: Callable[[str], None],
    *,
    browser: bool = True,
) -> Granted:
    """The whole flow against the MCP server at ``url``; ``show`` gets the authorization
    URL (never a token)."""
    import anyio

    return anyio.run(_login, settings, service, url, oauth, show, browser)


async def _login(
    settings: Settings,
    service: str,
    url: str,
    oauth: Mapping[str, Any],
    show: Callable[[str], None],
    browser: bool,
) -> Granted:
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
    tokens = kept.read().get("tokens")
    if not tokens and metadata is None:  # the server answered without asking for one
        return Granted("", "", needed=False)
    return Granted(str((tokens or {}).get("scope") or ""), provider.authorization_server())


class Granted(NamedTuple):
    """What a login got: the scope granted ("" when the server says none), and the issuer
    of the authorization server that granted it."""

    scope: str
    issuer: str
    needed: bool = True
    """False: the server answered without asking for a login (nothing was granted)."""


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
    with contextlib.suppress(ValueError, LookupError, TypeError, RecursionError):
        version = json.loads(text)["result"]["protocolVersion"]
        if isinstance(version, str):
            return version
    return str(_HEADERS["MCP-Protocol-Version"])


_GIVEN_VALUE = re.compile(r"\s*\[type=.*?input_type=\w+\]|\s*For further information visit \S+")
"""What pydantic appends to a validation error: the value it was given (a server's token
answer may hold the token itself) and a link."""


def _one_line(exc: Exception) -> str:
    """The error in one line, without any value a server sent (never a token)."""
    text = _GIVEN_VALUE.sub("", " ".join(str(exc).split()))
    return text or type(exc).__name__


def _provider(
    kept: Kept,
    url: str,
    oauth: Mapping[str, Any],
    scope: str | None,
    loopback: Loopback,
    show: Callable[[str], None],
    browser: bool,
) -> Any:
    check_settings(oauth)
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
                open_browser(authorization_url)

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
    provider.issuer = oauth.get("issuer") or None
    return provider


_ID_JAG = ("client_id", "idp_token_endpoint", "idp_id_token")
"""What ``grant = "id_jag"`` needs in ``[service.mcp.oauth]``."""


def _client_credentials(kept: Kept, url: str, oauth: Mapping[str, Any], scope: str | None) -> Any:
    from mcp.client.auth.extensions.client_credentials import SignedJWTParameters

    client_id = oauth.get("client_id")
    if not client_id:
        raise UsageError('grant = "client_credentials" needs client_id in [service.mcp.oauth]')
    kept.write(client=None)
    issuer = oauth.get("issuer") or None
    with warnings.catch_warnings():  # no issuer: `check` warns (the SDK's deprecation)
        warnings.simplefilter("ignore", DeprecationWarning)
        if oauth.get("private_key_pem"):
            signed = SignedJWTParameters(
                issuer=client_id,
                subject=client_id,
                signing_key=oauth["private_key_pem"],
                signing_algorithm=oauth.get("signing_algorithm") or "ES256",
            )
            assertion = signed.create_assertion_provider()
            return KeyCredentials(url, kept, client_id, assertion, scopes=scope, issuer=issuer)
        method = oauth.get("token_endpoint_auth_method") or "client_secret_basic"
        return ClientCredentials(
            url,
            kept,
            client_id,
            str(oauth.get("client_secret") or ""),
            method,  # type: ignore[arg-type]
            scopes=scope,
            issuer=issuer,
        )


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
