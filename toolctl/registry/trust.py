"""The keys a registry trusts to announce services: ``[[trust]]`` entries, read and written.

```toml
[[trust]]
key = "ed25519:…"           # what `toolctl keygen` printed
services = "joke-*"         # which services it may announce (a glob; "*" for any)
```

``key = "any"`` opts in to announcements of its services that no trusted key signed.

They are read from the registry's files only (never from announcements), when
announcements are read. `toolctl trust add` writes them (``registry.announced_view.add_trust``).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import NamedTuple

from toolctl.findings import Finding
from toolctl.settings import Settings

TRUST_FILE = "trust.toml"
ANY = "any"
"""The key of the opt-in entry: announcements of its services are believed unsigned, or
signed by any key (`toolctl trust add any --services PATTERN`)."""
CODE = "trust"


class Trusted(NamedTuple):
    """One ``[[trust]]`` entry: a public key and the services it may announce."""

    key: str
    services: str
    file: str
    line: int

    def allows(self, service: str) -> bool:
        return fnmatch.fnmatchcase(service, self.services)


def read_trust(settings: Settings) -> tuple[list[Trusted], list[Finding]]:
    """Every valid ``[[trust]]`` entry of the registry's files, and the invalid ones."""
    import tomllib

    from toolctl.registry.loader import walk
    from toolctl.signing import public_bytes

    files, _ = walk(settings.without_announcements().search_path)
    entries: list[Trusted] = []
    problems: list[Finding] = []
    for found in files:
        try:
            with open(found.path, "rb") as handle:
                data = handle.read()
            if b"trust" not in data:  # most files: not worth parsing (a registry may be big)
                continue
            tables = tomllib.loads(data.decode("utf-8-sig")).get("trust")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError):
            continue  # the loader reports a file that does not parse
        if tables is None:
            continue
        lines = _header_lines(found.path)
        for position, table in enumerate(tables if isinstance(tables, list) else [tables]):
            line = lines[position] if position < len(lines) else 1
            key = table.get("key") if isinstance(table, dict) else None
            services = table.get("services") if isinstance(table, dict) else None
            if not isinstance(key, str) or (key != ANY and public_bytes(key) is None):
                problems.append(
                    Finding("error", CODE, found.path, line, "[[trust]] key must be ed25519:BASE64")
                )
            elif not isinstance(services, str) or not services:
                problems.append(
                    Finding("error", CODE, found.path, line, "[[trust]] services must be a pattern")
                )
            else:
                entries.append(Trusted(key, services, found.path, line))
    return entries, problems


def _header_lines(path: str) -> list[int]:
    import re

    pattern = re.compile(r"^\s*\[\[\s*trust\s*\]\]")
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # as read_trust reads it
    except (OSError, UnicodeDecodeError):
        return []
    # TOML's lines: str.splitlines() would also break at U+2028 in a comment
    return [n for n, line in enumerate(text.split("\n"), start=1) if pattern.match(line)]
