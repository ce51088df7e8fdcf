"""The index is a cache: a disk that cannot take it (full, or a file size limit) costs the
cache, never the command."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from tests.conftest import write_files

TOOLS = {
    f"tools/t{n}.toml": f"""
        [[tool]]
        name = "tool-{n}"
        description = "{"a long description " * 40}"
        [tool.local]
        command = ["true"]
        """
    for n in range(40)
}


def _small_files() -> None:
    # writes past 8 KiB fail (EFBIG; Python ignores SIGXFSZ), as on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))


def test_a_cache_that_cannot_be_written_still_lists_and_resolves(tmp_path: Path) -> None:
    registry = write_files(tmp_path / "reg", TOOLS)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for command in (["list", "--json"], ["show", "tool-7", "--json"]):
        done = subprocess.run(
            [sys.executable, "-m", "toolctl", *command, "-r", str(registry)],
            capture_output=True,
            text=True,
            env=env,
            preexec_fn=_small_files,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "internal error" not in done.stderr
    assert len(json.loads(subprocess.run(
        [sys.executable, "-m", "toolctl", "list", "--json", "-r", str(registry)],
        capture_output=True, text=True, env=env, preexec_fn=_small_files, timeout=60,
    ).stdout)) == 40  # fmt: skip


def test_caches_of_search_paths_unused_for_a_month_are_removed(tmp_path: Path) -> None:
    from toolctl.registry.index import Registry
    from toolctl.registry.index.database import cache_path
    from toolctl.settings import Settings

    first = write_files(tmp_path / "first", {"t.toml": TOOLS["tools/t0.toml"]})
    second = write_files(tmp_path / "second", {"t.toml": TOOLS["tools/t1.toml"]})
    old = Settings.load([first])
    Registry.open(old)
    old_cache = cache_path(old)
    assert old_cache.exists()
    month_ago = old_cache.stat().st_mtime - 31 * 86400
    os.utime(old_cache, (month_ago, month_ago))
    recent = Settings.load([second])
    Registry.open(recent)  # builds its own cache, and removes the month-old one
    assert cache_path(recent).exists()
    assert not old_cache.exists()
    assert Registry.open(old).resolve("tool", "tool-0").name == "tool-0"  # rebuilt on use
