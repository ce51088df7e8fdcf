"""The SDK's OAuth providers as `toolctl mcp login` runs them (imported only by a login).

On top of ``mcp.client.auth``:

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
  JWT bearer grant (RFC 7523) at the MCP server's authorization server.

No message here quotes a token or a secret.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import httpx
from mcp.client.auth import OAuthClientProvider, OAuthTokenError, TokenStorage
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

from toolctl.mcp.oauth import merge_scopes

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
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

    async def _perform_authorization(self) -> httpx.Request:
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
        except ValueError:
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


class _IdJag(OAuthClientProvider):
    """SEP-990: the ID token traded at the identity provider for an ID-JAG (RFC 8693),
    which is the JWT bearer grant (RFC 7523) at the authorization server; the client
    authenticates there with its own client_id and client_secret."""

    def __init__(
        self, url: str, storage: TokenStorage, oauth: Mapping[str, Any], scope: str | None
    ) -> None:
        method = oauth.get("token_endpoint_auth_method") or (
            "client_secret_basic" if oauth.get("client_secret") else "none"
        )  # RFC 6749 2.3.1
        metadata = OAuthClientMetadata(
            redirect_uris=None,
            grant_types=[JWT_BEARER],
            token_endpoint_auth_method=method,  # type: ignore[arg-type]  # pydantic checks it
            scope=scope,
        )
        super().__init__(url, metadata, storage)
        self._oauth = oauth
        self._client = OAuthClientInformationFull(
            redirect_uris=None,
            client_id=str(oauth["client_id"]),
            client_secret=oauth.get("client_secret") or None,
            grant_types=[JWT_BEARER],
            token_endpoint_auth_method=method,  # type: ignore[arg-type]
            scope=scope,
        )

    async def _initialize(self) -> None:
        self.context.current_tokens = await self.context.storage.get_tokens()
        self.context.client_info = self._client
        self._initialized = True

    async def _perform_authorization(self) -> httpx.Request:
        context = self.context
        if context.oauth_metadata is None:
            raise OAuthTokenError("no authorization server metadata: the ID-JAG needs its issuer")
        scope = context.client_metadata.scope
        grant = await self._id_jag(str(context.oauth_metadata.issuer), scope)
        form = {"grant_type": JWT_BEARER, "assertion": grant}
        if context.should_include_resource_param(context.protocol_version):
            form["resource"] = context.get_resource_url()
        if scope:
            form["scope"] = scope
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        form, headers = context.prepare_token_auth(form, headers)
        return httpx.Request("POST", self._get_token_endpoint(), data=form, headers=headers)

    async def _id_jag(self, audience: str, scope: str | None) -> str:
        """The token exchange at the identity provider: an ID-JAG for ``audience``."""
        oauth = self._oauth
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "subject_token": str(oauth["idp_id_token"]),
            "subject_token_type": ID_TOKEN,
            "audience": audience,
            "resource": self.context.get_resource_url(),
        }
        if scope:
            form["scope"] = scope
        headers: dict[str, str] = {}
        if oauth.get("idp_client_secret"):  # client_secret_basic at the identity provider
            pair = f"{quote(str(oauth.get('idp_client_id') or ''), safe='')}:"
            pair += quote(str(oauth["idp_client_secret"]), safe="")
            headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
        elif oauth.get("idp_client_id"):
            form["client_id"] = str(oauth["idp_client_id"])
        async with httpx.AsyncClient(timeout=30) as client:
            endpoint = str(oauth["idp_token_endpoint"])
            answer = await client.post(endpoint, data=form, headers=headers)
        try:
            body = answer.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        grant = body.get("access_token")
        if answer.status_code != 200 or not isinstance(grant, str) or not grant:
            said = body.get("error")
            raise OAuthTokenError(
                f"the identity provider refused the token exchange (HTTP {answer.status_code}"
                + (f", {said}" if isinstance(said, str) else "")
                + ")"
            )
        if body.get("issued_token_type", ID_JAG) != ID_JAG:
            raise OAuthTokenError("the identity provider did not issue an ID-JAG")
        return grant


class IdJag(Toolctl, _IdJag):
    """``grant = "id_jag"`` (see _IdJag)."""
