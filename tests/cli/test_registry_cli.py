"""register, unregister, list, show and check through the real CLI, as a new user would."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files


def tool(name: str, description: str = "a tool", runtime: str = "local") -> str:
    section = {
        "local": '[tool.local]\ncommand = ["true"]\n',
        "http": '[tool.http]\nurl = "http://127.0.0.1:9/x"\n',
    }[runtime]
    return f'[[tool]]\nname = "{name}"\ndescription = "{description}"\n{section}\n'


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr + result.stdout


def test_two_directories_defining_one_tool(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"a/x.toml": tool("echo", "first"), "b/y.toml": tool("echo", "second")})
    paths = ["--registry", "a", "--registry", "b"]

    shown = toolctl("show", "echo", "--json", *paths)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["descriptor"]["description"] == "first"
    assert (data["file"], data["line"]) == ("a/x.toml", 1)
    assert data["shadowed"] == [{"file": "b/y.toml", "line": 1}]

    check = toolctl("check", *paths)
    assert check.returncode == 0
    assert "b/y.toml:1: warning: tool 'echo' is shadowed by a/x.toml:1" in check.stdout

    strict = toolctl("check", "--strict", *paths)
    assert strict.returncode == 3
    assert "b/y.toml:1: error: tool 'echo' is shadowed" in strict.stdout
    for result in (shown, check, strict):
        no_traceback(result)


def test_strict_environment_variable_refuses_other_commands(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, {"a/x.toml": tool("echo"), "b/y.toml": tool("echo")})
    listed = toolctl("list", "-r", "a", "-r", "b", env={"TOOLCTL_STRICT": "1"})
    assert listed.returncode == 3
    assert "--strict is on" in listed.stderr
    assert listed.stdout == ""


def test_a_strict_refusal_names_the_problem_check_lists_first(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    broken = (
        '[[tool]]\nname = "t"\ndescription = "x"\nservice = "nowhere"\n\n'
        '[[action]]\nname = "a"\ndescription = "x"\ntools = ["nothing"]\n\n'
        '[[action]]\nname = "b"\ndescription = "x"\nsteps = 1\n'
    )
    write_files(tmp_path, {"r/a.toml": broken})
    checked = toolctl("check", "-r", "r")
    first = checked.stdout.splitlines()[0]  # a.toml:LINE: error: MESSAGE
    refused = toolctl("list", "--strict", "-r", "r")
    assert refused.returncode == 3
    where, _, message = first.partition(": error: ")
    assert f"{where}: {message} (and " in refused.stderr, (checked.stdout, refused.stderr)


def test_register_refuses_taken_and_confusable_names(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path,
        {
            "reg/tools.toml": tool("read-file"),
            "new/same.toml": tool("read-file", "another tool"),
            "new/alike.toml": tool("Read_File"),
        },
    )
    taken = toolctl("register", "new/same.toml", "-r", "reg")
    assert taken.returncode == 3
    assert "tool 'read-file' is already defined in reg/tools.toml:1" in taken.stderr

    alike = toolctl("register", "new/alike.toml", "-r", "reg")
    assert alike.returncode == 3
    assert "'Read_File' is confusable with 'read-file' defined in reg/tools.toml:1" in alike.stderr
    assert sorted(p.name for p in (tmp_path / "reg").rglob("*.toml")) == ["tools.toml"]
    no_traceback(taken)
    no_traceback(alike)


def test_register_writes_into_the_first_writable_directory(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(
        tmp_path, {"new.toml": tool("fresh") + '[[group]]\nname = "g"\ntools = ["fresh"]\n'}
    )
    (tmp_path / "reg").mkdir()
    (tmp_path / "other").mkdir()
    done = toolctl("register", "new.toml", "-r", "reg", "-r", "other", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        {"kind": "tool", "name": "fresh", "file": "reg/tools/fresh.toml", "action": "registered"},
        {"kind": "group", "name": "g", "file": "reg/groups/g.toml", "action": "registered"},
    ]
    shown = json.loads(toolctl("show", "fresh", "--json", "-r", "reg").stdout)
    assert shown["descriptor"]["description"] == "a tool"
    assert toolctl("check", "--strict", "-r", "reg").returncode == 0


def test_register_validates_first_and_writes_nothing_on_error(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, {"good.toml": tool("good"), "bad.toml": '[[tool]]\nname = "bad"\n'})
    (tmp_path / "reg").mkdir()
    refused = toolctl("register", "good.toml", "bad.toml", "-r", "reg")
    assert refused.returncode == 3
    assert "bad.toml:1: tool 'bad': missing runtime" in refused.stderr
    assert "nothing was registered" in refused.stderr
    assert not list((tmp_path / "reg").rglob("*.toml"))

    missing = toolctl("register", "nope.toml", "-r", "reg")
    assert missing.returncode == 2
    assert "no such descriptor file: nope.toml" in missing.stderr
    # what stands there is said: a directory, a device
    for command in ("register", "check"):
        folder = toolctl(command, "reg", "-r", "reg")
        assert (folder.returncode, folder.stderr) == (
            2,
            "toolctl: error: reg is a directory, not a descriptor file; name the descriptor "
            "files in it\n",
        )
        device = toolctl(command, "/dev/null", "-r", "reg")
        assert (device.returncode, device.stderr) == (
            2,
            "toolctl: error: /dev/null is not a regular file: a descriptor file is read from one\n",
        )
    (tmp_path / "empty.toml").write_text("# a tool, one day\n")
    empty = toolctl("register", "good.toml", "empty.toml", "-r", "reg")
    assert (empty.returncode, empty.stderr) == (
        2,
        "toolctl: error: empty.toml defines nothing: no [[tool]], [[service]], [[action]] "
        "or [[group]] table; nothing was registered\n",
    )
    assert not list((tmp_path / "reg").rglob("*.toml"))
    not_a_directory = toolctl("init", "good.toml")
    assert (not_a_directory.returncode, not_a_directory.stderr) == (
        2,
        "toolctl: error: good.toml is not a directory: a project is a directory\n",
    )


def test_init_creates_a_missing_directory(tmp_path: Path, toolctl: Toolctl) -> None:
    made = toolctl("init", "new/project")  # `toolctl help init` shows `init ~/my-project`
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "new/project/toolctl.toml").is_file()
    assert (tmp_path / "new/project/registry").is_dir()
    (tmp_path / "file").write_text("")
    under_a_file = toolctl("init", "file/project")
    assert (under_a_file.returncode, under_a_file.stderr) == (
        2,
        "toolctl: error: cannot create file/project/registry: Not a directory\n",
    )


def test_broken_registry_check_and_list(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path,
        {
            "reg/broken.toml": '[[tool]]\nname = "x"\n[tool.local\n',
            "reg/noruntime.toml": '[[tool]]\nname = "lost"\ndescription = "no runtime"\n',
            "reg/good.toml": tool("fine"),
        },
    )
    check = toolctl("check", "-r", "reg")
    assert check.returncode == 3
    assert "reg/broken.toml:3: error: TOML syntax error" in check.stdout
    assert "reg/noruntime.toml:1: error: tool 'lost': missing runtime" in check.stdout

    listed = toolctl("list", "-r", "reg")
    assert listed.returncode == 0
    assert listed.stdout.splitlines()[1].startswith("fine ")
    warnings = [line for line in listed.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 2
    assert "reg/broken.toml:3" in warnings[0] and "reg/noruntime.toml:1" in warnings[1]
    no_traceback(check)
    no_traceback(listed)


def test_check_formats(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"reg/broken.toml": "[[tool]\n", "reg/good.toml": tool("fine")})
    github = toolctl("check", "-r", "reg", "--format", "github")
    assert github.returncode == 3
    assert github.stdout.startswith("::error file=reg/broken.toml,line=1::TOML syntax error")
    report = json.loads(toolctl("check", "-r", "reg", "--json").stdout)
    assert report["ok"] is False and report["errors"] == 1
    assert report["problems"][0]["file"] == "reg/broken.toml"
    clean = toolctl("check", "-r", "reg", "--format", "json", "-r", "none-such")
    assert clean.returncode == 2
    assert "registry directory none-such does not exist" in clean.stderr


def test_parallel_registers_of_distinct_names_all_land(tmp_path: Path) -> None:
    for n in range(20):
        write_files(tmp_path, {f"in/t{n}.toml": tool(f"tool-{n}")})
    (tmp_path / "reg").mkdir()
    outcomes = _parallel(tmp_path, [f"in/t{n}.toml" for n in range(20)])
    assert [code for code, _ in outcomes] == [0] * 20, outcomes
    written = sorted(p.name for p in (tmp_path / "reg/tools").iterdir())
    assert written == sorted(f"tool-{n}.toml" for n in range(20))


def test_parallel_registers_of_one_name_let_exactly_one_win(tmp_path: Path) -> None:
    for n in range(10):
        write_files(tmp_path, {f"in/t{n}.toml": tool("contested", f"writer {n}")})
    (tmp_path / "reg").mkdir()
    outcomes = _parallel(tmp_path, [f"in/t{n}.toml" for n in range(10)])
    assert sorted(code for code, _ in outcomes) == [0] + [3] * 9, outcomes
    left = sorted(
        p.relative_to(tmp_path / "reg").as_posix()
        for p in (tmp_path / "reg").rglob("*")
        if p.is_file()
    )
    assert left == [".toolctl.lock", "tools/contested.toml"]


def _parallel(cwd: Path, files: list[str]) -> list[tuple[int, str]]:
    def register(file: str) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "-m", "toolctl", "register", file, "-r", "reg"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "Traceback" not in done.stderr
        return done.returncode, done.stderr

    with ThreadPoolExecutor(max_workers=len(files)) as pool:
        return list(pool.map(register, files))


def test_unregister(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path, {"new.toml": tool("temp"), "b/shared.toml": tool("temp", "older") + tool("other")}
    )
    (tmp_path / "reg").mkdir()
    assert toolctl("register", "new.toml", "-r", "reg").returncode == 0
    gone = toolctl("unregister", "tool", "temp", "-r", "reg", "-r", "b")
    assert gone.returncode == 0, gone.stderr
    assert "now in force" in gone.stderr
    assert not (tmp_path / "reg/tools/temp.toml").exists()
    refused = toolctl("unregister", "tool", "temp", "-r", "b")
    assert refused.returncode == 3
    assert "defines 1 other entry" in refused.stderr
    unknown = toolctl("unregister", "tool", "nope", "-r", "b")
    assert unknown.returncode == 4


def test_unregister_refuses_what_definitions_in_force_still_name(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`unregister service time` after `mcp add time` removed the service and left its
    tools naming nothing: `check` and `run` then failed on them. It is refused, naming
    them; --with-tools removes the service's tools too, all or nothing (a group naming one
    of those tools refuses them all), and --force removes it anyway."""
    service = '[[service]]\nname = "s"\n[service.http]\nurl = "http://127.0.0.1:9/"\n'
    write_files(tmp_path, {
        "reg/services/s.toml": service,
        "reg/tools/a.toml": '[[tool]]\nname = "a"\nservice = "s"\n[tool.http]\npath = "/a"\n',
        "reg/tools/b.toml": '[[tool]]\nname = "b"\nservice = "s"\n[tool.http]\npath = "/b"\n',
        "reg/groups/g.toml": '[[group]]\nname = "g"\ntools = ["b"]\n',
    })  # fmt: skip
    assert toolctl("check", "-r", "reg").returncode == 0
    refused = toolctl("unregister", "service", "s", "-r", "reg")
    assert refused.returncode == 3
    assert refused.stderr == (
        "toolctl: error: service 's' is named by tool 'a', tool 'b'; nothing was removed; "
        "pass --with-tools to remove its tools too, or --force to leave them naming nothing\n"
    )
    grouped = toolctl("unregister", "service", "s", "--with-tools", "-r", "reg")
    assert grouped.returncode == 3 and "tool 'b' is named by group 'g'" in grouped.stderr
    assert len(list((tmp_path / "reg").rglob("*.toml"))) == 4  # nothing was removed
    (tmp_path / "reg/groups/g.toml").unlink()
    done = toolctl("unregister", "service", "s", "--with-tools", "-r", "reg", "--json")
    assert done.returncode == 0, done.stderr
    assert [t["name"] for t in json.loads(done.stdout)["tools"]] == ["a", "b"]
    assert not list((tmp_path / "reg").rglob("*.toml"))
    write_files(tmp_path, {"reg/tools/a.toml": '[[tool]]\nname = "a"\n[tool.local]\n'
                           'command = ["true"]\n', "reg/groups/g.toml": '[[group]]\nname = "g"'
                           '\ntools = ["a"]\n'})  # fmt: skip
    assert toolctl("unregister", "tool", "a", "-r", "reg").returncode == 3
    assert toolctl("unregister", "tool", "a", "--force", "-r", "reg").returncode == 0


def test_a_quarantined_look_alike_is_unregistered(tmp_path: Path, toolctl: Toolctl) -> None:
    """Removing the look-alike is the fix its quarantine asks for: `unregister` does it, as
    from any directory (it said "rename one of them" and refused, exit 3)."""
    write_files(tmp_path, {"a/t.toml": tool("word-count"), "new.toml": tool("word_count")})
    (tmp_path / "b").mkdir()
    assert toolctl("register", "new.toml", "-r", "b").returncode == 0
    ran = toolctl("run", "word_count", "-r", "a", "-r", "b")
    assert ran.returncode == 3 and "toolctl unregister tool word_count" in ran.stderr
    shown = toolctl("show", "word_count", "-r", "a", "-r", "b")
    assert "QUARANTINED" in shown.stdout and "toolctl unregister tool word_count" in shown.stdout
    gone = toolctl("unregister", "tool", "word_count", "-r", "a", "-r", "b")
    assert gone.returncode == 0, gone.stderr
    assert not (tmp_path / "b/tools/word_count.toml").exists()
    assert (tmp_path / "a/t.toml").exists()


def test_list_filters_and_json(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path,
        {
            "reg/t.toml": tool("alpha", "counts words")
            + tool("beta", "talks http", runtime="http")
            + '[[tool]]\nname = "gamma"\ncategory = "math"\ntags = ["words"]\n'
            '[tool.local]\ncommand = ["true"]\n'
        },
    )

    def names(*args: str) -> list[str]:
        listed = toolctl("list", "-r", "reg", "--json", *args)
        return [d["name"] for d in json.loads(listed.stdout)]

    assert names() == ["alpha", "beta", "gamma"]
    assert names("--runtime", "http") == ["beta"]
    assert names("--category", "MATH") == ["gamma"]
    assert names("--search", "words") == ["alpha", "gamma"]
    bad = toolctl("list", "widgets", "-r", "reg")
    assert bad.returncode == 2
    assert "unknown kind 'widgets'" in bad.stderr
    odd = toolctl("unregister", "../../etc", "foo", "-r", "reg")
    assert (odd.returncode, odd.stderr) == (
        2,
        "toolctl: error: unknown kind '../../etc': expected tool, service, action or group\n",
    )


def test_show_unknown_name_suggests(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"reg/t.toml": tool("word-count")})
    missing = toolctl("show", "wordcount", "-r", "reg")
    assert missing.returncode == 4
    assert "not found; did you mean: word-count?" in missing.stderr
    shown = toolctl("show", "word-count", "-r", "reg")
    assert shown.stdout.startswith("tool word-count  (reg/t.toml:1)")


def test_sample_registry_passes_strict_check(toolctl: Toolctl) -> None:
    root = Path(__file__).resolve().parents[2]
    result = toolctl("check", "--strict", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_missing_directory_in_toolctl_registry_is_exit_2(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    # a typo in a CI job's variable must not pass as an empty registry, nor serve no tools
    missing = tmp_path / "regsitry"
    (tmp_path / "t.toml").write_text('[[tool]]\nname = "t"\n[tool.local]\ncommand = ["true"]\n')
    env = {"TOOLCTL_REGISTRY": str(missing)}
    for line in (["check"], ["list"], ["run", "t"], ["register", "t.toml"], ["lock"]):
        done = toolctl(*line, env=env, cwd=tmp_path)
        assert done.returncode == 2, (line, done.stderr)
        assert done.stderr.startswith(
            "toolctl: error: registry directory regsitry (from TOOLCTL_REGISTRY) does not "
            "exist; create it (mkdir -p regsitry), or leave out TOOLCTL_REGISTRY"
        ), done.stderr
    assert not missing.exists()


def test_lock_refuses_a_registry_with_errors(tmp_path: Path, toolctl: Toolctl) -> None:
    """A broken entry is skipped where the registry is read: locked as it is, it would be
    left out of the lock without a word, and its return read as drift. `lock` refuses,
    exit 3, and writes nothing."""
    write_files(
        tmp_path, {"reg/good.toml": tool("good"), "reg/bad.toml": '[[tool]]\nname = "bad"\n'}
    )
    done = toolctl("lock", "-r", "reg")
    assert (done.returncode, done.stderr) == (
        3,
        "toolctl: error: the registry has 1 error(s); nothing was locked; fix them first: "
        "'toolctl check' lists them\n",
    )
    assert not (tmp_path / "reg" / "toolctl.lock").exists()
    (tmp_path / "reg" / "bad.toml").unlink()
    assert toolctl("lock", "-r", "reg").returncode == 0


@pytest.mark.parametrize("format", ["github", "text"])
def test_check_lines_escape_control_characters_and_are_capped(
    tmp_path: Path, toolctl: Toolctl, format: str
) -> None:
    """A name carrying an OSC sequence (ESC ] ... BEL) passed through `--format github` to
    the CI log; a finding 5,000 characters long was printed whole (limits.md: at most 2,000)."""
    write_files(
        tmp_path,
        {
            "r/t.toml": '[[tool]]\nname = "esc\\u001b]0;pwned\\u0007"\n[tool.local]\ncommand = ["true"]\n'
            f'[[tool]]\nname = "{"x" * 5000} y"\n[tool.local]\ncommand = ["true"]\n'
        },
    )
    done = toolctl("check", "--format", format, "-r", str(tmp_path / "r"))
    assert done.returncode == 3
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "\\x1b]0;pwned\\x07" in lines[0]
    assert all(len(line) < 2200 for line in lines)
    assert "more characters)" in lines[1]


def test_a_name_of_another_kind_is_said_so(tmp_path: Path, toolctl: Toolctl) -> None:
    """`run SERVICE`, `worker TOOL`: "not found" says what the name is (exit 4 still)."""
    write_files(
        tmp_path,
        {
            "reg/t.toml": tool("word-count") + '[[service]]\nname = "jokes"\n[service.pulsar]\n'
            'request_queue = "non-persistent://tg/request/jokes"\n'
            'response_queue = "non-persistent://tg/response/jokes"\n'
        },
    )
    ran = toolctl("run", "jokes", "-r", "reg")
    assert ran.returncode == 4
    assert "'jokes' is a service, not a tool" in ran.stderr
    hosted = toolctl("worker", "word-count", "-r", "reg")
    assert hosted.returncode == 4
    assert "'toolctl worker --tool word-count' hosts one tool" in hosted.stderr
    started = toolctl("service", "up", "word-count", "-r", "reg")  # a tool needs no starting
    assert started.returncode == 4
    assert "is a tool, not a service: it runs by name (toolctl run word-count)" in started.stderr


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_list_refuses_a_runtime_that_is_none(
    tmp_path: Path, toolctl: Toolctl, json_flag: list[str]
) -> None:
    """`--runtime contianer` listed nothing, exit 0, as if no tool ran in containers."""
    write_files(tmp_path, {"reg/t.toml": tool("alpha")})
    done = toolctl("list", "--runtime", "contianer", "-r", "reg", *json_flag)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "toolctl: error: unknown runtime 'contianer': expected one of local, container, "
        "pulsar, http, mcp, tool-agent (or a plugin's that a tool runs on); did you mean "
        "'container'?\n"
    )
    assert toolctl("list", "--runtime", "local", "-r", "reg", *json_flag).returncode == 0
    assert toolctl("list", "--runtime", "tool-agent", "-r", "reg", *json_flag).returncode == 0


def test_an_empty_listing_is_a_note_not_a_lone_header(tmp_path: Path, toolctl: Toolctl) -> None:
    """`list` and `history` printed a header and nothing under it, while `stats` said why
    there was nothing: each says it now, on stderr; stdout stays empty (and --json `[]`)."""
    (tmp_path / "reg").mkdir()
    told = {
        ("list",): "no tools in force; `toolctl new tool NAME` writes one",
        ("list", "groups"): "no groups in force",
        ("list", "--category", "x"): "no tools match the filters",
        ("history",): "no calls recorded yet",
        ("history", "--tool", "x"): "no calls match the filters",
    }
    for line, note in told.items():
        done = toolctl(*line, *(["-r", "reg"] if line[0] == "list" else []))
        assert (done.returncode, done.stdout, done.stderr) == (0, "", f"toolctl: {note}\n")
    assert toolctl("list", "--json", "-r", "reg").stdout == "[]\n"
