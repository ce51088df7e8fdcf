"""``grant = "id_jag"`` in `toolctl mcp login`: enterprise-managed authorization (SEP-990),
a provider for the SDK's ``mcp.client.auth``. The ID token the identity provider issued is
exchanged there (RFC 8693) for an ID-JAG, which is the JWT bearer grant (RFC 7523) at the
MCP server's authorization server. No message here quotes a token or a secret.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx
from mcp.client.auth import OAuthClientProvider, OAuthTokenError, TokenStorage
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


class IdJagProvider(OAuthClientProvider):
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
        except (ValueError, RecursionError):
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
