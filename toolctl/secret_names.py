"""Which names say their value is a secret: an env key, a header, a flag, a query parameter.

Below interchange/ (an import turns such values into ``${env:NAME}`` references) and
urls (a printed URL shows such query values as ``***``)."""

from __future__ import annotations

import re

SECRET_WORDS = frozenset(
    {
        "TOKEN", "TOKENS", "SECRET", "SECRETS", "KEY", "KEYS", "APIKEY", "APITOKEN",
        "AUTHTOKEN", "ACCESSTOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "PASS", "PWD",
        "AUTH", "AUTHORIZATION", "CREDENTIAL", "CREDENTIALS", "CREDS", "COOKIE", "PAT",
        "BEARER", "SIG", "SIGNATURE", "DSN", "SESSION", "SESSIONID", "JSESSIONID", "PHPSESSID",
        "PGPASSWORD", "SQLCMDPASSWORD", "SSHPASS",
    }
)  # fmt: skip
"""Words of a name that say its value is a secret."""
ABOUT_WORDS = frozenset(
    {
        "TYPE", "MODE", "METHOD", "URL", "URI", "ENDPOINT", "HOST", "HOSTNAME", "PORT",
        "PATH", "FILE", "FILENAME", "DIR", "DIRECTORY", "ENABLED", "DISABLED", "REQUIRED",
        "HEADER", "SCOPE", "SCOPES", "PROVIDER", "ID", "NAME", "USER", "USERNAME", "REGION",
        "EXPIRY", "EXPIRES", "TTL", "TIMEOUT", "VERSION", "FORMAT", "LENGTH", "SERVER",
        "DOMAIN", "ISSUER", "AUDIENCE", "ENV", "VAR", "STORE", "LOCATION",
    }
)  # fmt: skip
"""A last word that makes the value something *about* a secret, not the secret."""


def words(name: str) -> list[str]:
    """``apiKey``, ``X-API-Key``, ``api_key`` → their words, upper case."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.upper() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def secret_name(name: str | None) -> bool:
    """Whether the value of ``name`` (an env key, header, flag, query parameter) is a secret."""
    parts = words(name or "")
    return bool(parts) and parts[-1] not in ABOUT_WORDS and any(w in SECRET_WORDS for w in parts)
