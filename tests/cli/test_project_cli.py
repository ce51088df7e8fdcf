"""The first ten minutes (issue 20) through the real CLI: a first tool, where the registry
lives, register keeping paths and being re-runnable, and what `where` and `init` say."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from tests.conftest import Toolctl, write_files

HERE_TOOL = """
[[tool]]
name = "here"
description = "Print the directory it runs in"
[tool.local]
command = ["python3", "-c", "import os; print(os.getcwd())"]
cwd = "{cwd}"
input = "none"
"""


def test_a_first_tool_registered_anywhere_runs_from_anywhere(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    made = toolctl("new", "tool", "hello", cwd=work)
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in work.iterdir()) == ["hello.py", "hello.toml"]
    assert "toolctl register" in made.stderr
    registered = toolctl("register", cwd=work)
    assert registered.returncode == 0, registered.stderr
    user = Path(os.environ["XDG_DATA_HOME"]) / "toolctl" / "registry"
    assert f"registered tool 'hello' in {user}/tools/hello.toml" in registered.stderr
    again = toolctl("register", cwd=work)  # a CI set-up step run twice
    assert again.returncode == 0, again.stderr
    assert "unchanged tool 'hello'" in again.stderr
    ran = toolctl("run", "hello", cwd=Path("/"))
    assert (ran.returncode, ran.stdout) == (0, "Hello, world!\n"), ran.stderr
    named = toolctl("run", "hello", "--arg", "who=Ada", cwd=tmp_path)
    assert named.stdout == "Hello, Ada!\n"


def test_not_found_names_the_directories_searched(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"p/toolctl.toml": "[registry]\npaths = ['reg']\n", "p/reg/.keep": ""})
    user = Path(os.environ["XDG_DATA_HOME"]) / "toolctl" / "registry"
    missing = toolctl("run", "nope", cwd=tmp_path / "p")
    assert missing.returncode == 4
    assert missing.stderr == f"toolctl: error: tool 'nope' not found; searched reg, {user}\n"
    shown = toolctl("show", "nope", cwd=tmp_path)
    assert shown.returncode == 4
    assert "searched home/data/toolctl/registry" in shown.stderr  # shown relative to here
    (tmp_path / "registry").mkdir()  # read by default before projects: say how to read it
    legacy = toolctl("run", "nope", cwd=tmp_path)
    assert legacy.stderr.endswith(
        "; ./registry is read in a project: `toolctl init` makes one\n"
    ), legacy.stderr


def test_init_in_a_fresh_clone_makes_the_registry_git_did_not_keep(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """A project with no tool yet, cloned: git keeps no empty directory, so registry/ is
    missing, `check` fails and says `toolctl init` makes it; `init` said "exists already;
    nothing changed" and made nothing. It makes the directories the project names inside
    it (never one outside: `paths` there may be a typo, or another checkout's)."""
    project = tmp_path / "clone"
    project.mkdir()
    (project / "toolctl.toml").write_text('[registry]\npaths = ["registry", "../elsewhere"]\n')
    assert toolctl("check", cwd=project).returncode == 3
    init = toolctl("init", "--json", cwd=project)
    assert init.returncode == 0, init.stderr
    assert json.loads(init.stdout)["made"] == ["registry"]
    assert (project / "registry").is_dir() and not (tmp_path / "elsewhere").exists()
    again = toolctl("init", cwd=project)
    assert again.stderr.endswith("exists already; nothing changed\n")


def test_the_lock_register_takes_stays_out_of_git(tmp_path: Path, toolctl: Toolctl) -> None:
    """`register` takes registry/.toolctl.lock: it showed in every `git status`, one dot
    from the toolctl.lock to commit. `init` puts a .gitignore for it in registry/ (which
    also keeps registry/ in a clone before it holds a tool); one already there is kept."""
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert toolctl("init", cwd=tmp_path).returncode == 0
    write_files(tmp_path, {"t.toml": HERE_TOOL.format(cwd=".")})
    assert toolctl("register", "t.toml", cwd=tmp_path).returncode == 0
    assert (tmp_path / "registry/.toolctl.lock").exists()
    status = subprocess.run(["git", "status", "--porcelain", "-uall"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "registry/.gitignore" in status and ".toolctl.lock" not in status, status
    (tmp_path / "other").mkdir()
    (tmp_path / "other/registry").mkdir()
    (tmp_path / "other/registry/.gitignore").write_text("mine\n")
    assert toolctl("init", cwd=tmp_path / "other").returncode == 0
    assert (tmp_path / "other/registry/.gitignore").read_text() == "mine\n"


def test_init_inside_another_project_says_it_hides_it(tmp_path: Path, toolctl: Toolctl) -> None:
    """A project made in a project's subdirectory hides the outer one from there down
    (its registry is no longer read there): said, as git's nested `git init` does not."""
    assert toolctl("init", cwd=tmp_path).returncode == 0
    (tmp_path / "sub").mkdir()
    inner = toolctl("init", cwd=tmp_path / "sub")
    assert inner.returncode == 0
    assert inner.stderr.splitlines()[-1] == (
        f"toolctl: warning: this project is inside {tmp_path / 'toolctl.toml'}'s: from here "
        "down, that one is not read"
    )
    assert "warning" not in toolctl("init", cwd=tmp_path / "sub").stderr  # made already


def test_a_project_is_read_and_written_from_its_subdirectories(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    init = toolctl("init", cwd=project)
    assert init.returncode == 0, init.stderr
    assert (project / "toolctl.toml").is_file() and (project / "registry").is_dir()
    assert toolctl("init", cwd=project).stderr.endswith("exists already; nothing changed\n")
    deep = project / "src" / "deep"
    deep.mkdir(parents=True)
    write_files(deep, {"t.toml": HERE_TOOL.format(cwd=".")})
    done = toolctl("register", "t.toml", cwd=deep)
    assert done.returncode == 0, done.stderr
    written = project / "registry" / "tools" / "here.toml"
    assert f"registered tool 'here' in {written}" in done.stderr
    # inside the project the path stays relative (the project may move as a whole)
    assert 'cwd = "../../src/deep"' in written.read_text()
    assert toolctl("run", "here", cwd=deep).stdout == f"{deep}\n"
    assert toolctl("run", "here", cwd=project).stdout == f"{deep}\n"
    outside = toolctl("run", "here", cwd=tmp_path)
    assert outside.returncode == 4  # the project's tools are the project's


def test_register_outside_a_project_keeps_a_relative_cwd_pointing_where_it_did(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, {"src/t.toml": HERE_TOOL.format(cwd="../data"), "data/.keep": ""})
    assert toolctl("register", "src/t.toml").returncode == 0
    user = Path(os.environ["XDG_DATA_HOME"]) / "toolctl" / "registry"
    assert f'cwd = "{tmp_path}/data"' in (user / "tools" / "here.toml").read_text()
    assert toolctl("run", "here", cwd=Path("/")).stdout == f"{tmp_path}/data\n"
    # the same file again is the same definition, however its path is spelt
    assert "unchanged" in toolctl("register", "src/t.toml").stderr


def test_register_replace_updates_only_the_directory_it_writes_to(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    def tool(description: str) -> str:
        return f'[[tool]]\nname = "t"\ndescription = "{description}"\n[tool.local]\ncommand = ["true"]\n'

    write_files(
        tmp_path,
        {
            "v1.toml": tool("one"),
            "v2.toml": tool("two"),
            "high/held.toml": tool("held above"),
            "multi.toml": tool("one") + '[[group]]\nname = "g"\ntools = ["t"]\n',
        },
    )
    (tmp_path / "reg").mkdir()
    assert toolctl("register", "v1.toml", "-r", "reg").returncode == 0
    refused = toolctl("register", "v2.toml", "-r", "reg")
    assert refused.returncode == 3
    assert "tool 't' is already defined in reg/tools/t.toml:1, differently" in refused.stderr
    assert "pass --replace" in refused.stderr
    replaced = toolctl("register", "v2.toml", "--replace", "-r", "reg", "--json")
    assert replaced.returncode == 0, replaced.stderr
    assert json.loads(replaced.stdout) == [
        {"action": "replaced", "file": "reg/tools/t.toml", "kind": "tool", "name": "t"}
    ]
    shown = json.loads(toolctl("show", "t", "--json", "-r", "reg").stdout)
    assert shown["descriptor"]["description"] == "two"
    assert sorted(p.name for p in (tmp_path / "reg").rglob("*.toml")) == ["t.toml"]

    # a later directory holds the name: --replace never writes a shadow over it
    (tmp_path / "low").mkdir()
    later = toolctl("register", "v2.toml", "--replace", "-r", "low", "-r", "high")
    assert later.returncode == 3
    assert "already defined in high/held.toml:1, a later registry directory" in later.stderr
    assert "unregister that one first" in later.stderr
    assert not list((tmp_path / "low").rglob("*.toml"))
    # the first directory holds it itself: that one is updated
    own = toolctl("register", "v1.toml", "--replace", "-r", "high", "-r", "low")
    assert own.returncode == 0
    assert "replaced tool 't' in high/held.toml" in own.stderr

    # a file holding other entries is not rewritten (its comments and layout would go)
    (tmp_path / "m").mkdir()
    assert toolctl("register", "multi.toml", "-r", "m").returncode == 0
    write_files(
        tmp_path, {"m/both.toml": tool("x").replace('"t"', '"u"') + tool("y").replace('"t"', '"v"')}
    )
    write_files(tmp_path, {"u2.toml": tool("changed").replace('"t"', '"u"')})
    multi = toolctl("register", "u2.toml", "--replace", "-r", "m")
    assert multi.returncode == 3
    assert "m/both.toml defines 1 other entry besides it" in multi.stderr


def test_register_with_no_file_takes_the_descriptors_here(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path,
        {
            "a.toml": '[[tool]]\nname = "a"\n[tool.local]\ncommand = ["true"]\n',
            "pyproject.toml": "[project]\nname = 'x'\n[tool.ruff]\nline-length = 100\n",
            "toolctl.toml": "[registry]\npaths = ['reg']\n",
            # other programs' files: mise's [tools], a [tool.black] alone, plurals
            "mise.toml": "[tools]\npython = '3.12'\n",
            ".black.toml": "[tool.black]\nline-length = 100\n",
            "other.toml": "[groups]\nx = 1\n[services]\ny = 2\n[actions]\nz = 3\n",
        },
    )
    done = toolctl("register", "--json")
    assert done.returncode == 0, done.stderr
    assert [w["name"] for w in json.loads(done.stdout)] == ["a"]
    # a misspelt table is no reason to pass a descriptor file over in silence
    write_files(
        tmp_path, {"b.toml": '[[tool]]\nname = "b"\nservice = "s"\n[[sevice]]\nname = "s"\n'}
    )
    typo = toolctl("register")
    assert typo.returncode == 3
    assert typo.stderr.startswith("  b.toml:4: unknown table 'sevice'"), typo.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = toolctl("register", cwd=empty)
    assert nothing.returncode == 2
    assert "no descriptor files in" in nothing.stderr and "toolctl new tool" in nothing.stderr


def test_where_shows_the_search_path_and_what_register_writes(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, {"p/toolctl.toml": "[defaults]\ntimeout = 30\n", "p/registry/.keep": ""})
    (tmp_path / "p" / "sub").mkdir()
    found = toolctl("where", "--json", cwd=tmp_path / "p" / "sub")
    assert found.returncode == 0, found.stderr
    data = json.loads(found.stdout)
    user = Path(os.environ["XDG_DATA_HOME"]) / "toolctl"
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    assert data == {
        "project": f"{tmp_path}/p/toolctl.toml",
        "ignored_project": None,
        "search_path": [
            {"path": f"{tmp_path}/p/registry", "source": "project", "exists": True},
            {"path": f"{user}/registry", "source": "user", "exists": False},
        ],
        "register_writes_to": f"{tmp_path}/p/registry",
        "config_files": [f"{tmp_path}/p/toolctl.toml"],
        "user_config": f"{config}/toolctl/config.toml",
        "data_dir": str(user),
        "cache_dir": os.environ["XDG_CACHE_HOME"] + "/toolctl",
        "state_dir": os.environ["XDG_STATE_HOME"] + "/toolctl",
        "defaults": {
            "pulsar_url": "pulsar://localhost:6650",
            "container_engine": None,
            "timeout": 30.0,
        },
    }
    text = toolctl("where", cwd=tmp_path).stdout
    assert "project: (none: outside a project)" in text
    assert f"  1. {user}/registry  (user, not created yet)" in text
    assert f"register writes to: {user}/registry" in text
    variable = toolctl("where", "--json", cwd=tmp_path / "p", env={"TOOLCTL_REGISTRY": "/x:/y"})
    assert [d["source"] for d in json.loads(variable.stdout)["search_path"]] == [
        "TOOLCTL_REGISTRY",
        "TOOLCTL_REGISTRY",
    ]


def test_a_missing_registry_directory_says_what_to_do(tmp_path: Path, toolctl: Toolctl) -> None:
    typo = toolctl("register", "x.toml", "-r", "regsitry")
    assert typo.returncode == 2
    assert (
        "registry directory regsitry does not exist; create it (mkdir -p regsitry)" in typo.stderr
    )
    # the user registry is made on first use, named or not
    user = Path(os.environ["XDG_DATA_HOME"]) / "toolctl" / "registry"
    write_files(tmp_path, {"x.toml": '[[tool]]\nname = "x"\n[tool.local]\ncommand = ["true"]\n'})
    done = toolctl("register", "x.toml", "-r", str(user))
    assert done.returncode == 0, done.stderr
    assert (user / "tools" / "x.toml").is_file()


def test_a_directory_commands_refuse_is_said_by_where_and_by_every_command(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`where` says which directory commands refuse (a --registry that does not exist, a
    project path that is a file) rather than 'not created yet' and a place register would
    refuse to write; `unregister` says it like the others (it said 'not found', exit 4);
    a project's path that is a file is refused, where `register` wrote to the user
    registry behind it."""
    where = toolctl("where", "-r", "nowhere").stdout
    assert f"  1. {tmp_path}/nowhere  (--registry, does not exist: commands refuse it)" in where
    assert "register writes to: (nowhere: a directory above is refused)" in where
    gone = toolctl("unregister", "tool", "x", "-r", "nowhere")
    assert gone.returncode == 2 and "registry directory nowhere does not exist" in gone.stderr
    write_files(
        tmp_path / "p",
        {
            "toolctl.toml": '[registry]\npaths = ["toolctl.toml"]\n',
            "x.toml": '[[tool]]\nname = "x"\n[tool.local]\ncommand = ["true"]\n',
        },
    )
    told = (
        "toolctl: error: registry directory toolctl.toml (from the project registry) is not a "
        "directory; name a directory there\n"
    )
    for line in (["register", "x.toml"], ["list"], ["check"]):
        done = toolctl(*line, cwd=tmp_path / "p")
        assert (done.returncode, done.stderr) == (2, told), line
    assert not (Path(os.environ["XDG_DATA_HOME"]) / "toolctl" / "registry").exists()
    where = toolctl("where", cwd=tmp_path / "p").stdout
    assert "toolctl.toml  (project, not a directory: commands refuse it)" in where


def test_a_project_default_timeout_applies_to_tools_that_set_none(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    slow = '[[tool]]\nname = "slow"\n[tool.local]\ncommand = ["sleep", "5"]\ninput = "none"\n'
    write_files(tmp_path, {"toolctl.toml": "[defaults]\ntimeout = 0.5\n", "registry/t.toml": slow})
    done = toolctl("run", "slow")
    assert done.returncode == 124, done.stderr
    assert (
        "toolctl: error: tool 'slow' ran past its 0.5 s timeout and was killed; give it longer "
        "with timeout in its descriptor, or run --timeout"
    ) in done.stderr


def test_replace_never_touches_an_earlier_directory_register_cannot_write(
    tmp_path: Path,
) -> None:
    """A read-only directory first on the path (a shared registry): register writes to the
    next one, and a name the read-only one holds stays its, --replace or not."""
    import shutil
    import subprocess
    import sys

    import pytest

    tool = '[[tool]]\nname = "t"\ndescription = "{}"\n[tool.local]\ncommand = ["true"]\n'
    write_files(
        tmp_path, {"shared/t.toml": tool.format("shared"), "mine.toml": tool.format("mine")}
    )
    (tmp_path / "own").mkdir()
    script = (
        f"mount --bind {tmp_path}/shared {tmp_path}/shared && "
        f"mount -o remount,bind,ro {tmp_path}/shared && "
        f"exec {sys.executable} -m toolctl register mine.toml --replace -r shared -r own"
    )
    if shutil.which("unshare") is None:
        pytest.skip("no unshare to mount a read-only directory")
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], cwd=tmp_path, capture_output=True, text=True
    )
    if "mount" in done.stderr and done.returncode != 3:
        pytest.skip(f"cannot mount a read-only directory here: {done.stderr.strip()}")
    assert done.returncode == 3, done.stderr
    assert (
        "tool 't' is already defined in shared/t.toml:1, an earlier registry directory than "
        "own (where register writes)"
    ) in done.stderr
    assert "change it there" in done.stderr
    assert not list((tmp_path / "own").rglob("*.toml"))


def test_a_project_lock_holds_the_project_and_not_the_user_registry(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    # docs/tutorials/ci.md after the README's first tool: the lock must pass on CI, where
    # nobody's user registry is; a tool registered later by hand must not fail it here
    user = Path(os.environ["XDG_DATA_HOME"]) / "toolctl" / "registry"
    tool = '[[tool]]\nname = "{0}"\n[tool.local]\ncommand = ["true"]\ninput = "none"\n'
    write_files(user, {"tools/mine.toml": tool.format("mine")})
    project = tmp_path / "project"
    project.mkdir()
    assert toolctl("init", cwd=project).returncode == 0
    write_files(project, {"registry/shared.toml": tool.format("shared")})
    assert toolctl("run", "mine", cwd=project).returncode == 0  # still read in the project
    assert toolctl("lock", cwd=project).returncode == 0
    locked = (project / "registry" / "toolctl.lock").read_text()
    assert "[tool.shared]" in locked and "mine" not in locked
    write_files(user, {"tools/later.toml": tool.format("later")})
    here = toolctl("check", "--strict", cwd=project)
    assert here.returncode == 0, here.stderr
    elsewhere = {"XDG_DATA_HOME": str(tmp_path / "another-machine")}
    ci = toolctl("check", "--strict", cwd=project, env=elsewhere)
    assert ci.returncode == 0, ci.stderr


def test_init_that_cannot_make_the_registry_leaves_no_half_project(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    (tmp_path / "d4").mkdir()
    (tmp_path / "d4" / "registry").symlink_to(tmp_path / "nowhere")
    done = toolctl("init", "d4", cwd=tmp_path)
    assert done.returncode == 2 and "cannot create d4/registry" in done.stderr
    assert sorted(p.name for p in (tmp_path / "d4").iterdir()) == ["registry"]
    (tmp_path / "a-file").write_text("")
    named = toolctl("list", "--registry", "a-file", cwd=tmp_path)
    assert (named.returncode, named.stderr) == (
        2,
        "toolctl: error: registry directory a-file is not a directory; name a directory, "
        "or leave out --registry\n",
    )


def test_unregister_in_a_project_leaves_the_user_registry_alone(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """In a project, `register` writes to its registry/; `unregister` of a tool the user
    registry holds refused (exit 3, nothing removed), naming how to remove it there. It
    removed the user's file silently."""
    work, team = tmp_path / "work", tmp_path / "team"
    work.mkdir()
    team.mkdir()
    assert toolctl("new", "tool", "hello", cwd=work).returncode == 0
    assert toolctl("register", cwd=work).returncode == 0  # into the user registry
    assert toolctl("init", cwd=team).returncode == 0
    user = Path(os.environ["XDG_DATA_HOME"]) / "toolctl" / "registry"
    refused = toolctl("unregister", "tool", "hello", cwd=team)
    assert refused.returncode == 3, refused.stderr
    assert (user / "tools/hello.toml").exists()
    [line] = refused.stderr.splitlines()
    assert f"tool 'hello' is defined in {user}/tools/hello.toml, not in registry where" in line
    assert line.endswith(f"to remove it there: toolctl unregister tool hello -r {user}")
    gone = toolctl("unregister", "tool", "hello", "-r", str(user), cwd=team)
    assert gone.returncode == 0, gone.stderr
    assert not (user / "tools/hello.toml").exists()


def test_a_projects_check_leaves_the_user_registry_out(tmp_path: Path, toolctl: Toolctl) -> None:
    """A broken file in one person's user registry failed the project's `check` (and so
    its pre-commit hook, on that machine only: CI has no user registry)."""
    team = tmp_path / "team"
    team.mkdir()
    assert toolctl("init", cwd=team).returncode == 0
    write_files(team, {"registry/ok.toml": HERE_TOOL.format(cwd=".")})
    user = Path(os.environ["XDG_DATA_HOME"]) / "toolctl" / "registry"
    write_files(user, {"broken.toml": "bad = \n"})
    done = toolctl("check", "--strict", cwd=team)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "left out 1 finding(s) in the user registry" in done.stderr
    as_json = json.loads(toolctl("check", "--format", "json", cwd=team).stdout)
    assert as_json["problems"] == [] and as_json["notes"]
    alone = toolctl("check", "-r", str(user), cwd=team)
    assert alone.returncode == 3 and "broken.toml:1: error: TOML syntax error" in alone.stdout
    # the command the note gives runs as given, in a shell, spaces in a path and all
    spaced = tmp_path / "my home"
    write_files(spaced / "toolctl" / "registry", {"broken.toml": "bad = \n"})
    noted = toolctl("check", cwd=team, env={"XDG_DATA_HOME": str(spaced)}).stderr.split("`")[1]
    words = shlex.split(noted)
    assert words[-1] == str(spaced / "toolctl" / "registry")
    again = toolctl(*words[1:], cwd=team, env={"XDG_DATA_HOME": str(spaced)})
    assert again.returncode == 3 and "broken.toml:1: error: TOML syntax error" in again.stdout


def test_a_project_registry_that_does_not_exist_fails_its_check(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`paths = ["regsitry"]` (or the directory renamed): the check read nothing and passed
    (exit 0, "0 file(s)"), --strict too. The directory's absence is an error at `paths`;
    beside a directory that exists, a warning (--strict: an error)."""
    team = tmp_path / "team"
    write_files(team, {"toolctl.toml": '[registry]\npaths = ["regsitry"]\nuser = false\n'})
    done = toolctl("check", "--strict", cwd=team)
    assert done.returncode == 3
    assert done.stdout.startswith(
        "toolctl.toml:2: error: registry directory regsitry does not exist"
    )
    write_files(team, {"toolctl.toml": '[registry]\npaths = ["registry", "extra"]\n'})
    (team / "registry").mkdir()
    partly = toolctl("check", cwd=team)
    assert partly.returncode == 0 and "warning: registry directory extra does not exist" in (
        partly.stdout
    )
    assert toolctl("check", "--strict", cwd=team).returncode == 3


def test_strict_commands_and_check_agree_on_a_missing_project_registry(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`check` failed on `paths = ["nope"]` while `list --strict` passed, listing the user
    registry's tools as the project's; now --strict refuses as check does, and without it
    the command warns that nothing of the project's is read."""
    team = tmp_path / "team"
    write_files(team, {"toolctl.toml": '[registry]\npaths = ["nope"]\n'})
    strict = toolctl("list", "--strict", cwd=team)
    assert (strict.returncode, strict.stdout) == (3, "")
    assert strict.stderr.startswith(
        "toolctl: error: --strict is on and registry directory nope (toolctl.toml) does not exist"
    )
    plain = toolctl("list", "--json", cwd=team)
    assert plain.returncode == 0
    assert plain.stderr == (
        "toolctl: warning: registry directory nope (toolctl.toml) does not exist: "
        "nothing of the project's is read (a typo in paths?)\n"
    )


def test_a_strict_refusal_says_the_problem_check_would_leave_out(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """A project tool shadowing one of the user registry: `run --strict` is refused (the
    registry in force has a shadow) while the project's `check` leaves the user registry
    out; the refusal names the problem, and check's note a command that shows it."""
    user = Path(os.environ["XDG_DATA_HOME"]) / "toolctl" / "registry"
    write_files(user, {"dup.toml": HERE_TOOL.format(cwd=".").replace('"here"', '"dup"')})
    team = tmp_path / "team"
    team.mkdir()
    assert toolctl("init", cwd=team).returncode == 0
    write_files(team, {"registry/dup.toml": HERE_TOOL.format(cwd=".").replace('"here"', '"dup"')})
    refused = toolctl("list", "--strict", cwd=team)
    assert refused.returncode == 3
    [line] = refused.stderr.splitlines()
    assert line.startswith(
        f"toolctl: error: --strict is on and the registry has 1 problem(s): {user}/dup.toml:"
    )
    assert "is shadowed by registry/dup.toml" in line
    checked = toolctl("check", "--strict", cwd=team)
    assert checked.returncode == 0
    shown = checked.stderr.split("`")[1]  # the command the note gives
    assert shown == f"toolctl check -r registry -r {user}"  # (shown relative to here)
    again = toolctl(*shown.split()[1:], cwd=team)
    assert "is shadowed by" in again.stdout


def test_a_directory_named_twice_is_on_the_search_path_once(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`paths = ["a", "b", "a/"]`: `where` listed a third directory `check` never read."""
    write_files(tmp_path, {"toolctl.toml": '[registry]\npaths = ["a", "b", "a/"]\nuser = false\n'})
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shown = json.loads(toolctl("where", "--json").stdout)
    assert [d["path"] for d in shown["search_path"]] == [str(tmp_path / "a"), str(tmp_path / "b")]
    twice = json.loads(toolctl("where", "--json", "-r", "a", "-r", "./a", "-r", "b").stdout)
    assert len(twice["search_path"]) == 2
    (tmp_path / "link").symlink_to(tmp_path / "a")  # the same directory by another name
    linked = json.loads(toolctl("where", "--json", "-r", "a", "-r", "link").stdout)
    assert [d["path"] for d in linked["search_path"]] == [str(tmp_path / "a")]
