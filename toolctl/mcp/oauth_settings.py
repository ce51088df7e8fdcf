"""What ``[service.mcp.oauth]`` may say, checked before a login sends anything: the grants,
how the client authenticates, how a private key signs, and which URLs must be URLs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from toolctl.errors import UsageError

CREDENTIALS = ("client_secret", "private_key_pem", "idp_id_token")
"""Keys of ``[service.mcp.oauth]`` that a login sends to the authorization server."""

GRANTS = ("client_credentials", "id_jag")
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic", "private_key_jwt")
SIGNING = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA")
"""What ``[service.mcp.oauth]`` may name: a grant (none: the browser's authorization code),
how the client authenticates at the token endpoint, how a private key signs."""


def check_settings(oauth: Mapping[str, Any]) -> None:
    """Refuse what a login could not use, in one line (exit 2), before any request: the
    keys' names and the allowed values are told, never a value (it may be a secret)."""
    where = "in [service.mcp.oauth]"
    for key, allowed in (
        ("grant", GRANTS),
        ("token_endpoint_auth_method", AUTH_METHODS),
        ("signing_algorithm", SIGNING),
    ):
        if oauth.get(key) is not None and oauth[key] not in allowed:
            raise UsageError(f"{key} {where} must be one of: {', '.join(allowed)}")
    for key in ("issuer", "idp_token_endpoint", "client_metadata_url"):
        value = oauth.get(key)
        if value is None:
            continue
        try:
            parts = urlsplit(str(value))
        except ValueError:  # an unclosed [IPv6 address
            raise UsageError(f"{key} {where} must be an http(s) URL") from None
        if key == "client_metadata_url":  # the SDK's rule (SEP-991): HTTPS, a path
            if parts.scheme != "https" or not parts.netloc or parts.path in ("", "/"):
                raise UsageError(f"{key} {where} must be an https URL with a path")
        elif parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"{key} {where} must be an http(s) URL")
    if oauth.get("private_key_pem"):
        _check_key(str(oauth["private_key_pem"]), str(oauth.get("signing_algorithm") or "ES256"))


def _check_key(pem: str, algorithm: str) -> None:
    import jwt

    try:
        jwt.encode({"check": True}, pem, algorithm=algorithm)
    except Exception:  # whatever the key is, it cannot sign (never quoted)
        raise UsageError(
            f"private_key_pem in [service.mcp.oauth] cannot sign with {algorithm}:"
            " not a PEM private key of that kind"
        ) from None
