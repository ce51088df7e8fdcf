"""Which values are secrets: by the name they are given (an env key, a header, a flag, a
query parameter) or by their shape (a known token prefix, a JWT).

Below interchange/ (an import turns such values into ``${env:NAME}`` references), urls (a
printed URL shows such query values as ``***``), the registry (`check` warns of a secret
written in a descriptor) and what shows a descriptor (``hide_written``)."""

from __future__ import annotations

import re
from typing import Any

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


PREFIXES = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-(?:ant-|proj-|or-v1-)?[A-Za-z0-9_-]{16,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}|sbp_[A-Za-z0-9]{16,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}|AIza[A-Za-z0-9_-]{35}|ya29\.[A-Za-z0-9_-]{20,}"
    r"|hf_[A-Za-z0-9]{20,}|npm_[A-Za-z0-9]{20,}|pypi-[A-Za-z0-9_-]{20,}"
    r"|lin_api_[A-Za-z0-9]{20,}|ntn_[A-Za-z0-9]{20,}|secret_[A-Za-z0-9]{20,}"
    r"|shp(?:at|ss|ca|pa)_[A-Fa-f0-9]{20,}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"
    r"|dop_v1_[a-f0-9]{32,}|figd_[A-Za-z0-9_-]{20,}|glsa_[A-Za-z0-9_]{20,}|dapi[a-f0-9]{32}"
    r"|tvly-[A-Za-z0-9-]{16,}|pplx-[A-Za-z0-9]{20,}|gsk_[A-Za-z0-9]{20,}|r8_[A-Za-z0-9]{20,}"
    r"|fc-[a-f0-9]{32}|xkeysib-[A-Za-z0-9-]{20,}|apify_api_[A-Za-z0-9]{20,}"
    r"|ctx7sk-[A-Za-z0-9-]{16,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # a JWT
    r")(?![A-Za-z0-9_-])"
)
"""Tokens whose prefix says what they are (OpenAI, Anthropic, Stripe, GitHub, GitLab, Slack,
Supabase, AWS, Google, Hugging Face, npm, PyPI, Linear, Notion, Shopify, SendGrid,
DigitalOcean, Figma, Grafana, Databricks, Tavily, Perplexity, Groq, Replicate, Firecrawl,
Brevo, Apify, Context7) and JWTs."""
SCHEMES = ("Bearer ", "bearer ", "Basic ", "Token ", "token ", "Bot ", "ApiKey ", "Api-Key ")
"""The parts of an Authorization value that are not the secret."""
PLAIN_VALUES = frozenset({"", "true", "false", "yes", "no", "on", "off", "none", "null"})


def plain(value: str) -> bool:
    """A value that cannot be a secret whatever its name says: a flag value, a path."""
    text = value.strip()
    return (
        text.lower() in PLAIN_VALUES
        or text.startswith(("/", "~/", "./", "../"))
        or bool(re.match(r"^[A-Za-z]:[\\/]", text))
    )


def written_secret(name: str | None, value: str) -> bool:
    """Whether ``value``, given as ``name``'s in a descriptor (an env key, a header), holds
    a secret written out rather than passed as ``${env:NAME}``."""
    return hide_written(name, value) != value


STRONG_WORDS = frozenset(
    {
        "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "PWD", "APIKEY", "APITOKEN",
        "AUTHTOKEN", "ACCESSTOKEN", "AUTHORIZATION", "CREDENTIAL", "CREDENTIALS", "PAT",
        "PGPASSWORD", "SQLCMDPASSWORD", "SSHPASS", "BEARER",
    }
)  # fmt: skip
"""Last words of a name whose value is the secret itself, whatever it looks like
(``JWT_SECRET``, ``PGPASSWORD``, ``Authorization``, ``X-Api-Key``); a name that only holds
``KEY``, ``KEYS``, ``TOKENS``, ``AUTH``, ``SESSION`` or ``PASS`` is as often a setting
(``SORT_KEY``, ``MAX_TOKENS``, ``AUTH_BACKEND``, ``PASS_THROUGH``)."""


def strong_name(name: str | None) -> bool:
    """Whether ``name``'s value is a secret by its name alone (see ``STRONG_WORDS``)."""
    parts = words(name or "")
    if not parts or not secret_name(name):
        return False
    return parts[-1] in STRONG_WORDS or parts[-2:] == ["API", "KEY"]


def looks_secret(value: str, *, strong: bool = False) -> bool:
    """Whether a value a secret's name is given can be the secret: no space, and either six
    characters or more under a ``strong_name`` (eight for a number), or sixteen with letters
    and digits both, not a path or an ARN, under another (``API_KEY = "s3cr3t-value-9f8e7d"``). Not
    a word or a setting (``MAX_TOKENS = "4096"``, ``SORT_KEY = "created_at"``,
    ``SSH_KEY = "id_ed25519"``), which a descriptor holds far more often than an import's
    configs do."""
    text = value.strip()
    if any(c.isspace() for c in text) or plain(text):
        return False
    if strong:  # a number too, if long enough to be a key rather than a setting
        return len(text) >= (8 if text.isdigit() else 6)
    return (
        len(text) >= 16
        and "/" not in text
        and ":" not in text
        and any(c.isdigit() for c in text)
        and any(c.isalpha() for c in text)
    )


def hide_written(name: str | None, value: str) -> str:
    """``value`` as a descriptor is shown, the secrets written in it as ``***``: all of it
    but its scheme (``Bearer ***``) when ``name`` says it is a secret and the value can be
    one (``looks_secret``); a URL's password and secret parameters; a connection string's
    ``Password=``; a token its prefix gives away (``sk-``, ``ghp_``, a JWT). The rules are
    stricter than an import's (no guess by entropy, which takes a commit hash or a model's
    id for a key): a descriptor is read by people, and `check --strict` fails on what they
    find. ``${env:NAME}`` references are kept."""
    if "${env:" in value or not value.strip():
        return value
    scheme = next((s for s in SCHEMES if value.lower().startswith(s.lower())), "")
    secret = value[len(scheme) :]
    if secret_name(name) and looks_secret(secret, strong=strong_name(name) or bool(scheme)):
        return value[: len(scheme)] + "***"
    if scheme and credential(secret, name):  # `Bearer X` under any name (AUTH_HEADER, ...)
        return value[: len(scheme)] + "***"
    if "://" in value:
        value = _PARAMETER.sub(_hidden_parameter, hide_url_passwords(value))
    value = _CONNECTION_PASSWORD.sub(r"\1***", value)
    for match in reversed(list(PREFIXES.finditer(value))):
        start, end = match.span()
        after = value[end : end + 1]
        if after == "." or (value[max(0, start - 2) : start] in ("//", "@") and after not in ":@"):
            continue  # a host's name (pypi-mirror-....example.com), not a token (ghp_...:x@)
        value = value[:start] + "***" + value[end:]
    return value


def credential(text: str, name: str | None = None) -> bool:
    """What an Authorization scheme is followed by when it is a credential: one word of
    letters and digits both, eight characters or more under a name about authentication
    (``AUTH_HEADER``), sixteen under another (not ``Bearer tokens``, ``Basic plan2024``)."""
    about_auth = any("AUTH" in word for word in words(name or ""))
    return (
        len(text) >= (8 if about_auth else 16)
        and not any(c.isspace() for c in text)
        and any(c.isdigit() for c in text)
        and any(c.isalpha() for c in text)
    )


_URL_PASSWORD = re.compile(  # a scheme starts a word, and is short: from every letter of a
    # long run before "://" it ran again (a 100 KB argument: `check` took 10 s)
    r"((?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^/?#@\s:]*):[^/?#\s]*@"
)
"""``scheme://user:password@``; the password may hold an ``@`` of its own (up to the last
one before the path)."""


def hide_url_passwords(text: str) -> str:
    """``text`` with the password of each URL in it (``scheme://user:pass@``) as ``***``:
    what every printed URL (``urls.hide_passwords``) and a descriptor's shown form hide."""
    return _URL_PASSWORD.sub(r"\1:***@", text) if "@" in text else text


_PARAMETER = re.compile(r"([?&;#])([^=&#;?\s]+)=([^&#;?\s]+)")
_CONNECTION_PASSWORD = re.compile(r"(?i)((?:^|;)\s*(?:password|pwd)\s*=\s*)(?!\*\*\*)[^;]+")
"""``Password=...`` in a connection string (``Server=db;User Id=sa;Password=...;``)."""


def _hidden_parameter(match: re.Match[str]) -> str:
    """A URL's ``key=value`` with the value as ``***`` when both say it is a secret."""
    mark, key, value = match.groups()
    key = parameter_name(key)
    if secret_name(key) and looks_secret(value, strong=strong_name(key)) and "${env:" not in value:
        return f"{mark}{match.group(2)}=***"
    return match.group(0)


def parameter_name(key: str) -> str:
    """A URL parameter's name as the server reads it: ``api%5Fkey`` is ``api_key``."""
    if "%" not in key:
        return key
    from urllib.parse import unquote

    return unquote(key)


_OPTION = re.compile(r"-{0,2}[A-Za-z_][A-Za-z0-9_.-]*")
_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9-]*):[ \t]*(\S.*)", re.DOTALL)


def hide_written_args(items: list[Any]) -> list[Any]:
    """Command items as ``hide_written`` shows them: the item after an option whose name is
    a secret's (``--token``, ``-p``... by ``strong_name``), ``KEY=VALUE`` and
    ``--key=value`` by their key, a header (``Authorization: Bearer ...``) by its name,
    any other by its shape."""
    shown: list[Any] = []
    previous = ""
    for item in items:
        if isinstance(item, str):
            option = previous.lstrip("-") if previous.startswith("-") else ""
            key, equals, rest = item.partition("=")
            header = _HEADER.fullmatch(item)
            if option and strong_name(option):
                item = hide_written(option, item)
            elif equals and _OPTION.fullmatch(key) and strong_name(key.lstrip("-")):
                item = f"{key}={hide_written(key.lstrip('-'), rest)}"
            elif header and secret_name(header.group(1)):
                item = f"{header.group(1)}: {hide_written(header.group(1), header.group(2))}"
            else:
                item = hide_written(None, item)
        shown.append(item)
        previous = item if isinstance(item, str) else ""
    return shown
