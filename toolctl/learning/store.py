"""Where the learned file lives, and reading and writing it (atomically).

The learned file is ``toolctl.learned`` in a registry directory, beside ``toolctl.lock``:
learned from the use of that registry's tools, reviewed and versioned with it. Its name does
not end in ``.toml``, so the registry walk never reads it as descriptors. `graph learn`
writes it into the directory `register` writes to; `recommend` reads the one of the first
directory on the search path that has one, as `check` finds the lock.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from toolctl.errors import UsageError
from toolctl.learning.learned_file import loads
from toolctl.learning.model import LearnedModel
from toolctl.settings import Settings

LEARNED_FILE = "toolctl.learned"


def default_learned_path(settings: Settings) -> Path:
    """Where `graph learn` writes: the registry directory `register` writes to."""
    from toolctl.registry.writer import target_directory

    return target_directory(settings) / LEARNED_FILE


def find_learned(settings: Settings) -> Path | None:
    """The learned file of the first registry directory on the search path that has one."""
    for directory in settings.search_path:
        candidate = directory / LEARNED_FILE
        if candidate.is_file():
            return candidate
    return None


def read_learned(path: Path) -> LearnedModel:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the learned file {path}: {_reason(exc)}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:  # what it holds is wrong: as any other fault of its own (3)
        from toolctl.errors import RegistryError

        raise RegistryError(
            f"{path}: not a learned file (it is not UTF-8 text)",
            hint="write it again with `toolctl graph learn`",
        ) from None
    return loads(text, str(path))


def write_learned(path: Path, text: str, *, through_links: bool = True) -> None:
    """Write ``text`` to ``path`` all at once: a reader sees the old file or the new one.
    Through a symlink (an ``--out`` the user named); without ``through_links`` (the
    registry's own ``toolctl.learned``, which a cloned repository may bring as a link to
    ~/.bashrc) a symlink there is replaced, never written through. UsageError for a path
    that is not a regular file (``/dev/null`` would be replaced, ``toolctl.targets``)."""
    from toolctl.targets import output_file

    if through_links or not path.is_symlink():
        path = output_file(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # as the registry's other files are, by the umask (mkstemp's 0600 kept the others
        # sharing the registry from `recommend`)
        temporary = str(path.parent / f".learned-{os.getpid()}-{secrets.token_hex(4)}")
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UsageError(f"cannot write the learned file {path}: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
