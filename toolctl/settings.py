"""Command-line flags and TOOLCTL_* environment variables folded into one frozen Settings.

Nothing else in toolctl reads ``os.environ``: code that needs a variable (a secret named by
``${env:NAME}`` in a descriptor, say) gets it from ``Settings.environ``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from toolctl.project import CONFIG_FILE, Project, find_project, read_config

if TYPE_CHECKING:
    from toolctl.errors import OutputLost

DEFAULT_PULSAR_URL = "pulsar://localhost:6650"
ANNOUNCE_TOPIC = "persistent://tg/config/tool-descriptors"
"""Where workers announce their tools and readers take them (``[announcements] topic``)."""
DEFAULT_HISTORY_CALLS = 100_000
"""Calls the run history keeps (the oldest go first): ~30 MB of SQLite, read in well
under a second by `toolctl stats`."""
DEFAULT_HISTORY_DAYS = 90.0
"""Days the run history keeps a call."""


class RecordSettings(NamedTuple):
    """What every call leaves behind (``toolctl.records``), from TOOLCTL_* variables.

    ``history`` (TOOLCTL_HISTORY=0 turns it off), ``record_arguments``
    (TOOLCTL_RECORD_ARGUMENTS=1 or ``--record-arguments``: arguments and output stored,
    secrets masked), the bounds (TOOLCTL_HISTORY_MAX_CALLS, TOOLCTL_HISTORY_MAX_DAYS) and
    the session calls belong to (TOOLCTL_SESSION).
    """

    history: bool = True
    record_arguments: bool = False
    max_calls: int = DEFAULT_HISTORY_CALLS
    max_days: float = DEFAULT_HISTORY_DAYS
    session: str | None = None

    @classmethod
    def from_environ(cls, env: Mapping[str, str]) -> RecordSettings:
        return cls(
            history=_switch(env, "TOOLCTL_HISTORY", default=True),
            record_arguments=_switch(env, "TOOLCTL_RECORD_ARGUMENTS"),
            max_calls=_number(env, "TOOLCTL_HISTORY_MAX_CALLS", DEFAULT_HISTORY_CALLS, int),
            max_days=_number(env, "TOOLCTL_HISTORY_MAX_DAYS", DEFAULT_HISTORY_DAYS, float),
            session=(env.get("TOOLCTL_SESSION") or "").strip()[:200] or None,
        )


_MOST = 10**15
"""The largest bound a variable may give: SQLite's integers end at 2**63, and a history
of 10**15 calls or days is no bound anyone needs."""


def _number(env: Mapping[str, str], variable: str, default: Any, kind: type) -> Any:
    """A positive number from a variable (unset or empty: the default), at most ``_MOST``.
    UsageError for one that is not: a bound mistyped must not silently be another."""
    value = (env.get(variable) or "").strip()
    if not value:
        return default
    try:
        number = kind(value)
    except ValueError:
        number = 0
    if not 0 < number <= _MOST:  # NaN and infinity too
        from toolctl.errors import UsageError

        raise UsageError(f"{variable}={value!r}: expected a number above 0, at most 10**15")
    return number


_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"0", "false", "no", "off"})


def _switch(env: Mapping[str, str], variable: str, *, default: bool = False) -> bool:
    """An on/off variable (unset or empty: ``default``). UsageError for any other value:
    ``TOOLCTL_STRICT=maybe`` must not leave a CI run silently without --strict."""
    value = (env.get(variable) or "").strip().lower()
    if not value:
        return default
    if value in _ON or value in _OFF:
        return value in _ON
    from toolctl.errors import UsageError

    raise UsageError(f"{variable}={env[variable]!r}: expected 1 or 0 (true/false, yes/no, on/off)")


def _log_json(env: Mapping[str, str]) -> bool:
    value = env.get("TOOLCTL_LOG", "").strip().lower()
    if value not in ("", "json", "text"):
        from toolctl.errors import UsageError

        raise UsageError(f"TOOLCTL_LOG={env['TOOLCTL_LOG']!r}: expected json or text")
    return value == "json"


def xdg_home(
    environ: Mapping[str, str], variable: str, fallback: str, home: Path | None = None
) -> Path:
    """``$variable``, else ``~/fallback``: a relative value is ignored, as the XDG Base
    Directory spec says (it would put files below whatever directory a command runs in)."""
    given = environ.get(variable) or ""
    if os.path.isabs(given):
        return Path(given)
    return (home or Path(environ.get("HOME") or Path.home())) / fallback


def _xdg(environ: Mapping[str, str], variable: str, fallback: str) -> Path:
    return xdg_home(environ, variable, fallback) / "toolctl"


def own_directories(environ: Mapping[str, str]) -> dict[str, Path]:
    """Where toolctl keeps its files, by the variable that moves each: its state (process
    table, history, logs), its data (the user registry), its cache and its config."""
    return {
        "XDG_STATE_HOME": _xdg(environ, "XDG_STATE_HOME", ".local/state"),
        "XDG_DATA_HOME": _xdg(environ, "XDG_DATA_HOME", ".local/share"),
        "XDG_CACHE_HOME": _xdg(environ, "XDG_CACHE_HOME", ".cache"),
        "XDG_CONFIG_HOME": _xdg(environ, "XDG_CONFIG_HOME", ".config"),
    }


_UNUSABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.ELOOP})
"""What a file toolctl keeps meets when its directory is not one it can use."""


def own_file_unusable(exc: BaseException) -> OutputLost | None:
    """OutputLost (74) for a file toolctl keeps (under its state, data, cache or config
    directory) that cannot be made or opened there: a read-only disk, a path through a
    file, no permission. The user's machine, not a bug: no crash report (which would be
    written there too)."""
    if not isinstance(exc, OSError) or exc.errno not in _UNUSABLE or not exc.filename:
        return None
    from toolctl.errors import OutputLost

    path = Path(os.path.abspath(os.fsdecode(exc.filename)))
    for variable, directory in own_directories(os.environ).items():
        if path.is_relative_to(directory):
            return OutputLost(
                f"cannot use {path}: {exc.strerror or exc}",
                hint=f"toolctl keeps its files in {directory}: make it writable, or set "
                f"{variable} to another directory",
            )
    return None


def _login_name(environ: Mapping[str, str]) -> str:
    for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if environ.get(variable):
            return environ[variable]
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "toolctl"


class Settings(NamedTuple):
    """Everything a command needs to know about where it runs and how.

    A NamedTuple rather than a frozen dataclass: it is built on every command, and a
    thirteen-field frozen dataclass costs ~1 ms just to define.
    """

    search_path: tuple[Path, ...]
    explicit_registry: bool
    strict: bool
    data_dir: Path
    state_dir: Path
    cache_dir: Path
    pulsar_url: str
    container_engine: str | None
    log_json: bool
    verbose: bool
    color: bool
    user: str
    environ: Mapping[str, str]
    records: RecordSettings = RecordSettings()
    config_dir: Path = Path()
    project: Project | None = None
    """The ``toolctl.toml`` in force (found walking up from the working directory)."""
    ignored_project: Path | None = None
    """A ``toolctl.toml`` skipped because another user owns it (commands warn)."""
    sources: tuple[str, ...] = ()
    """Where each directory of ``search_path`` comes from: ``--registry``,
    ``TOOLCTL_REGISTRY``, ``project`` or ``user``."""
    default_timeout: float | None = None
    """Seconds for a tool that sets no timeout of its own (toolctl.toml, config.toml)."""
    announced: str | None = None
    """The Pulsar URL announcements are read from (``--announced``, TOOLCTL_ANNOUNCED,
    ``[announcements]``); None: none are read, and nothing of Pulsar is loaded for them.
    When set, the last directory of ``search_path`` is where they are kept as files."""
    announce_topic: str = ANNOUNCE_TOPIC

    @property
    def announced_dir(self) -> Path | None:
        """The read-only directory announced descriptors are kept in, after every other.

        One per broker, topic and search path: what is believed there was decided by the
        trust entries and the names of that search path's files, so a project trusting
        more (or holding other names) never decides what another one's commands and
        servers read."""
        if self.announced is None:
            return None
        import hashlib

        files = self.search_path[:-1] if self.sources[-1:] == ("announced",) else self.search_path
        key = "\0".join([self.announced, self.announce_topic, *map(str, files)])
        digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()
        return self.cache_dir / "announced" / digest[:16]

    def without_announcements(self) -> Settings:
        """These settings reading files only: what the writer and the trust checks use."""
        if self.announced is None:
            return self
        return self._replace(
            announced=None, search_path=self.search_path[:-1], sources=self.sources[:-1]
        )

    @property
    def user_registry(self) -> Path:
        """``${XDG_DATA_HOME}/toolctl/registry``: read and written outside a project."""
        return self.data_dir / "registry"

    @property
    def config_files(self) -> tuple[Path, ...]:
        """The configuration files in force, the one that wins first."""
        user = self.config_dir / CONFIG_FILE
        files = [self.project.file] if self.project else []
        return (*files, *([user] if user.is_file() else []))

    @classmethod
    def load(
        cls,
        registry: Sequence[str | Path] = (),
        *,
        strict: bool = False,
        verbose: bool = False,
        pulsar_url: str | None = None,
        user: str | None = None,
        environ: Mapping[str, str] | None = None,
        record_arguments: bool = False,
        cwd: Path | None = None,
        announced: str | None = None,
    ) -> Settings:
        env = dict(os.environ if environ is None else environ)
        data_dir = _xdg(env, "XDG_DATA_HOME", ".local/share")
        config_dir = _xdg(env, "XDG_CONFIG_HOME", ".config")
        here = _working_directory(cwd)
        cache_dir = _xdg(env, "XDG_CACHE_HOME", ".cache")
        found = find_project(here, cache_dir)
        project = found.project
        defaults = read_config(config_dir / CONFIG_FILE, cache_dir)
        if project is not None:
            defaults = project.defaults.over(defaults)
        dirs, sources = _distinct(
            *_search_path(registry, env, project, data_dir / "registry", here)
        )
        # announced tools run where they were announced, unless a Pulsar URL is set
        explicit = pulsar_url or env.get("TOOLCTL_PULSAR_URL") or defaults.pulsar_url
        reading = _announced(announced, env, defaults.announcements, explicit or DEFAULT_PULSAR_URL)
        pulsar = explicit or reading or DEFAULT_PULSAR_URL
        settings = cls(
            search_path=dirs,
            explicit_registry=bool(registry),
            strict=_switch(env, "TOOLCTL_STRICT") or strict,
            data_dir=data_dir,
            state_dir=_xdg(env, "XDG_STATE_HOME", ".local/state"),
            cache_dir=cache_dir,
            pulsar_url=pulsar,
            container_engine=env.get("TOOLCTL_CONTAINER_ENGINE") or defaults.container_engine,
            log_json=_log_json(env),
            verbose=verbose,
            color=not env.get("NO_COLOR") and env.get("TERM") != "dumb",  # no-color.org: not ""
            user=user or _login_name(env),
            environ=env,
            records=_records(env, record_arguments),
            config_dir=config_dir,
            project=project,
            ignored_project=found.ignored,
            sources=sources,
            default_timeout=defaults.timeout,
            announced=reading,
            announce_topic=env.get("TOOLCTL_ANNOUNCE_TOPIC")
            or defaults.announce_topic
            or ANNOUNCE_TOPIC,
        )
        spool = settings.announced_dir
        if spool is None:
            return settings
        return settings._replace(search_path=(*dirs, spool), sources=(*sources, "announced"))

    def __repr__(self) -> str:  # the environment holds secrets: never in a repr
        shown = ", ".join(f"{k}={v!r}" for k, v in self._asdict().items() if k != "environ")
        return f"Settings({shown})"


def _announced(
    flag: str | None, env: Mapping[str, str], configured: str | None, pulsar_url: str
) -> str | None:
    """Where announcements are read: --announced, else TOOLCTL_ANNOUNCED (a URL, or 0 for
    none), else ``[announcements]`` (its pulsar_url, else the Pulsar URL in force)."""
    if flag:
        return flag
    variable = (env.get("TOOLCTL_ANNOUNCED") or "").strip()
    if variable:
        return None if variable.lower() in {"0", "off", "false", "no"} else variable
    if configured is None or configured == "off":
        return None
    return configured or pulsar_url


def _records(env: Mapping[str, str], record_arguments: bool) -> RecordSettings:
    records = RecordSettings.from_environ(env)
    return records._replace(record_arguments=True) if record_arguments else records


def _working_directory(cwd: Path | None) -> Path | None:
    try:
        return Path(os.path.abspath(cwd or os.getcwd()))
    except OSError:  # the working directory was removed: no project to be in
        return None


def _search_path(
    registry: Sequence[str | Path],
    env: Mapping[str, str],
    project: Project | None,
    user_registry: Path,
    here: Path | None,
) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """The registry directories, highest precedence first, and where each comes from:
    --registry, else TOOLCTL_REGISTRY, else the project's then the user registry."""
    base = here or Path()
    if registry:
        dirs = [_absolute(base / Path(os.path.expanduser(d))) for d in registry]
        return tuple(dirs), ("--registry",) * len(dirs)
    if env.get("TOOLCTL_REGISTRY"):
        variable = env["TOOLCTL_REGISTRY"].split(os.pathsep)
        dirs = [_absolute(base / Path(os.path.expanduser(d))) for d in variable if d]
        if not dirs:  # `$A:$B` with both empty: never read as an empty registry
            from toolctl.errors import UsageError

            raise UsageError(
                f"TOOLCTL_REGISTRY={env['TOOLCTL_REGISTRY']!r}: names no directory",
                hint="name one, or unset it",
            )
        return tuple(dirs), ("TOOLCTL_REGISTRY",) * len(dirs)
    if project is None:
        return (user_registry,), ("user",)
    dirs = list(project.registries)
    user = [user_registry] if project.user_registry and user_registry not in dirs else []
    return (*dirs, *user), ("project",) * len(dirs) + ("user",) * len(user)


def _distinct(
    dirs: tuple[Path, ...], sources: tuple[str, ...]
) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """A directory named twice (``paths = ["a", "b", "a/"]``, or a symlink to it) once,
    where first named, with where that name came from."""
    kept: dict[str, tuple[Path, str]] = {}
    for directory, source in zip(dirs, sources, strict=True):
        kept.setdefault(os.path.realpath(directory), (directory, source))
    return tuple(d for d, _ in kept.values()), tuple(s for _, s in kept.values())


def _absolute(path: Path) -> Path:
    # Absolute but not resolved: a symlinked registry keeps the name the user gave it.
    return Path(os.path.abspath(path))
