"""`toolctl new tool`: a descriptor with what its runtime needs, checked clean as written
(the runtimes that reach something are run in tests/runners/*/test_scaffold.py and
tests/mcp/test_scaffold.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Toolctl


@pytest.mark.parametrize("runtime", ["local", "http", "container", "mcp"])
def test_each_scaffold_validates_and_names_what_to_do_next(
    tmp_path: Path, toolctl: Toolctl, runtime: str
) -> None:
    made = toolctl("new", "tool", "hello", "--runtime", runtime)
    assert made.returncode == 0, made.stderr
    expected = ["hello.py", "hello.toml"] if runtime == "local" else ["hello.toml"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == expected
    text = (tmp_path / "hello.toml").read_text()
    assert text.startswith(f"# hello: a toolctl tool ({runtime}). Edit it, then\n")
    checked = toolctl("check", "hello.toml", "--json")
    report = json.loads(checked.stdout)
    assert [p for p in report["problems"] if p["severity"] == "error"] == [], report
    assert "toolctl register && toolctl run hello --arg" in made.stderr


def test_a_local_scaffold_runs_as_written(tmp_path: Path, toolctl: Toolctl) -> None:
    assert toolctl("new", "tool", "greet").returncode == 0
    assert (tmp_path / "greet.py").stat().st_mode & 0o111
    assert toolctl("check", "--strict", "greet.toml").returncode == 0
    assert toolctl("register", "greet.toml").returncode == 0
    done = toolctl("run", "greet", "--arg", "who=you", "--json")
    assert json.loads(done.stdout)["output"] == "Hello, you!"


def test_new_never_overwrites_and_refuses_bad_names(tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "hello.py").write_text("mine\n")
    taken = toolctl("new", "tool", "hello")
    assert taken.returncode == 2
    assert "hello.py already exists; nothing was written" in taken.stderr
    assert not (tmp_path / "hello.toml").exists()
    assert (tmp_path / "hello.py").read_text() == "mine\n"
    bad = toolctl("new", "tool", "-x")
    assert bad.returncode == 2
    worse = toolctl("new", "tool", "no spaces")
    assert worse.returncode == 2 and "invalid tool name 'no spaces'" in worse.stderr
    newline = toolctl("new", "tool", "foo\n")  # `$` alone lets a final newline through
    assert newline.returncode == 2 and "invalid tool name 'foo\\n'" in newline.stderr
    long = toolctl("new", "tool", "b" * 129)  # the one reason: not the letters it uses
    assert long.returncode == 2
    assert long.stderr.endswith("'; 129 characters; a name has at most 128\n"), long.stderr
    assert "use letters" in worse.stderr and "use letters" not in long.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hello.py"]
    dotted = toolctl("new", "tool", "text.upper")
    assert dotted.returncode == 0, dotted.stderr
    assert (tmp_path / "text_upper.py").is_file()  # a module name for the script
    unknown = toolctl("new", "tool", "x", "--runtime", "pulsar")
    assert unknown.returncode == 2


def test_check_tells_why_a_name_is_invalid_in_words(tmp_path: Path, toolctl: Toolctl) -> None:
    """`check` says what is wrong with a name (too long, a character it may not hold), not
    pydantic's regular expression."""
    body = 'description = "x"\n[tool.local]\ncommand = ["true"]\n'
    (tmp_path / "t.toml").write_text(
        f'[[tool]]\nname = "{"b" * 129}"\n{body}[[tool]]\nname = "a b"\n{body}'
    )
    done = toolctl("check", "-r", str(tmp_path))
    assert done.returncode == 3
    lines = done.stdout.splitlines()  # the findings are check's data
    assert lines[0].endswith(": name: 129 characters; a name has at most 128"), lines
    assert lines[1].endswith(
        "tool 'a b': name: use letters, digits, '-', '_' and '.', starting with a letter or digit"
    ), lines
    assert "pattern" not in done.stdout


def test_new_says_when_register_will_refuse_the_name(tmp_path: Path, toolctl: Toolctl) -> None:
    """A name in force already in the directory `register` writes to: the scaffold is
    written, with a warning that `register` wants --replace (it said nothing, and the
    register after it failed). A look-alike, which `register` refuses whatever is done, is
    refused before anything is written (the files were left to delete)."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    assert toolctl("new", "tool", "hello", cwd=first).returncode == 0
    assert toolctl("register", cwd=first).returncode == 0
    again = toolctl("new", "tool", "hello", cwd=second)
    assert again.returncode == 0 and (second / "hello.toml").exists()
    assert again.stderr.splitlines()[-1].startswith(
        "toolctl: warning: tool 'hello' is in force already ("
    )
    assert "`toolctl register` will refuse this one" in again.stderr
    alike = toolctl("new", "tool", "Hello", "--runtime", "http", "--json", cwd=second)
    assert (alike.returncode, alike.stdout) == (3, "")
    assert alike.stderr.startswith("toolctl: error: tool 'hello' (")
    assert alike.stderr.endswith(
        "looks like 'Hello': `toolctl register` would refuse it; nothing was written; "
        "pick another name\n"
    ), alike.stderr
    assert not (second / "Hello.toml").exists()
    fresh = toolctl("new", "tool", "other", cwd=second)
    assert "warning" not in fresh.stderr


def test_new_offers_replace_only_where_register_could_replace(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """In a project, a tool the user registry holds: `register --replace` is refused there
    (a later directory), so the warning does not offer it."""
    work, team = tmp_path / "work", tmp_path / "team"
    work.mkdir()
    team.mkdir()
    assert toolctl("new", "tool", "uonly", cwd=work).returncode == 0
    assert toolctl("register", cwd=work).returncode == 0  # into the user registry
    assert toolctl("init", cwd=team).returncode == 0
    made = toolctl("new", "tool", "uonly", cwd=team)
    assert made.returncode == 3 and not list(team.glob("uonly.*"))
    assert "`toolctl register` would refuse it; nothing was written" in made.stderr
    assert "--replace" not in made.stderr
