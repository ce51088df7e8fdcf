"""Foreign names as registry names: a name toolctl accepts stays; any other becomes a slug.

A slug is stable (the same foreign name always gives the same slug): lower-case, every run
of characters other than ``a-z`` and ``0-9`` becomes one ``-``, and a name longer than
``MAX_LENGTH`` (OpenAI's limit for function names) is cut and ends in ``-`` plus 8 hex
digits of the name's SHA-256, so two long names that share a prefix stay apart. The
importer keeps the foreign name as the entry's ``title``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from toolctl.names import NAME_PATTERN

MAX_LENGTH = 64
_VALID = re.compile(NAME_PATTERN)
_OTHER = re.compile(r"[^a-z0-9]+")


def slug(name: str) -> str:
    """The registry name for ``name``: itself when valid (and short enough), else a slug."""
    if _VALID.fullmatch(name) and len(name) <= MAX_LENGTH:
        return name
    ascii_form = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    text = _OTHER.sub("-", ascii_form.lower()).strip("-")
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    if not text:
        return f"x-{digest}"
    if len(text) > MAX_LENGTH:
        return f"{text[: MAX_LENGTH - 9].rstrip('-')}-{digest}"
    return text


def named(table: dict[str, object], foreign: str) -> dict[str, object]:
    """``table`` with its registry name, and the foreign one as ``title`` when they differ."""
    name = slug(foreign)
    titled = {"name": name, "title": foreign} if name != foreign else {"name": name}
    return titled | {k: v for k, v in table.items() if k not in ("name", "title")}
