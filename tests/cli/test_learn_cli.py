"""graph learn, graph evaluate, recommend --after and graph --learned, through the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Toolctl, write_files
from tests.learning.support import calls_in_turn, registry_toml, write_transcripts

ACTIONS = """
[[action]]
name = "browse"
description = "Look around the file system"
tools = [{ tool = "cd", score = 0.9 }, { tool = "ls", score = 0.6 }]
next = [{ action = "read", score = 0.7 }]

[[action]]
name = "read"
tools = [{ tool = "cat" }, { tool = "grep", score = 0.5 }]
"""


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    """A registry with the transcripts' tools and two actions, and the transcripts."""
    write_files(tmp_path / "reg", {"tools.toml": registry_toml(), "actions.toml": ACTIONS})
    return tmp_path / "reg", write_transcripts(tmp_path / "chat.jsonl")


def test_learn_writes_a_stable_file_beside_the_registry_and_changes_no_descriptor(
    toolctl: Toolctl, toolctl_process: Toolctl, setup: tuple[Path, Path]
) -> None:
    reg, chat = setup
    before = {p.name: p.read_bytes() for p in reg.glob("*.toml")}
    done = toolctl("graph", "learn", "--from-transcripts", str(chat), "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    assert "learned 40 sessions" in done.stderr and "toolctl.learned" in done.stderr
    learned = reg / "toolctl.learned"
    first = learned.read_bytes()
    assert (
        b"\n[next.cd]\n" in first
        and b'[next."^ cd"]' in first
        and b"[[proposed.call]]" in first
        and b"[[proposed.next]]" in first
    )
    assert {p.name: p.read_bytes() for p in reg.glob("*.toml")} == before
    umask = os.umask(0)
    os.umask(umask)  # read back: the file is shared with the registry, as a lock is
    assert stat.S_IMODE(learned.stat().st_mode) == 0o666 & ~umask  # (mkstemp's 0600 was)
    again = toolctl_process(
        "graph",
        "learn",
        "--from-transcripts",
        str(chat),
        "--registry",
        str(reg),
        "--json",
        env={"PYTHONHASHSEED": "12345"},
    )
    assert again.returncode == 0, again.stderr
    assert learned.read_bytes() == first  # byte for byte, another process, another hash seed
    summary = json.loads(again.stdout)
    assert summary["sessions"] == 40 and summary["proposals"] > 0
    assert summary["path"].endswith("toolctl.learned")
    # transcripts with no tool call: refused, the learned file left as it was
    quiet = chat.with_name("quiet.jsonl")
    quiet.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    for empty in (quiet, chat.with_name("empty.jsonl")):
        empty.touch()
        refused = toolctl(
            "graph", "learn", "--from-transcripts", str(empty), "--registry", str(reg)
        )
        assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert learned.read_bytes() == first


def test_learn_to_another_file_and_from_stdin(
    toolctl: Toolctl, setup: tuple[Path, Path], tmp_path: Path
) -> None:
    reg, chat = setup
    done = toolctl(
        "graph",
        "learn",
        "--from-transcripts",
        "-",
        "--out",
        str(tmp_path / "out.learned"),
        "--registry",
        str(reg),
        input=chat.read_text(),
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.learned").read_text().startswith("# Learned by `toolctl graph learn`")
    assert not (reg / "toolctl.learned").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [],
            "toolctl: error: nothing to learn from: the run history has no calls yet; run some "
            "tools, 'toolctl history import FILE', or give --from-transcripts FILE",
        ),
        (
            ["--from-transcripts", "missing.jsonl"],
            "toolctl: error: cannot read transcripts missing.jsonl",
        ),
        (["--from-transcripts", "bad.jsonl"], "toolctl: error: bad.jsonl:2: not JSON"),
    ],
)
def test_learn_refuses_what_it_cannot_read(
    toolctl: Toolctl, setup: tuple[Path, Path], tmp_path: Path, args: list[str], message: str
) -> None:
    reg, _ = setup
    (tmp_path / "bad.jsonl").write_text('{"messages": []}\n{"messages": [\n')
    done = toolctl("graph", "learn", *args, "--registry", str(reg))
    assert done.returncode == 2
    assert done.stderr.startswith(message)
    assert "Traceback" not in done.stderr and not (reg / "toolctl.learned").exists()


def learned(toolctl: Toolctl, reg: Path, chat: Path) -> None:
    done = toolctl("graph", "learn", "--from-transcripts", str(chat), "--registry", str(reg))
    assert done.returncode == 0, done.stderr


def test_recommend_after_ranks_the_next_tools(toolctl: Toolctl, setup: tuple[Path, Path]) -> None:
    reg, chat = setup
    learned(toolctl, reg, chat)
    done = toolctl(
        "recommend",
        "--after",
        "cd",
        "--query",
        "list what is in docs",
        "--top",
        "3",
        "--json",
        "--registry",
        str(reg),
    )
    assert done.returncode == 0, done.stderr
    ranked = json.loads(done.stdout)["next"]
    assert next(r["name"] for r in ranked) == "ls" and len(ranked) == 3
    assert ranked == sorted(ranked, key=lambda r: -r["score"])
    same = toolctl(
        "recommend",
        "--after",
        "cd",
        "--query",
        "list what is in docs",
        "--top",
        "3",
        "--format",
        "json",
        "--registry",
        str(reg),
    )
    assert same.stdout == done.stdout

    def score(*query: str) -> float:
        done = toolctl(
            "recommend",
            "--after",
            "authenticate_twitter",
            *query,
            "--top",
            "9",
            "--registry",
            str(reg),
        )
        assert done.returncode == 0 and done.stdout.startswith("RANK  TOOL")
        return {row.split()[1]: float(row.split()[2]) for row in done.stdout.splitlines()[1:]}[
            "post_tweet"
        ]

    assert score("--query", "tweet the news") > score()


def test_recommend_suggests_only_tools_in_force(
    toolctl: Toolctl, setup: tuple[Path, Path], tmp_path: Path
) -> None:
    reg, _chat = setup
    # history favours two names that are not in force: a look-alike of ls and a tool never registered
    calls = "".join(
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": "list"},
                    *(
                        {
                            "role": "assistant",
                            "tool_calls": [
                                {"id": f"{i}{n}", "function": {"name": n, "arguments": "{}"}}
                            ],
                        }
                        for i, n in enumerate(["cd", "LS", "cd", "gone"])
                    ),
                ]
            }
        )
        + "\n"
        for _ in range(30)
    )
    (tmp_path / "biased.jsonl").write_text(calls)
    write_files(
        reg, {"zz-lookalike.toml": '[[tool]]\nname = "LS"\n[tool.local]\ncommand = ["true"]\n'}
    )
    learned(toolctl, reg, tmp_path / "biased.jsonl")
    assert "\nLS = { calls = 30," in (reg / "toolctl.learned").read_text()
    done = toolctl("recommend", "--after", "cd", "--top", "20", "--json", "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    names = [r["name"] for r in json.loads(done.stdout)["next"]]
    assert "LS" not in names and "gone" not in names
    assert sorted(names) == sorted(
        [
            "authenticate_twitter",
            "cat",
            "cd",
            "comment",
            "get_user_stats",
            "grep",
            "ls",
            "mv",
            "post_tweet",
        ]
    )


def test_recommend_after_without_a_learned_file_and_with_an_unknown_tool(
    toolctl: Toolctl, setup: tuple[Path, Path]
) -> None:
    reg, _ = setup
    done = toolctl(
        "recommend",
        "--after",
        "nope",
        "--query",
        "search for errors in the log",
        "--top",
        "1",
        "--registry",
        str(reg),
    )
    assert done.returncode == 0, done.stderr
    assert "tool 'nope' is not in force; used as context only" in done.stderr
    assert "no learned file" in done.stderr
    assert done.stdout.split("\n")[1].split()[1] == "grep"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --action (the toolkit graph) or --after (the next tools)"),
        (["--action", "browse", "--after", "cd"], "--action and --after cannot be combined"),
        (["--after", "cd", "--hops", "2"], "--hops and --after cannot be combined"),
        (["--after", "cd", "--threshold", "0.5"], "--threshold and --after cannot be combined"),
        (["--action", "browse", "--top", "3"], "--top and --action cannot be combined"),
        (["--action", "browse", "--query", "hi"], "--query and --action cannot be combined"),
        (
            ["--after", "cd", "--format", "dot"],
            "--format dot draws --action results; --after prints table or json",
        ),
    ],
)
def test_recommend_needs_one_kind_of_start(
    toolctl: Toolctl, setup: tuple[Path, Path], args: list[str], message: str
) -> None:
    reg, _ = setup
    done = toolctl("recommend", *args, "--registry", str(reg))
    assert done.returncode == 2 and done.stderr == f"toolctl: error: {message}\n"


def test_a_broken_learned_file_is_a_registry_error(
    toolctl: Toolctl, setup: tuple[Path, Path]
) -> None:
    reg, _ = setup
    (reg / "toolctl.learned").write_text("format = 1\n[tools\n")
    done = toolctl("recommend", "--after", "cd", "--registry", str(reg))
    assert done.returncode == 3
    assert "toolctl.learned: not a learned file" in done.stderr and "graph learn" in done.stderr
    # what is wrong said in the file's terms, not Python's; one exit code for all of it
    for text, said in (
        (b"format = 1\n", "(it has no 'sessions')"),
        (b"format = 1\nsessions = 1\norder = 3\nmin_support = 2\nfailure_weight = 0.25\n"
         b'lexical_weight = 0.5\n[next.cd]\nls = "x"\n', "(a value of the wrong kind where"),
        (b"\xff\n", "(it is not UTF-8 text)"),
    ):  # fmt: skip
        (reg / "toolctl.learned").write_bytes(text)
        done = toolctl("recommend", "--after", "cd", "--registry", str(reg))
        assert done.returncode == 3 and said in done.stderr, done.stderr


def test_evaluate_prints_recall_against_the_baselines(
    toolctl: Toolctl, setup: tuple[Path, Path]
) -> None:
    _, chat = setup
    done = toolctl("graph", "evaluate", str(chat), "--folds", "4", "--top", "3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["MODEL", "RECALL@1", "RECALL@3", "LIST", "SIZE"]
    assert [line.split()[0] for line in lines[1:]] == ["learned", "transition", "popularity"]
    assert "4 folds" in done.stderr
    as_json = toolctl("graph", "evaluate", str(chat), "--folds", "4", "--top", "3", "--json")
    document = json.loads(as_json.stdout)
    assert document["folds"] == 4 and [m["name"] for m in document["models"]] == [
        "learned",
        "transition",
        "popularity",
    ]
    table = {line.split()[0]: float(line.split()[2]) for line in lines[1:]}
    assert table == {
        m["name"]: pytest.approx(m["recall"]["3"], abs=1e-3) for m in document["models"]
    }


def test_evaluate_refuses_bad_folds(toolctl: Toolctl, setup: tuple[Path, Path]) -> None:
    _, chat = setup
    assert toolctl("graph", "evaluate", str(chat), "--folds", "1").returncode == 2
    done = toolctl("graph", "evaluate", str(chat), "--folds", "41")
    assert (
        done.returncode == 2 and "--folds must be between 2 and the 40 conversations" in done.stderr
    )
    one = chat.parent / "one.jsonl"
    one.write_text(chat.read_text().splitlines()[0] + "\n")
    alone = toolctl("graph", "evaluate", str(one))  # no --folds could do: said so
    assert (alone.returncode, alone.stderr) == (
        2,
        "toolctl: error: evaluating needs at least 2 conversations; the files hold 1\n",
    )


def test_graph_learned_draws_the_learned_transitions(
    toolctl: Toolctl, setup: tuple[Path, Path]
) -> None:
    reg, chat = setup
    missing = toolctl("graph", "--learned", "--registry", str(reg))
    assert missing.returncode == 4 and "run `toolctl graph learn` first" in missing.stderr
    learned(toolctl, reg, chat)
    done = toolctl("graph", "--learned", "--registry", str(reg))
    assert done.returncode == 0 and done.stdout.startswith("digraph learned {")
    assert '"authenticate_twitter" -> "post_tweet"' in done.stdout and "penwidth=" in done.stdout
    assert (
        toolctl("graph", "--learned", "--format", "mermaid", "--registry", str(reg)).returncode == 2
    )
    static = toolctl("graph", "--registry", str(reg))  # the toolkit drawing is unchanged
    assert static.returncode == 0 and static.stdout.startswith("digraph toolkit {")


def need_dot() -> None:
    if shutil.which("dot") is None:
        if os.environ.get("TOOLCTL_REQUIRE_ENGINES") == "1":
            pytest.fail("Graphviz 'dot' is absent; TOOLCTL_REQUIRE_ENGINES=1 needs it")
        pytest.skip("Graphviz 'dot' is absent (scripts/setup-graphviz.sh installs it)")


def test_graph_svg_and_png_through_graphviz(toolctl: Toolctl, setup: tuple[Path, Path]) -> None:
    need_dot()
    reg, chat = setup
    learned(toolctl, reg, chat)
    svg = toolctl("graph", "--learned", "--format", "svg", "--registry", str(reg))
    assert svg.returncode == 0 and "<svg" in svg.stdout and "post_tweet" in svg.stdout
    toolkit_svg = toolctl("graph", "--format", "svg", "--registry", str(reg))
    assert toolkit_svg.returncode == 0 and "browse" in toolkit_svg.stdout
    png = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolctl",
            "graph",
            "--learned",
            "--format",
            "png",
            "--registry",
            str(reg),
        ],
        capture_output=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert png.returncode == 0 and png.stdout.startswith(b"\x89PNG\r\n")


def test_svg_without_graphviz_is_exit_5(
    toolctl: Toolctl, setup: tuple[Path, Path], tmp_path: Path
) -> None:
    reg, _ = setup
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    done = toolctl("graph", "--format", "svg", "--registry", str(reg), env={"PATH": str(empty)})
    assert done.returncode == 5
    assert done.stderr.startswith("toolctl: error: Graphviz 'dot' not found on PATH")


def test_learn_reads_the_run_history_by_default(toolctl: Toolctl, setup: tuple[Path, Path]) -> None:
    """Without --from-transcripts: the run history's sessions (here imported transcripts,
    caller "import"; calls made through toolctl count the same way)."""
    reg, chat = setup
    assert toolctl("history", "import", str(chat)).returncode == 0
    done = toolctl("graph", "learn", "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    assert "learned 40 sessions" in done.stderr
    assert b"\n[next.cd]\n" in (reg / "toolctl.learned").read_bytes()


def test_png_to_a_terminal_is_refused(setup: tuple[Path, Path], tmp_path: Path) -> None:
    need_dot()
    reg, _ = setup
    import pty

    leader, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "toolctl", "graph", "--format", "png", "-r", str(reg)],
            stdout=terminal,
            stderr=subprocess.PIPE,
            timeout=60,
            cwd=tmp_path,
            check=False,
        )
        os.set_blocking(leader, False)
        try:
            shown = os.read(leader, 65536)
        except BlockingIOError:
            shown = b""
    finally:
        os.close(leader)
        os.close(terminal)
    assert (done.returncode, shown) == (2, b"")
    assert done.stderr == (
        b"toolctl: error: --format png is binary and standard output is a terminal; "
        b"redirect it to a file: toolctl graph --format png > graph.png\n"
    )


def test_a_call_whose_name_cannot_be_learned_is_left_out_not_fatal(
    toolctl: Toolctl, setup: tuple[Path, Path], tmp_path: Path
) -> None:
    """An imported transcript naming "my tool" (or "") stopped `graph learn` over the whole
    history for as long as the row lived; one naming `^` was counted as the start of a
    session (the tools after it ranked as those sessions start with)."""
    reg, chat = setup
    calls = [
        {"id": str(n), "type": "function", "function": {"name": name, "arguments": "{}"}}
        for n, name in enumerate(["my tool", "", "^", "cat"])
    ]
    odd = {
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": calls}]
    }
    (tmp_path / "odd.jsonl").write_text(chat.read_text() + json.dumps(odd) + "\n")
    assert toolctl("history", "import", str(tmp_path / "odd.jsonl")).returncode == 0
    done = toolctl("graph", "learn", "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    assert (
        "toolctl: warning: left out 3 call(s) whose tool name cannot be learned (empty, '^', "
        "with a space, or not text)"
    ) in done.stderr
    assert (reg / "toolctl.learned").is_file()


def test_learn_writes_to_stdout_and_never_over_what_is_not_a_file(
    toolctl: Toolctl, setup: tuple[Path, Path], tmp_path: Path
) -> None:
    reg, chat = setup
    args = ["graph", "learn", "--from-transcripts", str(chat), "--registry", str(reg)]
    printed = toolctl(*args, "--out", "-")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith("# Learned by `toolctl graph learn`")
    assert "-> stdout" in printed.stderr and not (tmp_path / "-").exists()
    assert toolctl(*args, "--out", "-", "--json").returncode == 2
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    refused = toolctl(*args, "--out", str(fifo))
    assert refused.returncode == 2 and "it is not a regular file" in refused.stderr
    assert fifo.is_fifo()
    (tmp_path / "real.learned").write_text("")
    (tmp_path / "link.learned").symlink_to(tmp_path / "real.learned")
    assert toolctl(*args, "--out", str(tmp_path / "link.learned")).returncode == 0
    assert (tmp_path / "link.learned").is_symlink()
    assert (tmp_path / "real.learned").read_text().startswith("# Learned by")
    # the registry's own toolctl.learned, brought as a link by a clone: replaced, never
    # written through (the --out above is a path the user named)
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n")
    default = reg / "toolctl.learned"
    default.unlink(missing_ok=True)
    default.symlink_to(victim)
    assert toolctl(*args).returncode == 0
    assert victim.read_text() == "keep me\n"
    assert not default.is_symlink() and default.read_text().startswith("# Learned by")


@pytest.mark.parametrize(
    "line", [["graph", "evaluate", "--top"], ["recommend", "--after", "cat", "--top"]]
)
def test_a_top_past_1000_is_a_usage_error(
    toolctl: Toolctl, setup: tuple[Path, Path], line: list[str]
) -> None:
    reg, chat = setup
    where = [str(chat), str(chat)] if line[1] == "evaluate" else ["--registry", str(reg)]
    done = toolctl(*line[:2], *where, *line[2:], "999999999999")
    assert done.returncode == 2, done.stderr
    assert "is not in the range 1<=x<=1000" in done.stderr


def _chat_calling(*names: str) -> str:
    """One conversation calling ``names``, as a JSONL line; json.dumps keeps a lone
    surrogate as the escape a transcript from elsewhere may hold."""
    calls = [
        {"id": str(n), "type": "function", "function": {"name": name, "arguments": "{}"}}
        for n, name in enumerate(names)
    ]
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": calls}]
    return json.dumps({"messages": messages}) + "\n"


def test_a_name_toml_cannot_hold_is_left_out_so_the_file_reads_back(
    toolctl: Toolctl, setup: tuple[Path, Path], tmp_path: Path
) -> None:
    """A name with a lone surrogate ("\\ud800") was written as an escape TOML refuses:
    `graph learn` succeeded, then every `recommend --after` was exit 3."""
    reg, chat = setup
    (tmp_path / "odd.jsonl").write_text(chat.read_text() + _chat_calling("cd", "x\ud800", "ls"))
    done = toolctl(
        "graph", "learn", "--from-transcripts", str(tmp_path / "odd.jsonl"), "-r", str(reg)
    )
    assert done.returncode == 0, done.stderr
    assert "toolctl: warning: left out 1 call(s) whose tool name cannot be learned" in done.stderr
    after = toolctl("recommend", "--after", "cd", "--registry", str(reg))
    assert after.returncode == 0, after.stderr


def test_a_history_with_no_learnable_call_is_told_and_the_learned_file_kept(
    toolctl: Toolctl, setup: tuple[Path, Path], tmp_path: Path
) -> None:
    """As for an empty history: an empty learned file would only replace the one there."""
    reg, _ = setup
    (reg / "toolctl.learned").write_text("kept\n")
    (tmp_path / "odd.jsonl").write_text(_chat_calling("my tool", ""))
    assert toolctl("history", "import", str(tmp_path / "odd.jsonl")).returncode == 0
    done = toolctl("graph", "learn", "--registry", str(reg))
    assert done.returncode == 2
    assert done.stderr.startswith(
        "toolctl: error: nothing to learn from: no call in the run history names a tool that "
        "can be learned"
    )
    assert done.stderr.count("\n") == 1
    assert (reg / "toolctl.learned").read_text() == "kept\n"


@pytest.mark.parametrize("command", [["recommend", "--after", "cd"], ["graph", "--learned"]])
def test_a_count_too_big_for_the_scores_is_a_registry_error_not_a_crash(
    toolctl: Toolctl, setup: tuple[Path, Path], command: list[str]
) -> None:
    """`calls = <400 digits>` is a TOML integer that passed as a count, then overflowed the
    scores' float arithmetic: exit 70."""
    reg, chat = setup
    assert (
        toolctl("graph", "learn", "--from-transcripts", str(chat), "-r", str(reg)).returncode == 0
    )
    learned = reg / "toolctl.learned"
    text = learned.read_text()
    learned.write_text(text.replace("{ calls = ", "{ calls = " + "9" * 400, 1))
    done = toolctl(*command, "--registry", str(reg))
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("toolctl: error: ") and done.stderr.count("\n") == 1
    assert "reg/toolctl.learned: not a learned file (calls = 999" in done.stderr


def test_a_function_name_is_learned_as_its_tool_and_any_name_is_drawn_as_written(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A transcript calls tools by their OpenAI function names (`dotted_name`, what
    `export --format openai` calls `dotted.name`): learning and `recommend --after` take
    them as the tools in force they stand for (the transition was split or lost); and
    `graph --learned` writes a name as it is (`查询`, not JSON's `\\u67e5\\u8be2`)."""
    tool = '[[tool]]\nname = "{}"\ndescription = "{}"\n[tool.local]\ncommand = ["true"]\ninput = "none"\n'
    write_files(
        tmp_path, {"r/t.toml": tool.format("dotted.name", "dot") + tool.format("typed", "t")}
    )
    chat = json.dumps(calls_in_turn(["typed", "dotted_name", "查询"]))
    (tmp_path / "chat.jsonl").write_text((chat + "\n") * 5)
    learned = toolctl("graph", "learn", "--from-transcripts", "chat.jsonl", "-r", "r", "--out", "-")
    assert learned.returncode == 0, learned.stderr
    assert "dotted_name" not in learned.stdout and '"dotted.name"' in learned.stdout
    done = toolctl("graph", "learn", "--from-transcripts", "chat.jsonl", "-r", "r")
    assert done.returncode == 0, done.stderr
    after = toolctl("recommend", "--after", "typed", "--top", "1", "-r", "r", "--json")
    assert [t["name"] for t in json.loads(after.stdout)["next"]] == ["dotted.name"]
    by_function = toolctl("recommend", "--after", "dotted_name", "-r", "r")
    assert by_function.returncode == 0 and "not in force" not in by_function.stderr
    drawn = toolctl("graph", "--learned", "-r", "r")
    assert '"查询"' in drawn.stdout and "\\u" not in drawn.stdout


def test_a_name_past_the_basic_plane_learns_and_a_hidden_character_is_drawn_visibly(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """`search🔍` in a transcript: the learned file reads back (JSON's surrogate escapes,
    which no TOML reader takes, made it unreadable, and learning again wrote it again);
    a name holding an escape sequence or a bidi control is drawn with the character named
    (`<U+001B>`), never passed to the terminal."""
    write_files(tmp_path, {"r/t.toml": ""})
    chat = json.dumps(calls_in_turn(["search🔍", "fetch", "a\x1b]0;pwn\x07b", "x\u202ey"]))
    (tmp_path / "chat.jsonl").write_text((chat + "\n") * 3)
    assert toolctl("graph", "learn", "--from-transcripts", "chat.jsonl", "-r", "r").returncode == 0
    after = toolctl("recommend", "--after", "fetch", "-r", "r")
    assert after.returncode == 0, after.stderr
    drawn = toolctl("graph", "--learned", "-r", "r")
    assert drawn.returncode == 0, drawn.stderr
    assert (
        '"search🔍"' in drawn.stdout and "<U+001B>" in drawn.stdout and "<U+202E>" in drawn.stdout
    )
    assert "\x1b" not in drawn.stdout and "\u202e" not in drawn.stdout
