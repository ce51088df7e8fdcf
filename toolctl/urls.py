"""Whether a URL a descriptor gives is one toolctl can send to: absolute http(s), with a
host and a port in range. ``urllib`` and httpx raise on the rest
(an unclosed ``[``, a port of letters or past 65535) wherever the URL is first taken apart;
checked here once, such a URL is a finding or a one-line error instead. The same for the
headers sent with it (``header_problem``)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_ENV_REFERENCE = re.compile(r"\$\{env:[^}]*\}")


_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


FRAMING = frozenset(
    {"content-length", "transfer-encoding", "connection", "host", "upgrade", "keep-alive",
     "te", "trailer", "proxy-connection"}
)  # fmt: skip
"""Headers that frame or route the message: given by hand, each request failed inside the
HTTP client (exit 70), or went where the URL does not say."""


def header_problem(name: str, value: str) -> str | None:
    """Why the header ``name: value`` cannot be sent (httpx would raise, or the header would
    carry another line), or None; never quotes the value (a secret, as often as not)."""
    if not _HEADER_NAME.match(name):
        return "its name is not a valid HTTP header name"
    if name.lower() in FRAMING:
        return "it is one the HTTP client sets itself (how the message is framed and sent)"
    if not value.isascii():
        return "its value has characters outside ASCII"
    if any((ord(c) < 32 and c != "\t") or ord(c) == 127 for c in value):
        return "its value has a control character (a newline, a carriage return)"
    if value != value.strip(" \t"):
        return "its value starts or ends with whitespace"
    return None


def headers_problem(headers: dict[str, str]) -> str | None:
    """Why a descriptor's ``headers`` table cannot be sent, or None; a ``${env:NAME}`` in a
    value stands for a word (its value is checked once known)."""
    for name, value in headers.items():
        if why := header_problem(name, _ENV_REFERENCE.sub("env", value)):
            return f"header {shown_header(name)} cannot be sent: {why}"
    return None


def shown_header(name: str) -> str:
    """A header's name as a message quotes it (escaped when it is not ASCII)."""
    return ascii(name) if not name.isascii() else repr(name)


def url_problem(url: str) -> str | None:
    """Why ``url`` is not an absolute http(s) URL with a host, or None.
    A ``${env:NAME}`` reference stands for a word that fits anywhere (a host, a port is
    checked once the value is known), or for the whole URL (Claude Code's ``"url":
    "${MCP_URL}"``)."""
    if _ENV_REFERENCE.fullmatch(url):  # the whole URL from a variable: checked once known
        return None
    text = _ENV_REFERENCE.sub("env", url)
    if any(char.isspace() for char in text):
        return "it holds white space"
    if any(ord(char) < 32 or ord(char) == 127 for char in text):
        return "it holds a control character"
    try:
        parts = urlsplit(text)
        if not parts.netloc.endswith(":env"):
            _ = parts.port  # raises for a port that is no number, or out of range
    except ValueError as exc:  # said in its own words: the parser's quote a password
        return _parse_problem(str(exc))
    if parts.scheme not in ("http", "https"):
        return "expected http:// or https://"
    if not parts.hostname:
        return "it names no host"
    try:  # an empty label (`api..example.com`), one over 63 characters: no name to look up
        parts.hostname.encode("idna")
    except UnicodeError:
        return "its host is not a name that can be looked up (an empty or too long label)"
    return None


def _parse_problem(message: str) -> str:
    """What urlsplit refused, without its quote of the URL (a netloc, a port: with a
    password holding ``/`` the "port" it quotes is the password)."""
    if "IPv6" in message:
        return "its IPv6 host is not valid"
    if "Port" in message or "port" in message:
        return "its port is not a number from 0 to 65535"
    if "NFKC" in message:
        return "its host holds characters that change under Unicode normalization"
    return "it does not parse as a URL"


def shown_url(url: str) -> str:
    """``url`` fit to print, parsed or not: a password (``user:pass@``) and the query and
    fragment (where tokens ride) as ``***``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return "***"
    at = rest.rfind("@")
    if at != -1 and ":" in rest[:at]:  # user:password@, the password holding / ? # too
        rest = "***" + rest[at:]
    cut = min((i for i in (rest.find(c) for c in "/?#") if i != -1), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    end = min((i for i in (tail.find(c) for c in "?#;") if i != -1), default=-1)
    if end != -1:
        tail = tail[: end + 1] + "***"
    return f"{scheme}://{authority}{tail}"


def hide_passwords(text: str) -> str:
    """``text`` with the password of each URL in it (``scheme://user:pass@``) and the value
    of each parameter a secret's name gives (``?api_key=...``, ``#access_token=...``) as
    ``***``: what every diagnostic and printed field goes through."""
    if "@" in text:  # (secret_names, and its patterns, loaded only then)
        from toolctl.secret_names import hide_url_passwords

        text = hide_url_passwords(text)
    if "://" in text and "=" in text:
        text = _PARAMETER.sub(_hidden_parameter, text)
    return text


_PARAMETER = re.compile(r"([?&#;])([^=&#;?\s]+)=([^&#;?\s]*[^&#;?\s:,.)'\"])")
"""A parameter of a URL's query, fragment or path (``;jsessionid=``); its value does not end
with the punctuation a message puts after a URL (``at URL: reason``, ``'URL'``)."""


def _hidden_parameter(match: re.Match[str]) -> str:
    from toolctl.secret_names import parameter_name, secret_name

    mark, key, value = match.groups()
    key = parameter_name(key)
    if value == "***" or value.startswith("${env:") or not secret_name(key):
        return match.group(0)
    return f"{mark}{match.group(2)}=***"
