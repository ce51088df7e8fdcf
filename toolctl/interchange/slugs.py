"""Foreign names as registry names: a name toolctl accepts stays; any other becomes a slug.

A slug is stable (the same foreign name always gives the same slug): a look-alike letter
(a Cyrillic e, U+0435) is the ASCII letter it imitates (``skeleton``), accents are dropped,
then lower-case, every run of characters other than ``a-z`` and ``0-9`` becomes one ``-``,
and a name longer than ``MAX_LENGTH`` (OpenAI's limit for function names) is cut and ends
in ``-`` plus 8 hex digits of the name's SHA-256, so two long names that share a prefix
stay apart. The importer keeps the foreign name as the entry's ``title``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from toolctl.names import NAME_PATTERN

MAX_LENGTH = 64
_VALID = re.compile(NAME_PATTERN)
_OTHER = re.compile(r"[^a-z0-9]+")

_LOOKALIKES = str.maketrans(
    # Cyrillic, Greek and other letters drawn like ASCII ones (a subset of Unicode's
    # confusables.txt: the ones a tool name could use to pass for another)
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04bb\u04cf\u051b\u051d\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405\u03bf\u03b1\u03bd\u03c4\u03b9\u03ba\u03c1\u039f\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u03a1\u03a4\u03a5\u03a7\u0131\u2113",
    "aeopcyxijsdhlqwABEKMHOPCTXIJSoavtikpOABEZHIKMNPTYXil",
)


def skeleton(name: str) -> str:
    """``name`` with lookalike letters replaced by the ASCII letters they imitate."""
    return unicodedata.normalize("NFKC", name).translate(_LOOKALIKES)


def slug(name: str) -> str:
    """The registry name for ``name``: itself when valid (and short enough), else a slug."""
    if _VALID.fullmatch(name) and len(name) <= MAX_LENGTH:
        return name
    # look-alikes first: a Cyrillic e (U+0435) is the 'e' it imitates, never dropped (so
    # h-U+0435-llo is 'hello', which first-wins refuses as taken); then accents are dropped
    ascii_form = unicodedata.normalize("NFKD", skeleton(name)).encode("ascii", "ignore").decode()
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
