"""Issue #9, registry side: one hostile registry file never breaks, hangs or hijacks the rest."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Toolctl, write_files

OK = '[[tool]]\nname = "ok"\ndescription = "fine"\n[tool.local]\ncommand = ["true"]\n'


def tool(name: str, extra: str = "", section: str = "") -> str:
    return f'[[tool]]\nname = "{name}"\n{extra}\n[tool.local]\ncommand = ["true"]\n{section}'


def strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def sane(*results: Any) -> None:
    for result in results:
        assert result.returncode != 70, result.stderr
        assert "Traceback" not in result.stdout + result.stderr


def listed(toolctl: Toolctl, *args: str) -> list[str]:
    result = toolctl("list", "--json", *args)
    sane(result)
    assert result.returncode == 0, result.stderr
    return sorted(item["name"] for item in strict_json(result.stdout))


# -- A: nesting ---------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [70, 255, 1000])
def test_deep_nesting_breaks_only_its_own_file(
    tmp_path: Path, toolctl: Toolctl, depth: int
) -> None:
    nested = "[" * depth + "]" * depth
    write_files(
        tmp_path, {"r/deep.toml": tool("deep", f"[tool.config]\nv = {nested}"), "r/ok.toml": OK}
    )
    run = toolctl("run", "ok", "-r", "r")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("deep.toml") == 1  # one warning
    assert listed(toolctl, "-r", "r") == ["ok"]
    check = toolctl("check", "-r", "r")
    assert check.returncode == 3
    assert "deep.toml" in check.stdout and "nested" in check.stdout
    sane(run, check)


# -- B: odd JSON Schemas ------------------------------------------------------------------


ODD_SCHEMAS = {
    "properties": "parameters = { properties = 5 }",
    "dependencies": "parameters = { dependencies = { a = 5 } }",
    "pattern": 'parameters = { properties = { a = { type = "string", pattern = "(" } } }',
    "required": "parameters = { required = 7 }",
    "unresolvable": 'parameters = { properties = { a = { "$ref" = "#/definitions/none" } } }',
}


def test_invalid_parameters_schemas_break_only_their_files(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    files = {f"r/{key}.toml": tool(key, text) for key, text in ODD_SCHEMAS.items()}
    write_files(tmp_path, {**files, "r/ok.toml": OK})
    assert listed(toolctl, "-r", "r") == ["ok"]
    run = toolctl("run", "ok", "-r", "r")
    assert run.returncode == 0, run.stderr
    check = toolctl("check", "-r", "r")
    assert check.returncode == 3
    for key in ODD_SCHEMAS:
        assert f"r/{key}.toml" in check.stdout
    assert "pattern must be a valid regex" in check.stdout
    sane(run, check)


def test_a_valid_odd_schema_still_runs(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path,
        {
            "r/t.toml": tool(
                "t", 'parameters = { properties = { n = { type = "integer", multipleOf = 0.5 } } }'
            )
        },
    )
    result = toolctl("run", "t", "-r", "r", "--arg", "n=3")
    sane(result)
    assert result.returncode == 0, result.stderr


# -- C: no network while loading ----------------------------------------------------------


@pytest.fixture
def listeners() -> Iterator[tuple[list[int], list[str]]]:
    """A server that answers every request, and a silent one; both count connections."""
    counts = [0, 0]
    sockets = []
    for index, answers in ((0, True), (1, False)):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.settimeout(0.2)
        sockets.append(server)

        def serve(
            server: socket.socket = server, index: int = index, answers: bool = answers
        ) -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                counts[index] += 1
                if answers:
                    conn.recv(4096)
                    conn.sendall(
                        b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"type": "string"}'
                    )
                    conn.close()
                # the silent one holds the connection open and says nothing

        threading.Thread(target=serve, daemon=True).start()
    urls = [f"http://127.0.0.1:{s.getsockname()[1]}/schema.json" for s in sockets]
    yield counts, urls
    for server in sockets:
        server.close()


def test_remote_ref_is_an_error_and_never_fetched(
    tmp_path: Path, toolctl: Toolctl, listeners: tuple[list[int], list[str]]
) -> None:
    counts, urls = listeners
    refs = [*urls, "https://example.invalid/x.json", "file:///etc/passwd", "other.json#/a"]
    files = {
        f"r/ref{n}.toml": tool(
            f"ref{n}", f'parameters = {{ properties = {{ a = {{ "$ref" = "{url}" }} }} }}'
        )
        for n, url in enumerate(refs)
    }
    write_files(tmp_path, {**files, "r/ok.toml": OK})
    check = toolctl("check", "-r", "r")
    assert check.returncode == 3
    for n in range(len(refs)):
        assert f"r/ref{n}.toml" in check.stdout
    assert "only '#/...' references work" in check.stdout
    assert listed(toolctl, "-r", "r") == ["ok"]
    sane(check)
    assert counts == [0, 0]


# -- D: symlink loops ---------------------------------------------------------------------


def test_symlink_loops_are_walked_once(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"r/ok.toml": OK, "r/sub/more.toml": tool("more")})
    os.symlink(".", tmp_path / "r/loop")
    os.symlink("..", tmp_path / "r/up")
    os.symlink("..", tmp_path / "r/sub/back")
    assert listed(toolctl, "-r", "r") == ["more", "ok"]
    check = toolctl("check", "-r", "r")
    sane(check)
    assert check.returncode == 0, check.stdout


# -- E: non-finite numbers ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "timeout = inf",
        "timeout = nan",
        '[[tool.arguments]]\nname = "a"\ntype = "number"\ndefault = nan',
        "config = { deep = [1.0, { x = -inf }] }",
    ],
)
def test_non_finite_numbers_are_refused(tmp_path: Path, toolctl: Toolctl, text: str) -> None:
    body = tool("odd", section=text + "\n") if text.startswith("[[") else tool("odd", text)
    write_files(tmp_path, {"r/odd.toml": body, "r/ok.toml": OK})
    check = toolctl("check", "--strict", "-r", "r")
    assert check.returncode == 3
    assert "not a finite number" in check.stdout
    assert listed(toolctl, "-r", "r") == ["ok"]
    for args in (["check", "--json"], ["export", "--format", "openai"]):
        result = toolctl(*args, "-r", "r")
        sane(result)
        strict_json(result.stdout)


# -- G: confusable names ------------------------------------------------------------------


def test_a_confusable_later_name_is_quarantined(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"r1/a.toml": tool("read-file"), "r2/b.toml": tool("Read_File")})
    path = ["-r", "r1", "-r", "r2"]
    run = toolctl("run", "Read_File", *path)
    assert run.returncode == 3
    assert "confusable with 'read-file'" in run.stderr
    assert "r1/a.toml:1" in run.stderr
    assert listed(toolctl, *path) == ["read-file"]
    exported = toolctl("export", "--format", "openai", *path)
    assert exported.returncode == 0, exported.stderr
    assert "Read_File" not in exported.stdout
    assert toolctl("run", "read-file", *path).returncode == 0
    sane(run, exported)


# -- H: symlinks leaving the registry, and the lock ---------------------------------------


def test_symlinks_leaving_the_registry_warn_and_fail_strict(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, {"r/legit.toml": tool("read-file"), "elsewhere/evil.toml": tool("evil")})
    os.symlink(tmp_path / "elsewhere/evil.toml", tmp_path / "r/000-link.toml")
    os.symlink(tmp_path / "elsewhere", tmp_path / "r/dir")
    check = toolctl("check", "-r", "r")
    assert check.returncode == 0
    assert "r/000-link.toml:1: warning: symlink leaves the registry directory" in check.stdout
    assert "r/dir/evil.toml:1: warning: symlink leaves" in check.stdout
    strict = toolctl("check", "--strict", "-r", "r")
    assert strict.returncode == 3
    assert "r/000-link.toml:1: error: symlink leaves" in strict.stdout


def test_lock_then_check_locked_reports_every_difference(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path,
        {
            "r/legit.toml": tool("read-file"),
            "r/gone.toml": tool("gone"),
            "r/same.toml": tool("same"),
        },
    )
    (tmp_path / "r/.toolctl.lock.4242.tmp").write_text("left by a killed `lock`")
    locked = toolctl("lock", "-r", "r")
    assert locked.returncode == 0, locked.stderr
    assert not (tmp_path / "r/.toolctl.lock.4242.tmp").exists()
    lock = tmp_path / "r/toolctl.lock"
    text = lock.read_text()
    assert 'file = "legit.toml"' in text and "sha256:" in text
    assert toolctl("check", "--locked", "-r", "r").returncode == 0
    assert toolctl("check", "--strict", "-r", "r").returncode == 0
    assert listed(toolctl, "-r", "r") == [
        "gone",
        "read-file",
        "same",
    ]  # the lock is no registry file

    write_files(
        tmp_path,
        {"r/0000.toml": tool("read-file", 'description = "evil"'), "r/new.toml": tool("fresh")},
    )
    (tmp_path / "r/gone.toml").unlink()
    (tmp_path / "r/same.toml").write_text(tool("same", 'description = "edited"'))
    check = toolctl("check", "--locked", "-r", "r")
    assert check.returncode == 3
    # the new definition differs from the one locked: not only moved (it read as a move)
    assert "tool 'read-file' moved from legit.toml (as locked) to 0000.toml, and changed" in (
        check.stdout
    )
    assert "tool 'fresh' is new since toolctl.lock was written" in check.stdout
    gone_line = text.splitlines().index("[tool.gone]") + 1  # at its pin, not line 1
    assert (
        f"r/toolctl.lock:{gone_line}: error: tool 'gone' is in toolctl.lock but no longer defined"
    ) in check.stdout
    assert "tool 'same' changed since toolctl.lock was written" in check.stdout
    assert toolctl("check", "--strict", "-r", "r").returncode == 3
    assert toolctl("check", "-r", "r").returncode == 0  # shadows warn; the lock is opt-in
    sane(check)

    # a lock damaged (a merge's conflict markers): one finding at its line, the others told
    lock.write_text(text + "<<<<<<< HEAD\n")
    damaged = toolctl("check", "--strict", "--format", "json", "-r", "r")
    assert damaged.returncode == 3
    found = json.loads(damaged.stdout)
    messages = [f["message"] for f in found["problems"]]
    assert any(m.startswith("cannot read toolctl.lock: Invalid statement") for m in messages)
    assert any("is shadowed by" in m for m in messages), messages  # the registry's own


def test_check_locked_without_a_lock_is_exit_3(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"r/a.toml": OK})
    result = toolctl("check", "--locked", "-r", "r")
    assert result.returncode == 3
    assert "no toolctl.lock" in result.stderr


# -- I, J: register ---------------------------------------------------------------------


def test_register_into_a_dangling_symlink_writes_nothing(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path, {"r/tools/.keep": "", "new/two.toml": tool("first") + "\n" + tool("second")}
    )
    os.symlink(tmp_path / "nowhere.toml", tmp_path / "r/tools/second.toml")
    result = toolctl("register", "new/two.toml", "-r", "r")
    sane(result)
    assert result.returncode == 3
    assert "dangling symlink" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r/tools/first.toml").exists()


def test_register_when_tools_is_a_file(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(tmp_path, {"r/tools": "not a directory", "new/t.toml": OK})
    result = toolctl("register", "new/t.toml", "-r", "r")
    sane(result)
    assert result.returncode == 3
    assert "is not a directory" in result.stderr
    assert (tmp_path / "r/tools").read_text() == "not a directory"


def test_register_into_a_missing_registry_is_a_usage_error(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(tmp_path, {"new/t.toml": OK})
    result = toolctl("register", "new/t.toml", "--registry", "typo-dir")
    assert result.returncode == 2
    assert "typo-dir does not exist" in result.stderr
    assert not (tmp_path / "typo-dir").exists()
    first = toolctl("register", "new/t.toml")  # the default user registry may be created
    assert first.returncode == 0, first.stderr


@pytest.mark.parametrize(
    "text",
    [
        "not toml [[[",
        "version = 2",
        "version = 1\ntool = 5",
        'version = 1\n[tool]\nx = "y"',
        "version = 1\n[tool.x]\nfile = 5\ndefinition = nan",
        "version = 1\nx = " + "[" * 1500 + "]" * 1500,
        "version = 1\n[\xff]",
    ],
)
def test_a_bad_lock_is_one_line_and_exit_3(tmp_path: Path, toolctl: Toolctl, text: str) -> None:
    write_files(tmp_path, {"r/a.toml": OK})
    (tmp_path / "r/toolctl.lock").write_bytes(text.encode("utf-8", "surrogateescape"))
    result = toolctl("check", "--locked", "-r", "r")
    sane(result)
    assert result.returncode == 3
    assert len(result.stderr.strip().splitlines()) <= 2  # the error, maybe the summary


@pytest.mark.parametrize(
    "value",
    [
        "default = 2024-01-01",
        "default = 07:00:00",
        "enum = [1979-05-27T00:00:00Z]",
    ],
)
def test_a_toml_date_breaks_only_its_entry(tmp_path: Path, toolctl: Toolctl, value: str) -> None:
    write_files(
        tmp_path,
        {
            "reg/b.toml": '[[tool]]\nname = "when"\n[tool.local]\ncommand = ["echo"]\n'
            f'[[tool.arguments]]\nname = "day"\n{value}\n\n'
            '[[tool]]\nname = "good"\n[tool.local]\ncommand = ["echo", "ok"]\ninput = "none"\n'
        },
    )
    ran = toolctl("run", "good", "-r", "reg")
    assert (ran.returncode, ran.stdout) == (0, "ok\n"), ran.stderr
    assert "is a TOML date or time (quote it: JSON has none) (skipped)" in ran.stderr
    checked = toolctl("check", "--json", "-r", "reg")
    assert checked.returncode == 3 and "tool 'when'" in checked.stdout
    listed = toolctl("list", "--json", "-r", "reg")
    assert listed.returncode == 0 and '"good"' in listed.stdout


@pytest.mark.parametrize("field", ['image = "--privileged"', 'memory = "--rm"', 'network = "-x"'])
def test_a_container_value_that_reads_as_an_option_is_refused(
    tmp_path: Path, toolctl: Toolctl, field: str
) -> None:
    image = "" if field.startswith("image") else 'image = "alpine"\n'
    write_files(
        tmp_path,
        {
            "reg/c.toml": f'[[tool]]\nname = "c1"\n[tool.container]\n{image}{field}\ncommand = ["sh"]\n'
        },
    )
    checked = toolctl("check", "-r", "reg")
    assert checked.returncode == 3 and "must not start with '-'" in checked.stdout
    planned = toolctl("run", "c1", "--dry-run", "-r", "reg")
    assert (planned.returncode, planned.stdout) == (4, "")  # skipped: no argv was planned


def test_escape_sequences_from_a_registry_never_reach_the_terminal(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(
        tmp_path,
        {
            "reg/esc.toml": '[[tool]]\nname = "desc-esc"\n'
            'description = "\\u001b[2J\\u001b[31mHELLO"\ncategory = "\\u001b[31mcat"\n'
            '[tool.local]\ncommand = ["echo"]\ninput = "none"\n'
            '[[tool]]\nname = "\\u001b]0;pwned\\u0007x"\n[tool.local]\ncommand = ["echo"]\n'
        },
    )
    for line in (["list"], ["show", "desc-esc"], ["run", "desc-esc"], ["check"]):
        done = toolctl(*line, "-r", "reg")
        shown = done.stdout + done.stderr
        assert "\x1b" not in shown and "\x07" not in shown, line
    listed = toolctl("list", "-r", "reg")
    assert "\\x1b[2J\\x1b[31mHELLO" in listed.stdout  # visible, not obeyed
    assert "tool '\\x1b]0;pwned\\x07x'" in listed.stderr


def test_check_fails_on_a_registry_file_whose_name_is_not_utf8(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(
        tmp_path, {"reg/good.toml": '[[tool]]\nname = "g"\n[tool.local]\ncommand = ["true"]\n'}
    )
    with open(os.fsencode(tmp_path / "reg") + b"/b\xff.toml", "w") as handle:
        handle.write('[[tool]]\nname = "b"\n[tool.local]\ncommand = ["true"]\n')
    done = toolctl("check", "-r", "reg")
    assert done.returncode == 3
    assert done.stdout == "reg/b\\xff.toml:1: error: the name is not UTF-8 (skipped); rename it\n"


def test_a_symlink_to_nothing_is_told_never_silently_skipped(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """A `*.toml` symlink whose target is gone (a moved checkout, a file of another disk)
    was left out without a word: `check` passed, `list` lacked its tools."""
    write_files(
        tmp_path, {"reg/good.toml": '[[tool]]\nname = "g"\n[tool.local]\ncommand = ["true"]\n'}
    )
    (tmp_path / "reg" / "gone.toml").symlink_to(tmp_path / "elsewhere" / "tools.toml")
    done = toolctl("check", "-r", "reg")
    assert done.returncode == 3
    assert done.stdout == (
        "reg/gone.toml:1: error: a symlink to nothing: its target does not exist (skipped)\n"
    )
    for _ in range(2):  # the second from the cache
        listed = toolctl("list", "-r", "reg")
        assert listed.returncode == 0 and "g " in listed.stdout
        assert listed.stderr == (
            "toolctl: warning: reg/gone.toml: a symlink to nothing: its target does not exist "
            "(skipped)\n"
        )
    write_files(
        tmp_path,
        {"elsewhere/tools.toml": '[[tool]]\nname = "h"\n[tool.local]\ncommand = ["true"]\n'},
    )
    found = toolctl("list", "-r", "reg")
    assert (found.stderr, "h " in found.stdout) == ("", True)


@pytest.mark.parametrize(
    "field",
    [
        "timeout = true",
        'timeout = "10"',
        "max_output = true",
        'arguments = [{ name = "a", required = "yes" }]',
    ],
)
def test_a_value_of_the_wrong_type_is_not_coerced(
    tmp_path: Path, toolctl: Toolctl, field: str
) -> None:
    write_files(
        tmp_path,
        {"reg/t.toml": f'[[tool]]\nname = "t"\n{field}\n[tool.local]\ncommand = ["true"]\n'},
    )
    done = toolctl("check", "-r", "reg")
    assert done.returncode == 3 and "tool 't': " in done.stdout, done.stdout


def test_a_fifo_or_a_symlink_loop_named_toml_is_told_never_silently_skipped(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """Like a symlink to nothing: a `*.toml` that is a FIFO, or a symlink loop, was left
    out without a word (`check --strict` passed)."""
    write_files(
        tmp_path, {"reg/good.toml": '[[tool]]\nname = "g"\n[tool.local]\ncommand = ["true"]\n'}
    )
    os.mkfifo(tmp_path / "reg" / "pipe.toml")
    (tmp_path / "reg" / "loop.toml").symlink_to("loop.toml")
    done = toolctl("check", "--strict", "-r", "reg")
    assert done.returncode == 3
    assert done.stdout == (
        "reg/loop.toml:1: error: it cannot be read: Too many levels of symbolic links "
        "(skipped)\n"
        "reg/pipe.toml:1: error: not a regular file (a FIFO, a socket or a device: skipped)\n"
    )


def test_invisible_and_reordering_characters_are_shown_as_codes(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """A right-to-left override reverses the rest of the line it is printed in, a
    zero-width space makes `zw<ZWSP>x` read as `zwx` ("Trojan Source"): in a finding, a
    table or JSON they are shown as their codes (in JSON the same string, escaped)."""
    write_files(
        tmp_path,
        {
            "reg/a.toml": '[[tool]]\nname = "zw\\u200bx"\n[tool.local]\ncommand = ["true"]\n',
            "reg/b.toml": '[[tool]]\nname = "ok"\ndescription = "safe\\u202eexe.txt\\U000e0041"\n'
            '[tool.local]\ncommand = ["true"]\n',
        },
    )
    outputs = []
    for args in (["check"], ["check", "--format", "github"], ["check", "--format", "json"],
                 ["list"], ["list", "--json"], ["show", "ok", "--json"]):  # fmt: skip
        done = toolctl(*args, "-r", "reg")
        outputs.append(done.stdout)
        assert "\u200b" not in done.stdout + done.stderr, args
        assert "\u202e" not in done.stdout + done.stderr, args
        assert "\U000e0041" not in done.stdout + done.stderr, args  # a TAG: "ASCII smuggling"
    assert "zw\\u200bx" in outputs[0] and "zw\\u200bx" in outputs[1]
    assert "safe\\u202eexe.txt\\udb40\\udc41" in outputs[4]
    listed = json.loads(outputs[4])
    assert listed[0]["description"] == "safe\u202eexe.txt\U000e0041"  # the value unchanged


def test_max_output_takes_a_size_as_run_max_output_does(tmp_path: Path, toolctl: Toolctl) -> None:
    """`max_output = "1KiB"` was refused ("a valid integer") while `run --max-output 1KiB`
    was fine: the descriptor takes the same sizes, and refuses what the option refuses."""
    write_files(
        tmp_path,
        {
            "reg/t.toml": '[[tool]]\nname = "t"\nmax_output = "1KiB"\n[tool.local]\n'
            'command = ["python3", "-c", "print(\'x\' * 3000)"]\ninput = "none"\n',
            "bad/t.toml": '[[tool]]\nname = "t"\nmax_output = "2GiB"\n[tool.local]\n'
            'command = ["true"]\n',
        },
    )
    done = toolctl("run", "t", "-r", "reg", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == "x" * 1024
    refused = toolctl("check", "-r", "bad")
    assert refused.returncode == 3
    assert "max_output: must be above 0 and at most 1GiB, got '2GiB'" in refused.stdout


def test_a_look_alike_that_sorts_first_is_told_at_itself_against_the_lock(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """A new file that sorts earlier defines a look-alike of a locked name: it holds the
    name now and the locked one is quarantined. The lock said the locked name was "no
    longer defined" (it is, quarantined) at toolctl.lock, not at the newcomer a review
    reads."""
    plain = '[[tool]]\nname = "{name}"\n[tool.local]\ncommand = ["{command}"]\n'
    write_files(tmp_path, {"r/local.toml": plain.format(name="echo-it", command="true")})
    assert toolctl("lock", "-r", "r").returncode == 0
    write_files(tmp_path, {"r/00-early.toml": plain.format(name="echo.it", command="false")})
    done = toolctl("check", "--locked", "-r", "r")
    assert done.returncode == 3
    assert (
        "r/00-early.toml:1: error: tool 'echo.it' takes the place of 'echo-it' of toolctl.lock"
    ) in done.stdout
    assert "no longer defined" not in done.stdout


@pytest.mark.parametrize(
    "description",
    ["Adds\\U000E0049\\U000E0067 numbers", "Adds numbers\U000e0049", "safe\\u202eexe", "ok\u2066x"],
    ids=["tag-escape", "tag", "bidi-escape", "bidi"],
)
def test_check_warns_of_text_a_model_reads_and_a_person_does_not(
    tmp_path: Path, toolctl: Toolctl, description: str
) -> None:
    """TAG characters ("ASCII smuggling": instructions for the model inside a tool's
    description) and bidi controls ("Trojan Source"), as characters or TOML escapes: a
    warning at their line, an error under --strict."""
    write_files(
        tmp_path,
        {"reg/t.toml": f'[[tool]]\nname = "t"\ndescription = "{description}"\n'
         '[tool.local]\ncommand = ["true"]\n'},
    )  # fmt: skip
    done = toolctl("check", "-r", "reg")
    assert done.returncode == 0
    assert "reg/t.toml:3: warning: holds" in done.stdout and "hide or reorder text" in done.stdout
    assert toolctl("check", "--strict", "-r", "reg").returncode == 3
    clean = tmp_path / "clean"
    write_files(clean, {"t.toml": '[[tool]]\nname = "t"\ndescription = "a \\\\u0041 b"\n'
                                  '[tool.local]\ncommand = ["true"]\n'})  # fmt: skip
    assert "hide or reorder" not in toolctl("check", "-r", str(clean)).stdout


@pytest.mark.parametrize("network", ['""', '" "'])
def test_an_empty_network_is_refused_not_the_engines_default(
    tmp_path: Path, toolctl: Toolctl, network: str
) -> None:
    """`network = ""` became `--network=`, the engine's default bridge: a network nobody
    asked for (the default is "none")."""
    write_files(
        tmp_path,
        {
            "reg/c.toml": f'[[tool]]\nname = "c1"\n[tool.container]\nimage = "alpine"\nnetwork = {network}\n'
        },
    )
    checked = toolctl("check", "-r", "reg")
    assert checked.returncode == 3 and "container.network: must name a network" in checked.stdout
    assert toolctl("run", "c1", "-r", "reg", "--dry-run").returncode == 4  # skipped: no such tool
