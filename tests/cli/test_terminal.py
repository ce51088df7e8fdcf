"""What a person at an 80-column terminal sees (a pseudo-terminal, tests/terminal.py): list
rows one line each with names whole, help that reflows and ends with examples, errors
without escapes, and progress on stderr for long work, never beside --json; piped output
as before."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files
from tests.terminal import plain, run_on_terminal

LONG_NAME = "everything.get-annotated-message-with-a-long-name"
TOOLS = f"""
[[tool]]
name = "{LONG_NAME}"
description = "Returns a message with annotations of many kinds, each described at length so that the line runs well past eighty columns"
[tool.local]
command = ["true"]

[[tool]]
name = "short"
description = "Short"
[tool.local]
command = ["python3", "-c", "import json, sys; sys.stdout.write(json.load(sys.stdin)['text'])"]
[[tool.arguments]]
name = "text"
"""


@pytest.fixture
def project(tmp_path: Path, toolctl: Toolctl) -> Path:
    """A project whose registry is indexed already (a cold index shows its own progress)."""
    write_files(
        tmp_path,
        {"toolctl.toml": '[registry]\npaths = ["registry"]\n', "registry/t.toml": TOOLS},
    )
    past = time.time() - 60  # older than the index's racy window: the index is kept as built
    for path in (tmp_path / "registry", tmp_path / "registry/t.toml"):
        os.utime(path, (past, past))
    assert toolctl("list").returncode == 0
    return tmp_path


def test_list_keeps_one_line_per_row_and_names_whole(project: Path) -> None:
    for env in ({}, {"COLUMNS": "40"}):
        screen = run_on_terminal("list", cwd=project, env=env)
        assert screen.returncode == 0
        lines = plain(screen.text).splitlines()
        assert lines[0].split() == ["NAME", "RUNTIME", "CATEGORY", "DESCRIPTION"]
        row = next(line for line in lines if line.startswith(LONG_NAME + " "))
        assert row.endswith("…")
        assert len(lines) == 3  # header and two rows: nothing wrapped
        if not env:
            assert len(row) <= 80
        assert not any(c in screen.text for c in "│┃━")  # no box


def test_list_piped_is_unchanged(project: Path, toolctl: Toolctl) -> None:
    done = toolctl("list")
    long_row = next(line for line in done.stdout.splitlines() if line.startswith(LONG_NAME))
    assert long_row.endswith(
        "each described at length so that the line runs well past eighty columns"
    )
    assert "…" not in done.stdout


def test_help_reflows_and_ends_with_examples(project: Path) -> None:
    screen = run_on_terminal("run", "--help", cwd=project)
    text = plain(screen.text)
    assert screen.returncode == 0
    assert "\x1b" not in screen.text and "╭" not in text
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "  toolctl run word-count --arg text='hello world'" in text
    assert text.rstrip().splitlines()[-1].strip().startswith("toolctl run ")
    # a docstring's line breaks are not kept: its paragraph is one flowing text
    assert "Exit codes: 0 ok, 1 the tool failed, 2 bad arguments, 3 refused by the" in text
    wide = plain(run_on_terminal("run", "--help", cwd=project, columns=120).text)
    assert max(len(line) for line in wide.splitlines()) > 80


def test_help_command(project: Path, toolctl: Toolctl) -> None:
    assert toolctl("help", "run").stdout == toolctl("run", "--help").stdout
    assert toolctl("help", "mcp", "install").stdout == toolctl("mcp", "install", "-h").stdout
    assert "  help " in toolctl("help").stdout
    unknown = toolctl("help", "frob")
    assert unknown.returncode == 2
    assert unknown.stderr == "toolctl: error: unknown command 'frob'; see 'toolctl -h'\n"


def test_every_command_help_ends_with_examples(toolctl: Toolctl) -> None:
    from toolctl.cli.app import command

    def paths(cmd: object, path: list[str]) -> list[list[str]]:
        subs = getattr(cmd, "commands", None) or {}
        found = [path] if path and path != ["help"] else []
        for name, sub in subs.items():
            found += paths(sub, [*path, name])
        return found

    for path in paths(command([]), []):
        text = toolctl(*path, "--help").stdout
        assert "Examples:" in text, path
        last = text.rstrip().splitlines()[-1].strip()
        assert last.startswith("toolctl "), (path, last)


def test_usage_errors_on_a_terminal_have_no_escapes(project: Path) -> None:
    screen = run_on_terminal("run", "short", "--vrbose", cwd=project)
    assert screen.returncode == 2
    assert screen.text == (
        "toolctl: error: unknown option '--vrbose' (did you mean '--verbose'?)\r\n"
    )


def test_batch_progress_when_results_go_to_a_file(project: Path) -> None:
    lines = project / "lines.jsonl"
    lines.write_text('{"text": "a"}\n' * 6 + "not json\n")
    out = project / "out.jsonl"
    screen = run_on_terminal("run", "short", "--batch", str(lines), cwd=project, stdout=out)
    assert screen.returncode == 1
    assert len(out.read_text().splitlines()) == 7
    last = plain(screen.text).rstrip().split("\n")[-1]
    assert last.startswith("toolctl: batch: 7/7 done, ")
    assert last.endswith("/s, 1 failed")


def test_no_progress_beside_json_or_on_a_terminal_stdout(project: Path) -> None:
    lines = project / "lines.jsonl"
    lines.write_text('{"text": "a"}\n' * 3)
    shown = run_on_terminal("run", "short", "--batch", str(lines), cwd=project)
    assert "batch:" not in shown.text
    assert [json.loads(line)["output"] for line in plain(shown.text).splitlines()] == ["a"] * 3


def test_a_cold_index_shows_progress(tmp_path: Path) -> None:
    # enough files that indexing outlasts the spinner's delay and its start (rich's import)
    # on a fast, idle machine too: 3,000 took ~0.35 s, and the spinner sometimes never showed
    files = {
        f"registry/t{n:05}.toml": f'[[tool]]\nname = "t{n:05}"\n[tool.local]\ncommand = ["true"]\n'
        for n in range(10000)
    }
    write_files(tmp_path, {"toolctl.toml": '[registry]\npaths = ["registry"]\n', **files})
    out = tmp_path / "out.txt"
    screen = run_on_terminal("list", cwd=tmp_path, stdout=out)
    assert screen.returncode == 0
    assert "indexing the registry (10000 files)…" in screen.text
    assert len(out.read_text().splitlines()) == 10001
    again = run_on_terminal("list", "--json", cwd=tmp_path, stdout=out)
    assert again.text == ""  # warm, and --json: nothing on the terminal


def test_a_large_import_says_one_line(tmp_path: Path) -> None:
    tools = [{"tool_id": f"tool_{n}", "name": f"Tool {n}"} for n in range(60)]
    (tmp_path / "registry.json").write_text(json.dumps(tools))
    write_files(tmp_path, {"toolctl.toml": '[registry]\npaths = ["registry"]\n', "registry/.k": ""})
    screen = run_on_terminal("import", "tool-agent", "registry.json", cwd=tmp_path)
    assert screen.returncode == 0, screen.text
    said = [line for line in plain(screen.text).splitlines() if line.startswith("toolctl: ")]
    assert said == ["toolctl: imported 60 tools into registry/tools"]
    assert len(list((tmp_path / "registry/tools").glob("*.toml"))) == 60


def test_the_invisible_characters_search_finds_exactly_the_list() -> None:
    """``render._HAS_INVISIBLE`` (ranges, for speed) matches every character of
    ``_INVISIBLE`` (what is escaped) and nothing else."""
    from toolctl.terminal import render

    listed = set(map(chr, render._INVISIBLE))
    assert all(render._HAS_INVISIBLE.fullmatch(c) for c in listed)
    others = (chr(c) for c in range(0x20, 0xE0100) if not 0xD800 <= c <= 0xDFFF)
    assert not [c for c in others if c not in listed and render._HAS_INVISIBLE.fullmatch(c)]
