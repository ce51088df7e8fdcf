"""Issue #9, library side: loader, index and schema checks under hostile input."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.conftest import write_files
from toolctl.registry.index.build import build
from toolctl.registry.index.database import remove_stale_temporaries
from toolctl.registry.loader import MAX_DEPTH, FileStat, parse_file, refuse_values, walk


def test_refuse_values_bounds_depth_and_numbers() -> None:
    nested: object = 1
    for _ in range(MAX_DEPTH):
        nested = [nested]
    assert refuse_values({"default": nested}) is None
    assert "nested deeper" in (refuse_values({"default": [nested]}) or "")
    assert "not a finite number" in (refuse_values({"x": {"y": [float("nan")]}}) or "")


def test_unparseable_depth_and_digits_are_problems(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {"deep.toml": "x = " + "[" * 2000 + "]" * 2000 + "\n", "digits.toml": "x = " + "9" * 5000},
    )
    for name in ("deep.toml", "digits.toml"):
        (problem,) = parse_file(str(tmp_path / name)).problems
        assert problem.skipped


def test_a_file_that_vanished_is_simply_gone(tmp_path: Path) -> None:
    missing = str(tmp_path / "gone.toml")
    parsed = parse_file(missing)
    assert parsed.problems == [] and parsed.definitions == []
    db = build(None, "k", [FileStat(missing, 0, 10, 1)], [], time.time_ns())
    assert db.execute("SELECT count(*) FROM problems").fetchone() == (0,)


def test_walk_follows_each_directory_once(tmp_path: Path) -> None:
    write_files(tmp_path, {"r/a.toml": "", "r/sub/b.toml": "", "other/c.toml": ""})
    os.symlink(".", tmp_path / "r/loop")
    os.symlink("..", tmp_path / "r/sub/up")
    os.symlink(tmp_path / "other", tmp_path / "r/x1")
    os.symlink(tmp_path / "other", tmp_path / "r/x2")
    files, _ = walk((tmp_path / "r",))
    names = [os.path.relpath(f.path, tmp_path / "r") for f in files]
    assert names == ["a.toml", "sub/b.toml", "x1/c.toml"]


def test_walk_bounds_depth(tmp_path: Path) -> None:
    deep = tmp_path / "r" / "/".join(["d"] * 40)
    write_files(tmp_path, {"r/top.toml": "", os.path.relpath(deep / "x.toml", tmp_path): ""})
    files, _ = walk((tmp_path / "r",))
    assert [os.path.basename(f.path) for f in files] == ["top.toml"]


def test_stale_cache_temporaries_are_removed(tmp_path: Path) -> None:
    dead = tmp_path / ".registry-0abc.sqlite3.999999999.tmp"
    old = tmp_path / f".registry-0abc.sqlite3.{os.getpid()}.tmp"
    live = tmp_path / f".registry-0def.sqlite3.{os.getpid()}.tmp"
    other = tmp_path / "registry-0abc.sqlite3"
    for path in (dead, old, live, other):
        path.write_text("")
    past = time.time() - 3600
    os.utime(old, (past, past))
    remove_stale_temporaries(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])
