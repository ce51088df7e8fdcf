"""Re-indexing the files that changed gives the index a cold build of the same tree gives.

Each test builds the index, changes the tree, re-indexes (the ids of the rows it wrote
show that it did not rebuild), and compares every table, `list --json` and `check` with a
cold build in another cache directory.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Toolctl, examples, write_files
from toolctl.registry.index import Registry, cache_path
from toolctl.settings import Settings


def age(root: Path, seconds: float) -> None:
    """What below root was written in the last ``seconds``, as if written ``seconds`` ago
    (so that nothing is 'racy'); older files keep their time."""
    when = time.time() - seconds
    for directory, dirnames, filenames in os.walk(root):
        for path in [Path(directory) / name for name in [*dirnames, *filenames]]:
            if path.stat().st_mtime > when:
                os.utime(path, (when, when))
    os.utime(root, (when, when))


def tables(settings: Settings) -> dict[str, list[Any]]:
    """The index as rows that do not depend on how it was built (row ids left out)."""
    db = sqlite3.connect(cache_path(settings))
    try:
        queries = {
            "files": "SELECT path, seq, root, size, mtime_ns FROM files ORDER BY seq",
            "dirs": "SELECT path, mtime_ns FROM dirs ORDER BY path",
            "defs": "SELECT seq, kind, name, folded, file, line, winner, runtime, data FROM defs "
            "ORDER BY seq",
            "refs": "SELECT d.seq, r.kind, r.name FROM refs r JOIN defs d ON d.id = r.def "
            "ORDER BY 1, 2, 3",
            "problems": "SELECT p.file, p.line, p.seq, d.seq, origin, code, severity, message, "
            "skipped FROM problems p LEFT JOIN defs d ON d.id = p.def ORDER BY 1, 2, 3",
        }
        return {name: db.execute(query).fetchall() for name, query in queries.items()}
    finally:
        db.close()


def rows_rewritten(settings: Settings) -> bool:
    """Whether the row ids are not 1, 2, 3... in precedence order, as a cold build numbers
    them: a re-index numbers the rows it adds from the highest id on."""
    db = sqlite3.connect(cache_path(settings))
    try:
        ids = [row_id for (row_id,) in db.execute("SELECT id FROM defs ORDER BY seq")]
        return ids != list(range(1, len(ids) + 1))
    finally:
        db.close()


def cold_settings(roots: list[Path], tmp_path: Path) -> Settings:
    elsewhere = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cold-cache")}
    return Settings.load(roots, environ=elsewhere)


def assert_same_as_cold(roots: list[Path], tmp_path: Path) -> Settings:
    """Re-index (full open) and compare with a cold build; returns the warm settings."""
    warm = Settings.load(roots)
    edited = Registry.open(warm, full=True)
    cold_cache = tmp_path / "cold-cache"
    if cold_cache.exists():
        for stale in cold_cache.rglob("*.sqlite3"):
            stale.unlink()
    cold = Registry.open(cold_settings(roots, tmp_path), full=True)
    assert tables(warm) == tables(cold_settings(roots, tmp_path))
    assert edited.findings() == cold.findings()
    return warm


TOOL = '[[tool]]\nname = "{}"\n[tool.local]\ncommand = ["true"]\n\n'


def tool(name: str, extra: str = "") -> str:
    return f'[[tool]]\nname = "{name}"\n{extra}[tool.local]\ncommand = ["true"]\n\n'


SERVICE_HTTP = '[[service]]\nname = "svc"\n[service.http]\nurl = "http://127.0.0.1:9"\n\n'
SERVICE_PULSAR = (
    '[[service]]\nname = "svc"\n[service.pulsar]\nrequest_queue = "request:tg:x"\n'
    'response_queue = "response:tg:x"\n'
    'config_params = [{ name = "style", required = true }]\n\n'
)
BY_SERVICE = '[[tool]]\nname = "{}"\nservice = "svc"\n[tool.http]\npath = "/x"\n\n'
BARE_SERVICE = '[[tool]]\nname = "{}"\nservice = "svc"\n\n'


def action(name: str, tools: list[str], nexts: list[str]) -> str:
    calls = ", ".join(f'{{ tool = "{t}" }}' for t in tools)
    leads = ", ".join(f'{{ action = "{a}", score = 0.5 }}' for a in nexts)
    return f'[[action]]\nname = "{name}"\ntools = [{calls}]\nnext = [{leads}]\n\n'


def group(name: str, tools: list[str]) -> str:
    members = ", ".join(f'"{t}"' for t in tools)
    return f'[[group]]\nname = "{name}"\ntools = [{members}]\n\n'


BASE = {
    "one/a.toml": tool("alpha") + SERVICE_HTTP + BY_SERVICE.format("via-svc"),
    "one/b.toml": tool("beta") + action("start", ["alpha"], ["middle"]) + group("g", ["beta"]),
    "one/c.toml": tool("read-file") + action("middle", ["beta"], []) + action("end", [], []),
    "one/sub/d.toml": tool("delta") + BARE_SERVICE.format("bare"),
    "two/a.toml": tool("alpha", 'description = "later"\n') + tool("gamma"),
    "two/z.toml": tool("zeta") + action("lonely", [], []) + tool("omega"),
}
for n in range(10):  # enough files that a change of a few is re-indexed, not rebuilt
    BASE[f"two/filler/f{n}.toml"] = tool(f"filler-{n}")

Change = Callable[[Path], None]


def rewrite(relative: str, text: str) -> Change:
    def change(root: Path) -> None:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)

    return change


def remove(relative: str) -> Change:
    return lambda root: (root / relative).unlink()


def rename(old: str, new: str) -> Change:
    def change(root: Path) -> None:
        (root / old).rename(root / new)

    return change


CHANGES: dict[str, list[Change]] = {
    "a later file's tool wins": [rewrite("one/a.toml", SERVICE_HTTP + BY_SERVICE.format("via"))],
    "a later file's tool loses": [rewrite("one/b.toml", BASE["one/b.toml"] + tool("gamma"))],
    "a look-alike appears after": [rewrite("one/z.toml", tool("Read_File"))],
    "a look-alike appears before": [rewrite("one/0.toml", tool("READ.file"))],
    "a look-alike disappears": [
        rewrite("one/c.toml", tool("read_file") + action("middle", ["beta"], []))
    ],
    "a file is deleted": [remove("one/b.toml")],
    "a file is added": [rewrite("two/m.toml", tool("beta") + tool("new") + group("h", ["x"]))],
    "a file is renamed past another": [rename("one/a.toml", "one/zz.toml")],
    "a file is renamed before another": [rename("two/z.toml", "two/0.toml")],
    "a file becomes invalid": [rewrite("one/b.toml", "[[tool]\nname = 'broken'\n")],
    "an entry becomes invalid": [rewrite("one/a.toml", '[[tool]]\nname = "alpha"\n')],
    "the service changes transport": [rewrite("one/a.toml", tool("alpha") + SERVICE_PULSAR)],
    "the service goes": [rewrite("one/a.toml", tool("alpha") + BY_SERVICE.format("via-svc"))],
    "an action stops leading to another": [
        rewrite("one/b.toml", tool("beta") + action("start", ["alpha"], []) + group("g", ["beta"]))
    ],
    "an action starts leading to a lonely one": [
        rewrite("one/c.toml", tool("read-file") + action("middle", ["beta"], ["lonely"]))
    ],
    "a group member disappears": [rewrite("one/b.toml", action("start", ["alpha"], ["middle"]))],
    "two files at once": [
        remove("one/sub/d.toml"),
        rewrite("two/a.toml", tool("alpha") + tool("delta") + tool("Delta")),
    ],
    "a file moves into a new directory": [rename("one/c.toml", "one/sub/deeper/c.toml")],
}


def test_every_change_re_indexes_to_what_a_cold_build_gives(tmp_path: Path) -> None:
    for number, (label, changes) in enumerate(CHANGES.items()):
        work = tmp_path / f"case{number}"
        write_files(work, BASE)
        (work / "one/sub/deeper").mkdir()
        age(work, 120)
        roots = [work / "one", work / "two"]
        Registry.open(Settings.load(roots), full=True)
        for change in changes:
            change(work)
        age(work, 60)
        warm = assert_same_as_cold(roots, tmp_path)
        assert rows_rewritten(warm), label


def test_list_and_check_print_the_same_bytes_after_a_re_index(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, BASE)
    age(tmp_path, 120)
    args = ["-r", "one", "-r", "two"]
    toolctl("list", *args)
    for change in [c for changes in CHANGES.values() for c in changes][:4]:
        change(tmp_path)
    age(tmp_path, 60)
    cold = {"XDG_CACHE_HOME": str(tmp_path / "cold-cache")}
    for command in (["list", "--json"], ["list"], ["check"], ["check", "--json"]):
        edited, fresh = toolctl(*command, *args), toolctl(*command, *args, env=cold)
        assert (edited.returncode, edited.stdout, edited.stderr) == (
            fresh.returncode,
            fresh.stdout,
            fresh.stderr,
        )
    assert rows_rewritten(Settings.load([tmp_path / "one", tmp_path / "two"]))


def test_a_show_after_an_edit_sees_it(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, BASE)
    age(tmp_path, 120)
    assert "later" not in toolctl("show", "alpha", "-r", "one", "-r", "two").stdout
    (tmp_path / "one/a.toml").write_text(SERVICE_HTTP)
    age(tmp_path, 60)
    shown = toolctl("show", "alpha", "--json", "-r", "one", "-r", "two")
    assert shown.returncode == 0 and "later" in shown.stdout
    roots = [tmp_path / "one", tmp_path / "two"]
    assert rows_rewritten(Settings.load(roots))  # only the files of 'alpha' were statted
    assert_same_as_cold(roots, tmp_path)


NAMES = ["a", "A", "a_", "b", "b.x", "B-x", "c"]
FILES = ["one/a.toml", "one/b.toml", "one/sub/c.toml", "two/a.toml", "two/d.toml"]


@st.composite
def file_text(draw: st.DrawFn) -> str | None:
    """A registry file of a few entries over a few colliding names, or None (no file)."""
    if draw(st.integers(0, 5)) == 0:
        return None
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        name = draw(st.sampled_from(NAMES))
        kind = draw(st.sampled_from(["tool", "service", "action", "group", "bare", "bad"]))
        others = draw(st.lists(st.sampled_from(NAMES), max_size=2))
        if kind == "tool":
            parts.append(tool(name))
        elif kind == "service":
            parts.append(SERVICE_HTTP.replace('"svc"', f'"{name}"'))
        elif kind == "bare":
            parts.append(
                BARE_SERVICE.format(name).replace('"svc"', f'"{others[0]}"' if others else '"svc"')
            )
        elif kind == "action":
            parts.append(action(name, others[:1], others[1:]))
        elif kind == "group":
            parts.append(group(name, others))
        else:
            parts.append(f'[[tool]]\nname = "{name}"\n\n')
    if draw(st.integers(0, 9)) == 0:
        parts.append("[[tool]\n")
    return "".join(parts)


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    before=st.lists(file_text(), min_size=len(FILES), max_size=len(FILES)),
    after=st.lists(file_text(), min_size=len(FILES), max_size=len(FILES)),
    changed=st.sets(st.integers(0, len(FILES) - 1), min_size=1, max_size=2),
)
def test_random_edits_re_index_to_what_a_cold_build_gives(
    tmp_path: Path, before: list[str | None], after: list[str | None], changed: set[int]
) -> None:
    import tempfile

    work = Path(tempfile.mkdtemp(dir=tmp_path))
    for n in range(12):
        write_files(work, {f"two/zfill/{n}.toml": TOOL.format(f"filler-{n}")})
    for relative, text in zip(FILES, before, strict=True):
        if text is not None:
            write_files(work, {relative: text})
    age(work, 120)
    roots = [work / "one", work / "two"]
    Registry.open(Settings.load(roots), full=True)
    for index in changed:
        path, text = work / FILES[index], after[index]
        if text is None:
            path.unlink(missing_ok=True)
        else:
            write_files(work, {FILES[index]: text})
    age(work, 60)
    assert_same_as_cold(roots, tmp_path)


def test_processes_re_indexing_at_once_each_see_a_whole_index(tmp_path: Path) -> None:
    """Several processes notice the same edits at once: each re-indexes its own copy and
    renames it in; every one answers as a cold build does, and so does the cache left."""
    import subprocess
    import sys

    write_files(tmp_path, BASE)
    age(tmp_path, 120)
    roots = [tmp_path / "one", tmp_path / "two"]
    Registry.open(Settings.load(roots), full=True)
    for change in CHANGES["a later file's tool wins"] + CHANGES["a look-alike appears after"]:
        change(tmp_path)
    age(tmp_path, 60)
    argv = [sys.executable, "-m", "toolctl", "list", "--json", "-r", "one", "-r", "two"]
    running = [
        subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    answers = {(p.wait(timeout=60), *p.communicate()) for p in running}
    cold = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cold-cache")}
    fresh = subprocess.run(argv, cwd=tmp_path, capture_output=True, env=cold, check=False)
    assert answers == {(fresh.returncode, fresh.stdout, fresh.stderr)}
    assert_same_as_cold(roots, tmp_path)
    assert list((Settings.load(roots).cache_dir).glob(".registry-*.tmp")) == []


def test_an_edit_that_keeps_the_size_and_sets_the_mtime_back_is_seen(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`touch -d`, `cp -p`, `rsync -a`, `tar x` and a container's COPY keep or restore a
    file's mtime: an edit of the same size was taken for no change, so `run` ran the old
    command and `check --locked` passed. The ctime, which nothing sets back, moved."""
    text = '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["echo", "hi"]\ninput = "none"\n'
    write_files(tmp_path, {"reg/t.toml": text})
    age(tmp_path, 3600)
    file, then = tmp_path / "reg/t.toml", (tmp_path / "reg/t.toml").stat().st_mtime
    assert toolctl("run", "t", "-r", "reg").stdout == "hi\n"
    assert toolctl("lock", "-r", "reg").returncode == 0
    age(tmp_path, 3600)  # the lock is written: the directory keeps its time
    file.write_text(text.replace('"echo"', '"true"'))  # the same size
    os.utime(file, (then, then))
    ran = toolctl("run", "t", "-r", "reg")
    assert (ran.returncode, ran.stdout) == (0, ""), ran.stderr
    locked = toolctl("check", "--locked", "-r", "reg")
    assert locked.returncode == 3
    assert "tool 't' changed since toolctl.lock was written" in locked.stdout
    # and an edit of the same size as any editor makes it (mtime and ctime both now)
    file.write_text(text.replace('"hi"', '"ho"'))
    time.sleep(2.1)  # past the racy window: the index trusts what it reads now
    assert toolctl("run", "t", "-r", "reg").stdout == "ho\n"
    file.write_text(text.replace('"hi"', '"hu"'))
    assert toolctl("run", "t", "-r", "reg").stdout == "hu\n"


def test_a_registry_held_open_finds_a_file_restored_in_place(tmp_path: Path) -> None:
    """A server or an agent holds one Registry: a tool whose file was emptied and then
    written back in place (not by rename: the directory does not change) was NotFound by
    that Registry for good, as a name found nowhere was looked for on disk only once."""
    text = '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\n'
    write_files(tmp_path, {"reg/t.toml": text})
    age(tmp_path, 3600)
    settings = Settings.load([tmp_path / "reg"], environ={"XDG_CACHE_HOME": str(tmp_path)})
    registry = Registry.open(settings)
    assert [d.name for d in registry.find("t")] == ["t"]
    file = tmp_path / "reg/t.toml"
    file.write_text("")
    age(tmp_path, 3600)
    assert registry.find("t") == []
    file.write_text(text)
    age(tmp_path, 3600)
    time.sleep(1.1)  # past the second a sweep of every file answers for
    assert [d.name for d in registry.find("t")] == ["t"]


def test_a_registry_closes(tmp_path: Path) -> None:
    """A library user opening registries closes each (a context manager), as a Caller."""
    write_files(
        tmp_path, {"reg/t.toml": '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\n'}
    )
    settings = Settings.load([tmp_path / "reg"], environ={"XDG_CACHE_HOME": str(tmp_path)})
    with Registry.open(settings) as registry:
        assert [d.name for d in registry.find("t")] == ["t"]
    with pytest.raises(RuntimeError, match="this Registry is closed"):
        registry.find("t")


@pytest.mark.parametrize(
    "damage", ["DROP TABLE defs", "ALTER TABLE defs RENAME COLUMN name TO gone"]
)
def test_a_cache_whose_tables_are_not_its_own_is_built_again(tmp_path: Path, damage: str) -> None:
    """A cache that opens as a database but lacks a table (or has one altered) made every
    command exit 70 until it was found and deleted: it is built again."""
    write_files(
        tmp_path, {"reg/t.toml": '[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\n'}
    )
    age(tmp_path / "reg", 3600)  # the cache trusts it: a later open reads the cache alone
    settings = Settings.load([tmp_path / "reg"], environ={"XDG_CACHE_HOME": str(tmp_path)})
    with Registry.open(settings) as registry:
        assert [d.name for d in registry.find("t")] == ["t"]
    db = sqlite3.connect(cache_path(settings))
    db.execute(damage)
    db.commit()
    db.close()
    with Registry.open(settings) as registry:
        assert [d.name for d in registry.find("t")] == ["t"]
