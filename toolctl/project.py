"""Where toolctl's configuration lives: the project and the user's config file.

A *project* is a directory holding ``toolctl.toml``, found walking up from the working
directory the way git, uv and ruff find theirs. It names the project's registry
directories (relative to itself) and defaults; ``${XDG_CONFIG_HOME}/toolctl/config.toml``
holds the user's defaults. Only ``Settings`` reads these (it passes the environment in).
They are read on every command, so they are checked by hand here, not through pydantic.

A ``toolctl.toml`` owned by another user (not root) is ignored, as git ignores a
repository another user owns: a file planted in a shared directory such as /tmp would
otherwise put its registry first on the search path of everyone working below it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from toolctl.errors import UsageError

PROJECT_FILE = "toolctl.toml"
CONFIG_FILE = "config.toml"
DEFAULT_REGISTRY = "registry"
"""The registry directory of a project whose toolctl.toml names none (and `init`'s)."""


class Defaults(NamedTuple):
    """Values a command uses when no flag or TOOLCTL_* variable gives one."""

    pulsar_url: str | None = None
    container_engine: str | None = None
    timeout: float | None = None
    """Seconds for a tool whose descriptor leaves ``timeout`` at its default."""
    announcements: str | None = None
    """``[announcements]``: None when not configured, ``"off"`` when ``enabled = false``,
    ``""`` to read them on the Pulsar URL in force, else the Pulsar URL to read them on."""
    announce_topic: str | None = None

    def over(self, lower: Defaults) -> Defaults:
        """These defaults, each unset one taken from ``lower``."""
        pairs = zip(self, lower, strict=True)
        return Defaults._make(mine if mine is not None else theirs for mine, theirs in pairs)


class Project(NamedTuple):
    """A ``toolctl.toml``: its registry directories (absolute) and defaults."""

    file: Path
    registries: tuple[Path, ...]
    user_registry: bool
    defaults: Defaults

    @property
    def root(self) -> Path:
        return self.file.parent


class Found(NamedTuple):
    """What the walk up from the working directory found."""

    project: Project | None
    ignored: Path | None = None
    """A toolctl.toml skipped because another user owns it."""


def find_project(start: Path | None, cache: Path | None = None) -> Found:
    """The nearest ``toolctl.toml`` at or above ``start`` that the current user may trust
    (read through ``cache``, a directory, when given: see ``_read``)."""
    if start is None:
        return Found(None)
    for directory in (start, *start.parents):
        candidate = directory / PROJECT_FILE
        try:
            info = candidate.stat()
        except OSError:
            continue
        if not candidate.is_file():
            continue
        if not trusted_owner(candidate, info):
            return Found(None, candidate)
        return Found(read_project(candidate, cache))
    return Found(None)


def trusted_owner(file: Path, info: os.stat_result | None = None) -> bool:
    """Whether the current user (or root) owns ``file``: another user's is ignored."""
    try:
        owner = (info or os.stat(file)).st_uid
    except OSError:
        return True  # nothing there to distrust; reading it says what is wrong
    return owner in (os.getuid(), 0)


_DEFAULT_KEYS = {"pulsar_url", "container_engine", "timeout"}
_ANNOUNCEMENT_KEYS = {"enabled", "pulsar_url", "topic"}
_PROJECT_KEYS = {
    "registry": {"paths", "user"},
    "defaults": _DEFAULT_KEYS,
    "announcements": _ANNOUNCEMENT_KEYS,
}
_CONFIG_KEYS = {"defaults": _DEFAULT_KEYS, "announcements": _ANNOUNCEMENT_KEYS}


def read_project(file: Path, cache: Path | None = None) -> Project:
    """Parse and check a ``toolctl.toml``; UsageError naming the file and key otherwise."""
    document = _read(file, cache)
    _known_keys(file, document, _PROJECT_KEYS)
    registry = document.get("registry", {})
    paths = registry.get("paths", [DEFAULT_REGISTRY])
    if not isinstance(paths, list) or not paths or not all(_a_path(p) for p in paths):
        raise UsageError(f"{file}: registry.paths must be a list of directory names")
    user = registry.get("user", True)
    if not isinstance(user, bool):
        raise UsageError(f"{file}: registry.user must be true or false")
    registries = tuple(_absolute(file.parent / Path(os.path.expanduser(p))) for p in paths)
    defaults = _defaults(file, document.get("defaults", {}), document.get("announcements"))
    _engine_by_name(file, defaults.container_engine)
    return Project(file, registries, user, defaults)


def _engine_by_name(file: Path, engine: str | None) -> None:
    """A project names its container engine, looked up on the user's PATH: never a path.
    The file comes with a checkout, and toolctl runs the engine (with the secrets a
    container is given) for the user's own tools too; a path is the user's to set, in
    config.toml or TOOLCTL_CONTAINER_ENGINE."""
    if engine is not None and ("/" in engine or os.sep in engine or engine.startswith(".")):
        raise UsageError(
            f"{file}: defaults.container_engine must be a name (podman or docker), not a "
            f"path: a project does not choose the program toolctl runs",
            hint="set a path in ~/.config/toolctl/config.toml [defaults] or "
            "TOOLCTL_CONTAINER_ENGINE",
        )
    _engine_known(file, engine)


def _engine_known(file: Path, engine: str | None) -> None:
    """UsageError for an engine that is none toolctl knows (``dockr``): a typo must not
    pass silently until a container tool runs."""
    if engine is None or engine == "auto":
        return
    if not os.path.basename(engine).startswith(("docker", "podman")):
        raise UsageError(
            f"{file}: defaults.container_engine is {engine!r}: expected podman, docker or auto"
        )


def read_config(file: Path, cache: Path | None = None) -> Defaults:
    """The user's defaults from ``config.toml``; none when the file does not exist."""
    if not file.is_file():
        return Defaults()
    document = _read(file, cache)
    _known_keys(file, document, _CONFIG_KEYS)
    defaults = _defaults(file, document.get("defaults", {}), document.get("announcements"))
    _engine_known(file, defaults.container_engine)
    return defaults


def _read(file: Path, cache: Path | None = None) -> dict[str, Any]:
    """The TOML document of ``file``. Every command reads these files, and tomllib costs a
    `toolctl run` ~5% of its start-up, so a parsed copy is kept in ``cache`` as JSON (on the
    run path already), keyed by the file's size, mtime, ctime and inode; a file changed
    within two seconds is not cached (a coarse clock may give a second edit the same mtime).
    """
    import json

    try:
        info = os.stat(file)
    except OSError as exc:
        raise UsageError(f"{file}: unreadable: {exc}") from None
    key = [str(file), info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
    kept = cache / f"config-{_digest(str(file))}.json" if cache is not None else None
    if kept is not None:
        try:
            cached = json.loads(kept.read_bytes())
            if cached["key"] == key:
                return dict(cached["document"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    document = _parse(file)
    if kept is not None and time.time_ns() - info.st_mtime_ns > RACY_NS:
        _keep(kept, {"key": key, "document": document})
    return document


RACY_NS = 2_000_000_000


def _digest(text: str) -> str:
    import zlib

    return f"{zlib.crc32(text.encode('utf-8', 'surrogateescape')):08x}"


def _keep(path: Path, data: dict[str, Any]) -> None:
    import json

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data))
        os.replace(temporary, path)
    except (OSError, TypeError, ValueError):  # a cache that cannot be written is no cache
        pass


def _parse(file: Path) -> dict[str, Any]:
    import tomllib

    from toolctl.targets import NotUtf8, utf8_text

    try:
        with open(file, "rb") as handle:
            return tomllib.loads(utf8_text(handle.read()))  # a BOM read past
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{file}: TOML syntax error: {exc}") from None
    except NotUtf8 as exc:
        raise UsageError(f"{file}: {exc}") from None
    except OSError as exc:
        raise UsageError(f"{file}: unreadable: {exc}") from None
    except RecursionError:
        raise UsageError(f"{file}: nested too deeply to read") from None
    except ValueError as exc:  # tomllib lets int()'s digit limit through
        raise UsageError(f"{file}: TOML value error: {exc}") from None


def _a_path(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and "\0" not in value


def _known_keys(file: Path, document: Mapping[str, Any], known: Mapping[str, set[str]]) -> None:
    for table, value in document.items():
        if table not in known:
            raise UsageError(f"{file}: unknown table [{table}]{_did_you_mean(table, known)}")
        if not isinstance(value, dict):
            raise UsageError(f"{file}: '{table}' must be a table: write [{table}]")
        for key in value:
            if key not in known[table]:
                hint = _did_you_mean(key, known[table])
                raise UsageError(f"{file}: unknown key '{key}' in [{table}]{hint}")


def _did_you_mean(word: str, choices: Any) -> str:
    import difflib

    close = difflib.get_close_matches(word, sorted(choices), n=1)
    return f"; did you mean '{close[0]}'?" if close else f"; expected {', '.join(sorted(choices))}"


def _defaults(
    file: Path, table: Mapping[str, Any], announcements: Mapping[str, Any] | None = None
) -> Defaults:
    for key in ("pulsar_url", "container_engine"):
        if key in table and not (isinstance(table[key], str) and table[key]):
            raise UsageError(f"{file}: defaults.{key} must be a non-empty string")
    timeout = table.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= 86400
    ):
        raise UsageError(f"{file}: defaults.timeout must be seconds above 0, at most 86400")
    return Defaults(
        table.get("pulsar_url"),
        table.get("container_engine"),
        float(timeout) if timeout is not None else None,
        *_announcements(file, announcements),
    )


def _announcements(file: Path, table: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """``[announcements]`` as (where to read them, the topic): see ``Defaults``."""
    if table is None:
        return None, None
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise UsageError(f"{file}: announcements.enabled must be true or false")
    for key in ("pulsar_url", "topic"):
        if key in table and not (isinstance(table[key], str) and table[key]):
            raise UsageError(f"{file}: announcements.{key} must be a non-empty string")
    if not enabled:
        return "off", None
    return table.get("pulsar_url", ""), table.get("topic")


def project_text(registry: str = DEFAULT_REGISTRY) -> str:
    """What ``toolctl init`` writes: the keys a project may set, the defaults commented."""
    return (
        "# This directory is a toolctl project: toolctl finds this file from any directory\n"
        "# below it (docs/reference/configuration.md).\n"
        "\n"
        "[registry]\n"
        "# Registry directories, relative to this file, first wins; `register` writes to the\n"
        "# first. The user registry is read after them unless user = false.\n"
        f"paths = [{_quoted(registry)}]\n"
        "user = true\n"
        "\n"
        "[defaults]\n"
        '# pulsar_url = "pulsar://localhost:6650"\n'
        '# container_engine = "podman"      # or "docker"; default: the first that answers\n'
        "# timeout = 60                     # seconds, for tools that set no timeout\n"
    )


def _quoted(text: str) -> str:
    import json

    return json.dumps(text)


def _absolute(path: Path) -> Path:
    # Absolute but not resolved: a symlinked registry keeps the name the user gave it.
    return Path(os.path.abspath(path))
