"""Command-line flags and TOOLCTL_* environment variables folded into one frozen Settings.

Nothing else in toolctl reads ``os.environ``: code that needs a variable (a secret named by
``${env:NAME}`` in a descriptor, say) gets it from ``Settings.environ``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

DEFAULT_PULSAR_URL = "pulsar://localhost:6650"
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
        history = (env.get("TOOLCTL_HISTORY") or "1").strip().lower()
        return cls(
            history=history not in {"0", "false", "no", "off"},
            record_arguments=_truthy(env.get("TOOLCTL_RECORD_ARGUMENTS")),
            max_calls=_number(env.get("TOOLCTL_HISTORY_MAX_CALLS"), DEFAULT_HISTORY_CALLS, int),
            max_days=_number(env.get("TOOLCTL_HISTORY_MAX_DAYS"), DEFAULT_HISTORY_DAYS, float),
            session=(env.get("TOOLCTL_SESSION") or "").strip()[:200] or None,
        )


def _number(value: str | None, default: Any, kind: type) -> Any:
    """A positive number from a variable; a missing or malformed one is the default."""
    try:
        number = kind(value) if value else default
    except ValueError:
        return default
    return number if number > 0 else default


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def _xdg(environ: Mapping[str, str], variable: str, fallback: str) -> Path:
    base = environ.get(variable) or str(Path(environ.get("HOME") or Path.home()) / fallback)
    return Path(base) / "toolctl"


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
    ) -> Settings:
        env = dict(os.environ if environ is None else environ)
        data_dir = _xdg(env, "XDG_DATA_HOME", ".local/share")
        explicit = bool(registry)
        if registry:
            dirs = [Path(d) for d in registry]
        elif env.get("TOOLCTL_REGISTRY"):
            dirs = [Path(d) for d in env["TOOLCTL_REGISTRY"].split(os.pathsep) if d]
        else:
            dirs = [Path("registry"), data_dir / "registry"]
        return cls(
            search_path=tuple(_absolute(d) for d in dirs),
            explicit_registry=explicit,
            strict=strict or _truthy(env.get("TOOLCTL_STRICT")),
            data_dir=data_dir,
            state_dir=_xdg(env, "XDG_STATE_HOME", ".local/state"),
            cache_dir=_xdg(env, "XDG_CACHE_HOME", ".cache"),
            pulsar_url=pulsar_url or env.get("TOOLCTL_PULSAR_URL") or DEFAULT_PULSAR_URL,
            container_engine=env.get("TOOLCTL_CONTAINER_ENGINE") or None,
            log_json=env.get("TOOLCTL_LOG", "").strip().lower() == "json",
            verbose=verbose,
            color="NO_COLOR" not in env and env.get("TERM") != "dumb",
            user=user or _login_name(env),
            environ=env,
            records=_records(env, record_arguments),
        )

    def __repr__(self) -> str:  # the environment holds secrets: never in a repr
        shown = ", ".join(f"{k}={v!r}" for k, v in self._asdict().items() if k != "environ")
        return f"Settings({shown})"


def _records(env: Mapping[str, str], record_arguments: bool) -> RecordSettings:
    records = RecordSettings.from_environ(env)
    return records._replace(record_arguments=True) if record_arguments else records


def _absolute(path: Path) -> Path:
    # Absolute but not resolved: a symlinked registry keeps the name the user gave it.
    return Path(os.path.abspath(path.expanduser()))
