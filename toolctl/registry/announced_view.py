"""Announced names as people see them: their origin in `list` and `show`, `adopt`, and
`trust add` and `trust remove` (``trust.toml`` where `register` writes)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolctl.findings import Finding
    from toolctl.registry.loader import Definition
    from toolctl.registry.trust import Trusted
    from toolctl.reporting import Reporter
    from toolctl.settings import Settings


def origin_text(settings: Settings, file: str) -> str | None:
    """ "announced by SERVICE on HOST at TIME" for an announced definition, else None."""
    if settings.announced is None:
        return None
    from toolctl.registry.announced import origin_of

    origin = origin_of(settings, file)
    return origin.describe() if origin is not None else None


def with_origins(settings: Settings, found: Iterable[Definition]) -> Iterator[Definition]:
    """The definitions, each announced one's data with its ``origin``."""
    for definition in found:
        origin = origin_text(settings, definition.file)
        yield (
            definition
            if origin is None
            else definition._replace(data={**definition.data, "origin": origin})
        )


def adopt(settings: Settings, reporter: Reporter, name: str, output: Path | None) -> Path:
    """`toolctl adopt NAME`: the announced tool (or service) NAME and the service it runs on,
    written to ``output`` (default ``./NAME.toml``) for review before `toolctl register`;
    TransportUnavailable when the announcements cannot be read now."""
    from toolctl.errors import UsageError
    from toolctl.registry import open_registry
    from toolctl.registry.dumping import registry_toml

    if settings.announced is None:
        raise UsageError(
            "announcements are not read here",
            hint="pass --announced PULSAR_URL, or set [announcements] in toolctl.toml",
        )
    # what is announced now, never a copy read before: a worker's stop (or a tombstone)
    # since then is unseen, and a file made from it would win over the broker from then on
    registry = open_registry(settings, reporter, announcements_required=True)
    found = registry.find(name, ("tool", "service"))
    announced = [d for d in found if origin_text(settings, d.file) is not None]
    if not announced:
        from toolctl.errors import NotFound

        raise NotFound(
            "announced tool or service",
            name,
            hint="`toolctl list --announced URL` shows them with their origin",
        )
    if announced[0] is not found[0]:
        raise UsageError(
            f"'{name}' is not an announced name in force",
            hint="`toolctl list --announced URL` shows them with their origin",
        )
    from toolctl.registry.loader import parse_file

    parsed = parse_file(announced[0].file)
    service = parsed.raw.get("service", [])
    tools = [t for t in parsed.raw.get("tool", []) if t.get("name") == name]
    document = {"service": service, **({"tool": tools} if tools else {})}
    target = output or Path(f"{name}.toml")
    if target.exists():
        raise UsageError(f"{target} already exists", hint="pass --output FILE")
    origin = origin_text(settings, announced[0].file)  # one printable line (announced.py)
    header = f"# {origin}; review it, then `toolctl register {target}`\n"
    try:
        with target.open("x", encoding="utf-8") as written:
            written.write(header + registry_toml(document))
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target


def add_trust(settings: Settings, key: str, services: str) -> tuple[Path, bool]:
    """Append a ``[[trust]]`` entry to ``trust.toml`` where `register` writes; the file that
    holds it and whether this call added it (the same key and pattern trusted already, in
    any file of the search path, is left alone)."""
    import json
    import os

    from toolctl.arguments import is_text
    from toolctl.errors import UsageError
    from toolctl.registry.trust import ANY, TRUST_FILE, read_trust
    from toolctl.registry.writer import locked, target_directory
    from toolctl.signing import check_public_key

    if key != ANY:
        check_public_key(key)
    if not services or any(c in services for c in '\n\r"\\') or not is_text(services):
        raise UsageError(f"bad service pattern {services!a}", hint='for example "joke-*"')
    files = settings.without_announcements()
    directory = target_directory(files)
    path = directory / TRUST_FILE
    with locked(directory):
        present, _ = read_trust(files)
        held = [t for t in present if t.key == key and t.services == services]
        if held:
            return Path(held[0].file), False
        old = _trust_text(path)
        entry = f"[[trust]]\nkey = {json.dumps(key)}\nservices = {json.dumps(services)}\n"
        text = f"{old}{chr(10) if old and not old.endswith(chr(10) * 2) else ''}{entry}"
        _appended(path, old, text, {"key": key, "services": services})
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(text.lstrip("\n"), encoding="utf-8")
        os.replace(temporary, path)
    return path, True


def _appended(path: Path, old: str, new: str, entry: dict[str, str]) -> None:
    """RegistryError, the file left as it is, unless ``new`` reads as ``old`` with one more
    ``[[trust]]`` entry: a file giving trust in another form (``trust = [...]``, a
    ``[trust]`` table) would not parse with one appended, and its entries would be lost."""
    import tomllib

    from toolctl.errors import RegistryError

    try:
        before, after = tomllib.loads(old), tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = None
    if after is None or after.get("trust") != [*before.get("trust", []), entry]:
        raise RegistryError(
            f"{path}: cannot add to it: it gives trust in a form an appended [[trust]] "
            "table would break",
            hint="add the [[trust]] entry by hand",
        )


def _trust_text(path: Path) -> str:
    """What ``trust.toml`` holds now, to append to; RegistryError (the file left as it is)
    for one that is not a TOML file toolctl can read: appending would not make it one."""
    import tomllib

    from toolctl.errors import RegistryError

    if not path.exists() and not path.is_symlink():
        return ""
    try:
        text = path.read_text(encoding="utf-8-sig")  # (a BOM an editor wrote: dropped)
        tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if isinstance(exc, UnicodeDecodeError):
            reason = "it is not UTF-8 text"
        raise RegistryError(f"{path}: cannot add to it: {reason}", hint="fix or move it") from None
    return text


def trusted_keys(settings: Settings) -> tuple[list[Trusted], list[Finding]]:
    """`trust list`: every ``[[trust]]`` entry of the registry's files, and the invalid ones."""
    from toolctl.registry.trust import read_trust

    return read_trust(settings.without_announcements())


def remove_trust(
    settings: Settings, key: str, services: str | None = None
) -> list[tuple[Path, str]]:
    """Remove the ``[[trust]]`` entries of ``key`` (those for ``services`` only, when
    given) from the directory `register` writes to; each file changed and the pattern its
    entry trusted. NotFound when no entry of the search path matches; RegistryError, with
    nothing removed, when one is in force from another directory (its ``-r`` named), or a
    file's text cannot be cut so that only those entries go (comments and other tables
    are kept as written)."""
    import shlex

    from toolctl.errors import NotFound, RegistryError
    from toolctl.registry.trust import read_trust
    from toolctl.registry.writer import locked, target_directory

    files = settings.without_announcements()
    directory = target_directory(files)
    with locked(directory):
        present, _ = read_trust(files)
        chosen = [t for t in present if t.key == key and services in (None, t.services)]
        if not chosen:
            which = f"none for services {services!r}; " if services is not None else ""
            raise NotFound("trusted key", key, hint=f"{which}`toolctl trust list` lists them")
        elsewhere = [t for t in chosen if not Path(t.file).is_relative_to(directory)]
        if elsewhere:
            home = next(
                (d for d in files.search_path if Path(elsewhere[0].file).is_relative_to(d)),
                Path(elsewhere[0].file).parent,
            )
            raise RegistryError(
                f"key {key} is trusted in {elsewhere[0].file}:{elsewhere[0].line}, not in "
                f"{directory} where register writes; nothing was removed",
                hint=f"to remove it there: toolctl trust remove {shlex.quote(key)} "
                f"-r {shlex.quote(str(home))}",
            )
        by_file: dict[str, list[int]] = {}
        for entry in chosen:
            by_file.setdefault(entry.file, []).append(entry.line)
        entries = {(t.key, t.services) for t in chosen}
        cut = {f: _without_entries(Path(f), lines, entries) for f, lines in by_file.items()}
        for file, text in cut.items():
            _replace_text(Path(file), text)
    return [(Path(t.file), t.services) for t in chosen]


def _without_entries(path: Path, headers: list[int], chosen: set[tuple[str, str]]) -> str:
    """``path``'s text without the ``[[trust]]`` tables whose headers are on ``headers``
    (each up to the next table's header, the blank lines before it kept out); RegistryError
    unless the tables cut are the ``chosen`` (key, services) entries and what is left
    parses to the same document less exactly those."""
    import re
    import tomllib

    from toolctl.errors import RegistryError

    try:
        text = path.read_text(encoding="utf-8-sig")  # (a BOM an editor wrote: dropped)
        before = tomllib.loads(text)  # read_trust parsed it a moment ago; changed since?
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it no longer parses"
        raise RegistryError(f"{path}: cannot remove from it: {reason}") from None
    lines = text.split("\n")  # TOML's lines (str.splitlines also breaks at U+2028)
    table = re.compile(r"^\s*\[")
    drop: set[int] = set()
    for header in headers:
        end = header  # 1-based: the header's own line, then up to the next table's
        while end < len(lines) and not table.match(lines[end]):
            end += 1
        while end > header and end < len(lines) and lines[end - 1].lstrip().startswith("#"):
            end -= 1  # a comment just above the next table is that table's
        drop.update(range(header - 1, end))
    left = "\n".join(line for number, line in enumerate(lines) if number not in drop)
    left = re.sub(r"\n{3,}", "\n\n", left).strip("\n")
    left = f"{left}\n" if left else ""
    going = _positions(text, headers)
    expected = {k: v for k, v in before.items() if k != "trust"}
    kept = [t for n, t in enumerate(before.get("trust", [])) if n not in going]
    removed = [t for n, t in enumerate(before.get("trust", [])) if n in going]
    # the lines must name the entries chosen (a line number off by a BOM cut another key)
    named = len(going) == len(headers) and all(_entry_of(t) in chosen for t in removed)
    if kept:
        expected["trust"] = kept
    try:
        same = named and tomllib.loads(left) == expected
    except tomllib.TOMLDecodeError:
        same = False
    if not same:  # a [[trust]] inside a multi-line string, a table the cut reached into
        raise RegistryError(
            f"{path}: cannot remove the entry without touching the rest of the file",
            hint="remove its [[trust]] table by hand",
        )
    return left


def _entry_of(table: Any) -> tuple[Any, Any]:
    return (table.get("key"), table.get("services")) if isinstance(table, dict) else ("", "")


def _positions(text: str, headers: list[int]) -> set[int]:
    """Which ``[[trust]]`` tables of ``text`` (counted from 0) start on ``headers``."""
    import re

    pattern = re.compile(r"^\s*\[\[\s*trust\s*\]\]")
    starts = [n for n, line in enumerate(text.split("\n"), start=1) if pattern.match(line)]
    return {starts.index(h) for h in headers if h in starts}


def _replace_text(path: Path, text: str) -> None:
    """``path`` holds ``text`` (written aside, then renamed over it), or is removed when
    ``text`` is empty: a trust.toml whose last entry went."""
    import os

    if not text:
        path.unlink()
        return
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
