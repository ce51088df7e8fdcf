"""recommend, graph, show GROUP and the graph lint in check, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Toolctl, write_files

TOOLS = "".join(
    f'[[tool]]\nname = "{name}"\n[tool.local]\ncommand = ["true"]\n\n'
    for name in ("word-count", "char-stats", "checksum", "reverse", "shout", "slugify")
)
TOOLKIT = """
[[action]]
name = "read-input"
description = "Take in the text the user gave"
tools = [{ tool = "word-count", score = 0.9 }]
next = [{ action = "inspect-text", score = 0.9 }, { action = "tell-a-joke", score = 0.3 }]

[[action]]
name = "inspect-text"
description = "Look at the text before changing it"
tools = [{ tool = "word-count", score = 0.9 }, { tool = "char-stats", score = 0.7 },
         { tool = "checksum", score = 0.4 }]
next = [{ action = "transform-text", score = 0.8 }, { action = "publish", score = 0.5 }]

[[action]]
name = "transform-text"
description = "Change the text"
tools = [{ tool = "reverse", score = 0.8 }, { tool = "shout", score = 0.6 }]
next = [{ action = "publish", score = 0.9 }]

[[action]]
name = "publish"
description = "Make the result presentable"
tools = [{ tool = "slugify" }, { tool = "checksum", score = 0.6 }]

[[action]]
name = "tell-a-joke"
description = "Lighten the mood"
next = [{ action = "read-input", score = 0.5 }]

[[group]]
name = "text-tools"
description = "Everything for plain text"
tools = ["word-count", "reverse", "shout", "char-stats", "slugify"]
usage_order = ["word-count", "reverse", "shout"]
usage_example = "count first, then transform"

[[group]]
name = "integrity"
description = "Check that a text arrived intact"
tools = ["word-count", "checksum"]
usage_order = ["checksum", "word-count"]
usage_example = "checksum on both ends"
"""


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    return write_files(tmp_path / "reg", {"tools.toml": TOOLS, "toolkit.toml": TOOLKIT})


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr + result.stdout


def test_recommend_prints_actions_and_tools_as_tables(registry: Path, toolctl: Toolctl) -> None:
    result = toolctl("recommend", "--action", "read-input", "--hops", "2", "-r", str(registry))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "ACTION          HOPS  PATH                                          DESCRIPTION",
        "read-input      0     read-input                                    "
        "Take in the text the user gave",
        "inspect-text    1     read-input -> inspect-text                    "
        "Look at the text before changing it",
        "publish         2     read-input -> inspect-text -> publish         "
        "Make the result presentable",
        "transform-text  2     read-input -> inspect-text -> transform-text  Change the text",
        "",
        "TOOL        CALLED BY                 SCORE  RUNTIME",
        "char-stats  inspect-text              0.7    local",
        "checksum    publish                   0.6    local",
        "reverse     transform-text            0.8    local",
        "shout       transform-text            0.6    local",
        "slugify     publish                   1      local",
        "word-count  inspect-text, read-input  0.9    local",
    ]
    assert result.stderr == ""


def test_recommend_json_is_the_documented_shape_and_byte_stable(
    registry: Path, toolctl: Toolctl
) -> None:
    args = ("recommend", "-a", "read-input", "--hops", "3", "--json", "-r", str(registry))
    first, second = toolctl(*args), toolctl(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    data = json.loads(first.stdout)
    assert set(data) == {"actions", "tools", "edges"}
    publish = next(a for a in data["actions"] if a["name"] == "publish")
    # hop distance 2, but the best path (lowest score 0.8, not 0.5) takes three hops
    assert publish == {
        "name": "publish",
        "hops": 2,
        "path": ["read-input", "inspect-text", "transform-text", "publish"],
    }
    checksum = next(t for t in data["tools"] if t["name"] == "checksum")
    assert checksum == {"name": "checksum", "called_by": ["publish"], "score": 0.6}
    assert {"from": "inspect-text", "to": "publish", "kind": "next", "score": 0.5} in data["edges"]
    assert not any(e["to"] == "tell-a-joke" for e in data["edges"])
    assert [a["name"] for a in data["actions"]] == sorted(a["name"] for a in data["actions"])
    same = toolctl(
        "recommend", "-a", "read-input", "--hops", "3", "--format", "json", "-r", str(registry)
    )
    assert same.stdout == first.stdout


def test_recommend_draws_dot_and_mermaid_with_scores(registry: Path, toolctl: Toolctl) -> None:
    dot = toolctl("recommend", "-a", "read-input", "--hops", "1", "-f", "dot", "-r", str(registry))
    assert dot.returncode == 0, dot.stderr
    assert dot.stdout.startswith("digraph toolkit {\n")
    assert '"action:read-input" -> "action:inspect-text" [label="0.9", style=solid];' in dot.stdout
    assert '"action:inspect-text" -> "tool:char-stats" [label="0.7", style=dashed];' in dot.stdout
    assert "penwidth=2" in dot.stdout  # the start action stands out
    mermaid = toolctl(
        "recommend", "-a", "read-input", "--hops", "1", "-f", "mermaid", "-r", str(registry)
    )
    assert mermaid.returncode == 0
    assert mermaid.stdout.startswith("flowchart LR\n")
    assert "  a_read_hinput -->|0.9| a_inspect_htext\n" in mermaid.stdout
    assert "  a_inspect_htext -.->|0.7| t_char_hstats\n" in mermaid.stdout


def test_unknown_start_actions(registry: Path, toolctl: Toolctl) -> None:
    some = toolctl("recommend", "-a", "read-inptu", "-a", "publish", "--json", "-r", str(registry))
    assert some.returncode == 0
    assert some.stderr == (
        "toolctl: warning: action 'read-inptu' not found; did you mean: read-input?; skipped\n"
    )
    assert [a["name"] for a in json.loads(some.stdout)["actions"]] == ["publish"]
    none = toolctl("recommend", "-a", "read-inptu", "-a", "nothing", "-r", str(registry))
    assert none.returncode == 4
    assert none.stdout == ""
    assert "warning: action 'nothing' not found; skipped" in none.stderr
    assert "error: action 'read-inptu' not found; did you mean: read-input?" in none.stderr
    no_traceback(none)


@pytest.mark.parametrize(
    "option",
    [["--threshold", "1.5"], ["--threshold", "-0.1"], ["--threshold", "nan"], ["--hops", "-1"], []],
)
def test_bad_options_exit_2(registry: Path, toolctl: Toolctl, option: list[str]) -> None:
    start = ["-a", "read-input"] if option else []
    result = toolctl("recommend", *start, *option, "-r", str(registry))
    assert result.returncode == 2
    assert result.stdout == ""
    no_traceback(result)


def test_recommend_sees_an_action_edited_in_place(registry: Path, toolctl: Toolctl) -> None:
    args = ("recommend", "-a", "publish", "--json", "-r", str(registry))
    before = json.loads(toolctl(*args).stdout)
    assert [t["name"] for t in before["tools"]] == ["checksum", "slugify"]
    path = registry / "toolkit.toml"
    stat = path.stat()
    path.write_text(
        path.read_text().replace('{ tool = "slugify" }', '{ tool = "slugify", score = 0.1 }')
    )
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    after = json.loads(toolctl(*args).stdout)
    assert [t["name"] for t in after["tools"]] == ["checksum"]


def test_graph_draws_the_whole_toolkit_or_one_group(registry: Path, toolctl: Toolctl) -> None:
    whole = toolctl("graph", "-r", str(registry))
    assert whole.returncode == 0, whole.stderr
    assert '"action:tell-a-joke" -> "action:read-input" [label="0.5", style=solid];' in whole.stdout
    assert '"group:integrity" -> "tool:checksum" [style=dotted, arrowhead=none];' in whole.stdout

    narrow = toolctl("graph", "--group", "integrity", "--json", "-r", str(registry))
    assert narrow.returncode == 0, narrow.stderr
    data = json.loads(narrow.stdout)
    assert [a["name"] for a in data["actions"]] == ["inspect-text", "publish", "read-input"]
    assert data["tools"] == [
        {"name": "checksum", "runtime": "local"},
        {"name": "word-count", "runtime": "local"},
    ]
    assert data["groups"] == [{"name": "integrity", "tools": ["checksum", "word-count"]}]
    assert {"from": "inspect-text", "to": "publish", "kind": "next", "score": 0.5} in data["edges"]
    assert all(e["to"] in {"checksum", "word-count"} for e in data["edges"] if e["kind"] == "call")

    mermaid = toolctl("graph", "-f", "mermaid", "-g", "text-tools", "-r", str(registry))
    assert "  g_text_htools -.- t_word_hcount\n" in mermaid.stdout

    missing = toolctl("graph", "--group", "integrty", "-r", str(registry))
    assert missing.returncode == 4
    assert "group 'integrty' not found; did you mean: integrity?" in missing.stderr


def test_show_group_lists_tools_in_usage_order_with_the_example(
    registry: Path, toolctl: Toolctl
) -> None:
    result = toolctl("show", "integrity", "-r", str(registry))
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "group integrity  (reg/toolkit.toml:37)\n"
        "  name           integrity\n"
        "  description    Check that a text arrived intact\n"
        "  tools          1. checksum\n"
        "                 2. word-count\n"
        "  usage_example  checksum on both ends\n"
    )
    text = toolctl("show", "text-tools", "-r", str(registry)).stdout
    assert "3. shout\n                 -  char-stats\n                 -  slugify\n" in text
    listed = toolctl("list", "groups", "-r", str(registry))
    assert "integrity" in listed.stdout


def test_check_lints_the_graph(tmp_path: Path, toolctl: Toolctl) -> None:
    write_files(
        tmp_path / "reg",
        {
            "tools.toml": TOOLS,
            "graph.toml": """
                [[action]]
                name = "entry"
                next = [{ action = "middle" }, { action = "ghost" }]

                [[action]]
                name = "middle"
                tools = [{ tool = "word-count", score = 1.5 }, { tool = "phantom" }]

                [[action]]
                name = "alone"
                next = [{ action = "alone" }]

                [[group]]
                name = "g"
                tools = ["word-count", "nowhere"]
                """,
        },
    )
    result = toolctl("check", "-r", "reg")
    assert result.returncode == 3
    lines = result.stdout.splitlines()
    # each at the line of the edge or list it is about, not the [[action]] header
    assert "reg/graph.toml:3: error: action 'entry' leads to unknown action 'ghost'" in lines
    assert "reg/graph.toml:7: error: action 'middle' calls unknown tool 'phantom'" in lines
    assert (
        "reg/graph.toml:7: error: action 'middle': call edge to 'word-count' has score 1.5, "
        "outside [0, 1]"
    ) in lines
    assert "reg/graph.toml:15: error: group 'g' names unknown tool 'nowhere'" in lines
    isolated = [line for line in lines if "isolated" in line]
    assert isolated == [
        "reg/graph.toml:9: warning: action 'alone' is isolated: no action leads to it and it "
        "calls no tool and leads nowhere; add tools = [...] or next = [...], or remove it"
    ]


def test_check_is_quiet_about_a_normal_toolkit(registry: Path, toolctl: Toolctl) -> None:
    result = toolctl("check", "-r", str(registry))
    assert result.returncode == 0, result.stdout
    assert result.stdout == ""
    assert "0 error(s), 0 warning(s)" in result.stderr
