"""`toolctl mcp install --client C`: a `toolctl mcp serve` entry in an MCP client's config.

Each client keeps its servers in a JSON file of its own (VS Code's is JSONC) under a key of
its own. The entry is merged into what is there (other servers, comments and layout kept,
``jsonc_edit``), the old file kept as ``FILE.bak``, the new one written atomically (a
temporary file in the same directory, then renamed over it).

The entry names the registry directories in force with ``--registry``: a client starts its
servers from a directory of its own choosing, where another registry (or none) would be
in force; and the ``toolctl`` it runs is the one running now, by absolute path, since a
desktop client does not read the shell's PATH. A project's own config (Claude Code's
``.mcp.json``, VS Code's ``.vscode/mcp.json``), shared through git, is the exception: its
entry is ``toolctl mcp serve`` from PATH, run in the project (``shared_config``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolctl.errors import UsageError
from toolctl.interchange.jsonc_edit import JsoncError
from toolctl.settings import Settings


@dataclass(frozen=True)
class Client:
    """Where a client keeps its MCP servers: the file and the key path of the servers."""

    name: str
    title: str
    keys: tuple[str, ...]
    stdio_type: bool = False
    """VS Code's entries say ``"type": "stdio"``."""

    def config_path(self, home: Path, cwd: Path) -> Path:
        if self.name == "claude-desktop":
            if sys.platform == "darwin":
                return home / "Library/Application Support/Claude/claude_desktop_config.json"
            if sys.platform == "win32":
                appdata = os.environ.get("APPDATA", str(home / "AppData/Roaming"))
                return Path(appdata) / "Claude/claude_desktop_config.json"
            from toolctl.settings import xdg_home

            config = xdg_home(os.environ, "XDG_CONFIG_HOME", ".config", home)
            return config / "Claude/claude_desktop_config.json"
        if self.name == "claude-code":
            return cwd / ".mcp.json"  # the project's servers, shared through git
        if self.name == "cursor":
            return home / ".cursor/mcp.json"
        if self.name == "vscode":
            return cwd / ".vscode/mcp.json"
        return home / ".codeium/windsurf/mcp_config.json"


CLIENTS = {
    client.name: client
    for client in (
        Client("claude-desktop", "Claude Desktop", ("mcpServers",)),
        Client("claude-code", "Claude Code", ("mcpServers",)),
        Client("cursor", "Cursor", ("mcpServers",)),
        Client("vscode", "VS Code", ("servers",), stdio_type=True),
        Client("windsurf", "Windsurf", ("mcpServers",)),
    )
}


@dataclass(frozen=True)
class Installed:
    """What ``install_client`` did (or, printing only, would do)."""

    client: Client
    path: Path
    name: str
    entry: dict[str, Any]
    text: str
    """The whole config file as written (or as it would be)."""
    backup: Path | None
    replaced: bool
    shared: bool = False
    """The entry is a project's, for everyone who clones it (see ``shared_config``)."""
    unchanged: bool = False
    """The file held this entry already, as it is: nothing was written."""


def serve_entry(
    settings: Settings,
    client: Client,
    groups: Sequence[str] = (),
    actions: Sequence[str] = (),
    tools: Sequence[str] = (),
    *,
    shared: bool = False,
) -> dict[str, Any]:
    """The client's entry that starts `toolctl mcp serve` on the registry in force; a
    ``shared`` one (a project's file, in git) names nothing of this machine (see
    ``shared_config``)."""
    args = ["mcp", "serve"]
    for option, values in (("--group", groups), ("--action", actions), ("--tool", tools)):
        for value in values:
            args += [option, value]
    entry: dict[str, Any] = {"type": "stdio"} if client.stdio_type else {}
    if shared:
        entry.update(command="toolctl", args=args)
        return entry | ({"cwd": "${workspaceFolder}"} if client.name == "vscode" else {})
    for directory in settings.search_path:
        args += ["--registry", str(Path(directory).resolve())]
    command, *head = _toolctl_command()
    entry.update(command=command, args=[*head, *args])
    return entry


SHARED_CLIENTS = frozenset({"claude-code", "vscode"})
"""Clients whose config is the project's (``.mcp.json``, ``.vscode/mcp.json``), shared
through git."""


def _not_led_out(settings: Settings, client: Client, path: Path) -> None:
    """UsageError for a project's own config (`.mcp.json`, `.vscode/mcp.json`) that a
    link leads out of the project: a cloned repository may bring one pointing at any of
    your files, which was written through (an empty one made JSON), its .bak beside it.
    A link given with --config is yours, and followed."""
    if client.name not in SHARED_CLIENTS:
        return
    base = settings.project.root if settings.project is not None else Path(os.getcwd())
    real = Path(os.path.realpath(path))
    if os.path.islink(path) and not real.is_relative_to(os.path.realpath(base)):
        raise UsageError(
            f"{path} is a link to {real}, outside the project: not written through",
            hint="remove the link (a cloned repository may bring one), or name the file "
            "with --config",
        )


def shared_config(settings: Settings, client: Client, path: Path) -> bool:
    """Whether ``path`` is a project's own config, for everyone who clones it: the client
    keeps it in the project, it is inside the project, and the registry in force is the
    project's (no --registry, no TOOLCTL_REGISTRY). Its entry is then ``toolctl mcp
    serve`` from PATH, run in the project (where it finds toolctl.toml, then each user's
    own registry): absolute paths of this machine would start nothing on another."""
    project = settings.project
    if client.name not in SHARED_CLIENTS or project is None:
        return False
    if any(source in ("--registry", "TOOLCTL_REGISTRY") for source in settings.sources):
        return False
    return Path(os.path.abspath(path)).is_relative_to(project.root)


def _toolctl_command() -> list[str]:
    """The toolctl running now: its script by absolute path, else this Python with -m.
    A symlink is kept as it is, not resolved: `uv tool install` links ~/.local/bin/toolctl
    to a path of uv's own, which an upgrade may move."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "toolctl":
        return [os.path.abspath(shutil.which(str(script)) or str(script))]
    on_path = shutil.which("toolctl")
    if on_path:
        return [os.path.abspath(on_path)]
    return [sys.executable, "-m", "toolctl"]


def install_client(
    settings: Settings,
    client_name: str,
    *,
    name: str = "toolctl",
    groups: Sequence[str] = (),
    actions: Sequence[str] = (),
    tools: Sequence[str] = (),
    config: Path | None = None,
    write: bool = True,
) -> Installed:
    """Merge the entry into the client's config (``config`` overrides where it is)."""
    from toolctl.targets import output_file

    client = CLIENTS.get(client_name)
    if client is None:
        raise UsageError(
            f"unknown client '{client_name}'", hint=f"one of: {', '.join(sorted(CLIENTS))}"
        )
    if not name.strip() or not name.isprintable():  # a key the client shows in its list
        raise UsageError(
            f"--name {name!r}: a server's name is text to show (not empty, no control characters)"
        )
    _served_exists(settings, groups, actions, tools)
    path = config or client.config_path(Path.home(), Path(os.getcwd()))
    shared = shared_config(settings, client, path)
    entry = serve_entry(settings, client, groups, actions, tools, shared=shared)
    if config is None:
        _not_led_out(settings, client, path)
    target = output_file(path)  # through a symlink; a device or a directory refused
    with _editing(settings, target):
        for _ in range(ATTEMPTS):
            done = _merged(client, path, target, name, entry, shared, write=write)
            if done is not None:
                return done
    raise UsageError(
        f"{path}: cannot edit it: it kept changing while toolctl wrote it",
        hint="close the client that writes it, then try again",
    )


ATTEMPTS = 5
"""Edits of a config file that changed between its read and its write, before giving up."""


def _merged(
    client: Client, path: Path, target: Path, name: str, entry: Any, shared: bool, *, write: bool
) -> Installed | None:
    """The entry merged into the file as it is now and written; None, nothing written, when
    the file changed after it was read (the client itself, or another editor, wrote it)."""
    from toolctl.interchange.jsonc_edit import has_member, set_member

    written = _read(target)
    # edited as text with "\n" and no byte-order mark; written back as the file was
    old = None if written is None else written.removeprefix(BOM).replace("\r\n", "\n")
    try:
        document = None if old is None else _parsed(old)
        text = set_member(old or "", client.keys, name, entry)
        replaced = old is not None and has_member(old, client.keys, name)
        if document is not None:
            _edited_as_meant(document, text, client.keys, name, entry)
    except JsoncError as exc:
        raise UsageError(
            f"{path}: cannot edit it: {exc}", hint="fix the file, or --print"
        ) from None
    backup = None
    unchanged = text == old
    if write and not unchanged:
        if _read(target) != written:
            return None
        backup = _write(target, _as_written(text, written), written)
    return Installed(client, path, name, entry, text, backup, replaced, shared, unchanged)


@contextlib.contextmanager
def _editing(settings: Settings, target: Path) -> Iterator[None]:
    """Hold the lock of edits to ``target``, a file of toolctl's state directory named
    after it (nothing is added beside a client's config): two `mcp install` at once each
    read the file the other had not yet written, and the first one's entry was lost.
    Without a state directory to lock in, the check before the write is all there is."""
    import fcntl
    import hashlib

    digest = hashlib.sha256(os.fsencode(target.absolute())).hexdigest()[:24]
    lock = settings.state_dir / "locks" / f"config-{digest}.lock"
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


BOM = "\ufeff"


def _as_written(text: str, written: str | None) -> str:
    """``text`` with the old file's byte-order mark and CRLF line ends, if it had them."""
    if written is None:
        return text
    if "\r\n" in written:
        text = text.replace("\n", "\r\n")
    return BOM + text if written.startswith(BOM) else text


def _served_exists(
    settings: Settings, groups: Sequence[str], actions: Sequence[str], tools: Sequence[str]
) -> None:
    """NotFound for a registry directory, group, action or tool the entry names that does
    not exist now: the client would start a server that exits at once (`mcp serve` refuses
    it), and say so only in its own logs."""
    from toolctl.registry.directories import require_directories
    from toolctl.registry.index import Registry

    require_directories(settings)
    if not (groups or actions or tools):
        return
    registry = Registry.open(settings)
    for kind, names in (("group", groups), ("action", actions), ("tool", tools)):
        for name in names:
            registry.resolve(kind, name)


def _read(path: Path) -> str | None:
    """The file's text as written (its line ends kept), or None when there is none."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: cannot edit it: it is not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


MAX_JSONC = 1024**2
"""The largest config read as JSONC (comments, trailing commas): json5 reads some 30 KB a
second; plain JSON, read by the json module, may be any size."""


def _edited_as_meant(expected: Any, new: str, keys: Sequence[str], name: str, entry: Any) -> None:
    """JsoncError unless ``new`` reads as ``expected`` (the old document, as ``_parsed``
    read it) plus the entry: the editor walks JSONC as JSON with comments, and a file JSON5
    reads otherwise (a line comment ending at a lone CR or U+2028, a single-quoted string)
    had the entry written in the wrong place, a second ``mcpServers`` the client took,
    every other server lost, and "added"."""
    import json

    where = expected
    for key in keys:
        where = where.setdefault(key, {}) if isinstance(where, dict) else {}
    if isinstance(where, dict):
        where[name] = json.loads(json.dumps(entry))
    try:
        result = _parsed(new)
    except JsoncError:
        result = None
    if result != expected:
        raise JsoncError(
            "it is written in a way the editor cannot follow (a comment ending at a lone CR "
            "or U+2028, a single-quoted string): nothing was written"
        )


def _parsed(text: str) -> Any:
    """The document ``text`` holds; JsoncError unless it is JSON or JSONC as a whole, each
    key once in an object: the editor only walks the path it edits, and must not leave a
    file the client cannot read (trailing text, a bad value elsewhere) looking edited, nor
    edit the first of two ``mcpServers`` when the client reads the last. (None: no text.)"""
    import json

    from toolctl.arguments import DuplicateKey, unique_keys

    if not text.strip():
        return None
    try:
        return json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKey as exc:  # the editor takes the first, a client the last
        raise JsoncError(f"it gives {exc} twice in one object") from None
    except RecursionError:
        raise JsoncError("it is nested too deep") from None
    except ValueError as exc:
        plain = exc
    if len(text) > MAX_JSONC:
        raise JsoncError(f"it is not plain JSON ({plain}), and too large to read as JSONC")
    import json5

    twice: list[str] = []  # json5 turns what a hook raises into its own ValueError

    def each_once(given: Iterable[tuple[str, Any]]) -> dict[str, Any]:
        pairs = list(given)
        try:
            return unique_keys(pairs)
        except DuplicateKey as exc:
            twice.append(str(exc))
            return dict(pairs)

    try:
        document = json5.loads(text, object_pairs_hook=each_once)
    except RecursionError:
        raise JsoncError("it is nested too deep") from None
    except ValueError as exc:
        raise JsoncError(f"it is not JSON or JSONC: {exc}") from None
    if twice:
        raise JsoncError(f"it gives {twice[0]} twice in one object")
    return document


def _keep_old(path: Path) -> Path:
    """Copy ``path`` to ``FILE.bak`` by a rename over it: whatever stands there (a symlink
    a cloned repository brought, pointing at ~/.bashrc) is replaced, never written through.
    A directory there is refused."""
    import tempfile

    backup = path.with_name(path.name + ".bak")
    if backup.is_dir() and not backup.is_symlink():
        raise UsageError(
            f"{backup} is a directory, where the old file would be kept", hint="move it away"
        )
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{backup.name}.")
    os.close(handle)
    try:
        shutil.copy2(path, temporary)
        os.replace(temporary, backup)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return backup


def _write(path: Path, text: str, old: str | None) -> Path | None:
    """Write ``text`` atomically; the old file, if any, stays as ``FILE.bak``."""
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        backup = _keep_old(path) if old is not None else None
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            if old is not None:
                shutil.copymode(path, temporary)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    return backup
