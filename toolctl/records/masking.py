"""Secrets out of what the history stores: arguments and output, when they are stored at all.

Three nets, each replacing what it catches with ``***``:

* the values of the variables a tool's descriptor passes with ``${env:NAME}`` (its
  service's too): the same secrets `--dry-run` masks, wherever they turn up;
* values under a secret-sounding key (``password``, ``api_key``, ``authorization``,
  ``token``, ... in any case, with ``-`` or ``_``), at any depth of the arguments;
* text shaped like a credential: ``Bearer`` tokens, JWTs, PEM private keys, URLs with a
  password, and the key formats of the big providers (AWS, GitHub, GitLab, Slack,
  OpenAI/Anthropic-style ``sk-`` keys, Google API keys, Stripe).

Masking is a net, not a guarantee: a secret of no known shape under an innocent name gets
through, which is why nothing is stored unless asked for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from toolctl.descriptor_env import MASK, MIN_SECRET, hide_values

SECRET_KEY = re.compile(
    r"(pass(word|wd|phrase)?|secret|token|api[-_]?key|apikey|access[-_]?key|private[-_]?key|"
    r"auth(orization)?|credentials?|cookie|session[-_]?id|signature|client[-_]?secret)$",
    re.IGNORECASE,
)
"""A key whose value is a secret: the name ends in one of these words."""

SHAPES = [
    re.compile(p)
    for p in (
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)",
        r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}",
        r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
        r"\b(AKIA|ASIA)[0-9A-Z]{16}\b",
        r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",
        r"\bgithub_pat_[A-Za-z0-9_]{30,}\b",
        r"\bglpat-[A-Za-z0-9_-]{20,}\b",
        r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
        r"\bsk-[A-Za-z0-9_-]{20,}",
        r"\b(sk|rk)_(live|test)_[A-Za-z0-9]{16,}\b",
        r"\bAIza[0-9A-Za-z_-]{35}\b",
    )
]
KEY_VALUE = re.compile(
    r"""(?i)((?:password|passwd|pwd|secret|token|api[-_]?key|apikey|access[-_]?key|"""
    r"""private[-_]?key|authorization|credentials?|cookie|session[-_]?id|signature)"""
    r"""\\?["']?\s*[:=]\s*)"""
    r"""(\\?"(?:[^"\\]|\\[^"])*\\?"|'[^']*'|[^"'\s,;&}\\]+)"""
)
"""``password=...``, ``"api_key": "..."`` in text, also as JSON inside a JSON string
(``\"api_key\": \"...\"``): the value after a secret-sounding key, a quoted one whole.
The key's own beginning (``db_`` of ``db_password``) is left out of the pattern: matched
by ``[\\w-]*``, it made a long word cost the square of its length (a run of 16,000
letters took 23 s), and it is kept as it is either way."""
URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)([^@\s/]+)(@)", re.IGNORECASE)


def mask_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with the given secret values and credential-shaped strings masked."""
    text = hide_values(text, secrets)
    for shape in SHAPES:
        text = shape.sub(_masked_match, text)
    text = KEY_VALUE.sub(_masked_value, text)
    return URL_PASSWORD.sub(rf"\g<1>{MASK}\g<3>", text)


def masked_start(text: str, limit: int, secrets: Iterable[str] = (), past: int = 8 * 1024) -> str:
    """At most ``limit`` characters of ``text`` from its start, masked: what a history row
    keeps of a long output. Masked before the cut, since a secret across the cut matches
    no pattern; and of a ``text`` longer than ``limit + past``, the last ``past``
    characters of what was masked are never kept: a secret across *that* cut (some 8 KiB;
    a PEM key is ~3 KiB) stays whole in them, and masking what came before it shortens the
    text, which brought such a beginning back under ``limit``."""
    if len(text) <= limit + past:
        return mask_text(text, secrets)[:limit]
    masked = mask_text(text[: limit + past], secrets)
    return masked[: min(limit, len(masked) - past)]


def _masked_value(match: re.Match[str]) -> str:
    value = match.group(2)
    quote = value[: len(value) - len(value.lstrip("\\\"'"))]  # kept around the mask
    inside = value[len(quote) : len(value) - len(quote)] if quote else value
    if inside == MASK or inside.lower() in {"bearer", "basic", "token", ""}:
        return match.group(0)  # masked already, or a scheme whose token the shapes masked
    return f"{match.group(1)}{quote}{MASK}{quote}"


def secret_values(value: Any, key: str | None = None) -> set[str]:
    """The strings a value holds under secret-sounding keys (to be masked in output too)."""
    found: set[str] = set()
    if key is not None and SECRET_KEY.search(key) and isinstance(value, str | int):
        text = str(value)
        if len(text) >= MIN_SECRET and not isinstance(value, bool):
            found.add(text)
    if isinstance(value, Mapping):
        for k, v in value.items():
            found |= secret_values(v, str(k))
    elif isinstance(value, list | tuple):
        for item in value:
            found |= secret_values(item, key)
    return found


def _masked_match(match: re.Match[str]) -> str:
    word = match.group(1) if match.re.pattern.startswith(r"(?i)\b(bearer") else None
    return f"{word} {MASK}" if word else MASK


def mask_value(value: Any, secrets: Iterable[str] = (), key: str | None = None) -> Any:
    """A JSON value with secrets masked: everything under a secret-sounding key, and the
    secret values and shapes inside every string."""
    if key is not None and SECRET_KEY.search(key) and value not in (None, "", [], {}):
        return MASK
    if isinstance(value, str):
        return mask_text(value, secrets)
    if isinstance(value, Mapping):
        return {k: mask_value(v, secrets, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_value(item, secrets) for item in value]
    return value
