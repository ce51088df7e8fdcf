"""The first-wins index: shadows, confusables, lint, the cache and its freshness."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.conftest import write_files
from toolctl.errors import NotFound, RegistryError
from toolctl.registry.index import Registry, cache_path
from toolctl.settings import Settings


def tool(name: str, description: str = "", extra: str = "") -> str:
    return (
        f'[[tool]]\nname = "{name}"\ndescription = "{description}"\n{extra}'
        '[tool.local]\ncommand = ["true"]\n\n'
    )


def settings(*dirs: Path, strict: bool = False) -> Settings:
    return Settings.load(list(dirs), strict=strict)


def age(path: Path, seconds: float = 10) -> None:
    """Move mtimes into the past, as if the files were written long ago (not 'racy')."""
    past = time.time() - seconds
    for root, dirnames, filenames in os.walk(path):
        for name in [*dirnames, *filenames]:
            os.utime(Path(root) / name, (past, past))
    os.utime(path, (past, past))


def test_first_definition_wins_and_later_ones_are_kept_as_shadows(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/t.toml": tool("echo", "first"), "b/t.toml": tool("echo", "second")})
    registry = Registry.open(settings(tmp_path / "a", tmp_path / "b"))
    winner, shadow = registry.definitions("tool", "echo")
    assert winner.data["description"] == "first"
    assert shadow.file == str(tmp_path / "b/t.toml")
    (finding,) = registry.findings()
    assert finding.code == "shadow" and finding.severity == "warning"
    assert registry.error_count(strict=False) == 0
    assert registry.error_count(strict=True) == 1


def test_within_a_file_document_order_wins(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/t.toml": tool("echo", "one") + tool("echo", "two")})
    registry = Registry.open(settings(tmp_path / "a"))
    assert registry.resolve("tool", "echo").data["description"] == "one"


def test_kinds_have_their_own_namespaces(tmp_path: Path) -> None:
    write_files(
        tmp_path, {"a/t.toml": tool("x") + '[[action]]\nname = "x"\ntools = [{ tool = "x" }]\n'}
    )
    registry = Registry.open(settings(tmp_path / "a"))
    assert registry.findings() == []
    assert [d.kind for d in registry.find("x")] == ["tool", "action"]


def test_confusable_names_are_errors(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/t.toml": tool("read-file"), "b/t.toml": tool("Read_File")})
    registry = Registry.open(settings(tmp_path / "a", tmp_path / "b"))
    (finding,) = registry.findings()
    assert finding.code == "confusable"
    assert "'Read_File' is confusable with 'read-file'" in finding.message
    assert registry.confusable_with("tool", "READ.FILE").name == "read-file"  # type: ignore[union-attr]


def test_not_found_suggests_close_names(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/t.toml": tool("word-count") + tool("reverse")})
    registry = Registry.open(settings(tmp_path / "a"))
    with pytest.raises(NotFound) as caught:
        registry.resolve("tool", "wordcount")
    assert caught.value.suggestions == ["word-count"]
    assert caught.value.exit_code == 4


def test_cross_definition_lint(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "a/s.toml": """
                [[service]]
                name = "svc"
                [service.pulsar]
                request_queue = "non-persistent://tg/request/x"
                response_queue = "non-persistent://tg/response/x"
                config_params = [{ name = "collection", required = true }]

                [[tool]]
                name = "uses-svc"
                service = "svc"

                [[tool]]
                name = "uses-ghost"
                service = "ghost"

                [[action]]
                name = "a1"
                tools = [{ tool = "uses-svc", score = 1.5 }, { tool = "nope" }]
                next = [{ action = "a9", score = -0.1 }]

                [[group]]
                name = "g"
                tools = ["uses-svc", "missing-tool"]
            """
        },
    )
    registry = Registry.open(settings(tmp_path / "a"))
    messages = sorted(r.message for r in registry.findings())
    assert messages == sorted(
        [
            "tool 'uses-svc' misses config param 'collection' that service 'svc' requires",
            "tool 'uses-ghost' names unknown service 'ghost'",
            "action 'a1': call edge to 'uses-svc' has score 1.5, outside [0, 1]",
            "action 'a1' calls unknown tool 'nope'",
            "action 'a1' leads to unknown action 'a9'",
            "action 'a1': next edge to 'a9' has score -0.1, outside [0, 1]",
            "group 'g' names unknown tool 'missing-tool'",
        ]
    )
    assert registry.resolve("tool", "uses-svc").data["runtime"] == "pulsar"


def test_broken_files_are_skipped_and_the_rest_works(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/bad.toml": "[[tool]\n", "a/good.toml": tool("fine")})
    registry = Registry.open(settings(tmp_path / "a"))
    assert [d.name for d in registry.winners("tool")] == ["fine"]
    (skipped,) = registry.skipped()
    assert skipped.file.endswith("bad.toml") and skipped.line == 1


def test_strict_refuses_a_registry_with_errors(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/bad.toml": "[[tool]\n", "a/good.toml": tool("fine")})
    Registry.open(settings(tmp_path / "a")).ensure_usable()  # not strict: fine
    with pytest.raises(RegistryError):
        Registry.open(settings(tmp_path / "a", strict=True)).ensure_usable()


def test_the_cache_is_written_and_reused(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/t.toml": tool("one")})
    age(tmp_path / "a")
    config = settings(tmp_path / "a")
    Registry.open(config)
    cache = cache_path(config)
    assert cache.is_file()
    stamp = cache.stat().st_mtime_ns
    assert Registry.open(config).resolve("tool", "one")
    assert cache.stat().st_mtime_ns == stamp  # a fresh cache is only read


def test_a_new_file_is_seen(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/t.toml": tool("one")})
    age(tmp_path / "a")
    config = settings(tmp_path / "a")
    Registry.open(config)
    write_files(tmp_path, {"a/sub/new.toml": tool("two")})
    assert Registry.open(config).resolve("tool", "two").name == "two"


def test_an_in_place_edit_of_the_resolved_tool_is_seen(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/t.toml": tool("one", "old")})
    age(tmp_path / "a")
    config = settings(tmp_path / "a")
    assert Registry.open(config).resolve("tool", "one").data["description"] == "old"
    path = tmp_path / "a/t.toml"
    path.write_text(tool("one", "new and longer"))
    assert Registry.open(config).resolve("tool", "one").data["description"] == "new and longer"


def test_a_removed_file_is_seen(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/t.toml": tool("one"), "a/u.toml": tool("two")})
    age(tmp_path / "a")
    config = settings(tmp_path / "a")
    Registry.open(config)
    (tmp_path / "a/u.toml").unlink()
    with pytest.raises(NotFound):
        Registry.open(config).resolve("tool", "two")


def test_full_open_sees_any_edit(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/t.toml": tool("one"), "a/u.toml": tool("two", "old")})
    age(tmp_path / "a")
    config = settings(tmp_path / "a")
    Registry.open(config)
    before = os.stat(tmp_path / "a").st_mtime_ns
    (tmp_path / "a/u.toml").write_text(tool("two", "edited in place"))
    assert os.stat(tmp_path / "a").st_mtime_ns == before  # the directory did not change
    registry = Registry.open(config, full=True)
    assert registry.winners("tool")[1].data["description"] == "edited in place"


def test_an_unwritable_cache_directory_still_works(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/t.toml": tool("one")})
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    config = Settings.load([tmp_path / "a"], environ={**os.environ, "XDG_CACHE_HOME": str(blocker)})
    assert Registry.open(config).resolve("tool", "one").name == "one"


def test_a_name_appended_in_place_is_found(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/t.toml": tool("one")})
    age(tmp_path / "a")
    config = settings(tmp_path / "a")
    Registry.open(config)
    with open(tmp_path / "a/t.toml", "a") as handle:
        handle.write(tool("two"))  # no rename: the directory's mtime stays
    assert Registry.open(config).resolve("tool", "two").name == "two"


def test_threads_building_one_cache_at_once_do_not_collide(tmp_path: Path) -> None:
    import threading

    lines = [f'[[tool]]\nname = "t{i}"\n[tool.local]\ncommand = ["true"]\n' for i in range(200)]
    write_files(tmp_path, {"r/a.toml": "\n".join(lines)})
    settings = Settings.load([tmp_path / "r"])
    errors: list[BaseException] = []

    def build() -> None:
        try:
            Registry.open(settings, full=True).resolve("tool", "t7")
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


@pytest.mark.parametrize("name", ["two", "TWO"], ids=["same", "look-alike"])
def test_a_name_given_in_place_to_an_earlier_file_takes_over(tmp_path: Path, name: str) -> None:
    # the project's file gains the user registry's name by an in-place edit (no rename:
    # no directory time moves); it is earlier on the path, so it wins (or quarantines)
    write_files(tmp_path, {"a/t.toml": tool("one"), "b/u.toml": tool("two", "later")})
    age(tmp_path)
    config = settings(tmp_path / "a", tmp_path / "b")
    assert Registry.open(config).resolve("tool", "two").data["description"] == "later"
    with open(tmp_path / "a/t.toml", "a") as handle:
        handle.write(tool(name, "earlier"))
    registry = Registry.open(config)
    if name == "two":
        assert registry.resolve("tool", "two").data["description"] == "earlier"
    else:
        with pytest.raises(RegistryError, match="confusable with 'TWO'"):
            registry.resolve("tool", "two")


@pytest.mark.parametrize(
    "roots", [("a", "a"), ("a", "a/"), ("a/sub", "a"), ("a", "a/sub")], ids=str
)
def test_a_directory_twice_on_the_search_path_counts_once(
    tmp_path: Path, roots: tuple[str, str]
) -> None:
    write_files(tmp_path, {"a/sub/t.toml": tool("one"), "a/u.toml": tool("two")})
    registry = Registry.open(settings(*(tmp_path / root for root in roots)))
    assert [d.name for d in registry.winners("tool")] == sorted(["one", "two"])
    assert registry.findings() == []  # no definition shadows itself
    assert len(registry.definitions("tool", "one")) == 1


def test_a_held_registry_keeps_no_connection_per_reindex(tmp_path: Path) -> None:
    """Each re-index of a Registry held open left the connection it replaced to the
    garbage collector, holding a descriptor on a deleted file: 200 of them in a loop of
    edits with the collector off (as servers run it through start-up)."""
    import gc
    import os

    registry_dir = tmp_path / "reg"
    registry_dir.mkdir()
    tool = '[[tool]]\nname = "t"\ndescription = "{n}"\n[tool.local]\ncommand = ["true"]\n'
    (registry_dir / "t.toml").write_text(tool.format(n=0))
    settings = Settings.load([registry_dir])
    gc.disable()
    try:
        with Registry.open(settings) as registry:
            before = len(os.listdir("/proc/self/fd"))
            for n in range(1, 40):
                edited = registry_dir / ".t.toml.new"
                edited.write_text(tool.format(n=n))
                os.replace(edited, registry_dir / "t.toml")  # as editors save
                os.utime(registry_dir / "t.toml", ns=(n * 10**9, n * 10**9))
                assert registry.resolve("tool", "t").data["description"] == str(n)
            assert len(os.listdir("/proc/self/fd")) <= before + 4
    finally:
        gc.enable()


def test_a_held_registry_lists_what_another_process_added(tmp_path: Path) -> None:
    """python.md: a Registry held open sees files added. Its listing of winners read the
    index as it was: a tool added by another process was never offered (an agent cannot
    look up a name it was never shown), and an in-place edit showed one listing late."""
    registry_dir = tmp_path / "reg"
    registry_dir.mkdir()
    (registry_dir / "alpha.toml").write_text(tool("alpha"))
    with Registry.open(settings(registry_dir)) as registry:
        assert [d.name for d in registry.winners("tool")] == ["alpha"]
        time.sleep(1.1)  # held open: past the second a command reads its registry in
        (registry_dir / "beta.toml").write_text(tool("beta"))
        assert [d.name for d in registry.iter_winners("tool")] == ["alpha", "beta"]
        time.sleep(1.1)
        with (registry_dir / "alpha.toml").open("a") as edited:  # in place, same directory
            edited.write(tool("gamma"))
        assert [d.name for d in registry.winners("tool")] == ["alpha", "beta", "gamma"]


def test_a_closed_registry_says_so(tmp_path: Path) -> None:
    """A lookup after close() raised sqlite3's ProgrammingError ("Cannot operate on a
    closed database"), from outside toolctl's errors: it says what a closed Caller says."""
    registry_dir = tmp_path / "reg"
    registry_dir.mkdir()
    (registry_dir / "alpha.toml").write_text(tool("alpha"))
    registry = Registry.open(settings(registry_dir))
    registry.close()
    for lookup in (lambda: registry.winners("tool"), lambda: registry.resolve("tool", "alpha")):
        with pytest.raises(RuntimeError, match="this Registry is closed; open another"):
            lookup()
    registry.close()  # twice: nothing
