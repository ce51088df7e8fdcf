"""A finding about a field points at that field's line (what CI shows next to the diff),
not at the entry's ``[[tool]]`` header; anything the scan cannot place stays at the header."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Toolctl, write_files
from toolctl.registry.keylines import key_line

TWO = '''\
[[tool]]
name = "first"
description = """
timeout = "inside a multi-line string"
"""
timeout = "soon"

[tool.local]
command = ["true"]

[[tool.arguments]]
name = "a"
type = "string"

[[tool.arguments]]
name = "b"
"type" = "strin"

[tool.arguments.schema]
minimum = "x"

[[tool]]
name = "second"
local.command = 5
'''


def test_each_key_of_an_entry_has_its_line() -> None:
    assert key_line(TWO, "tool", 1, ["timeout"]) == 6  # not the one inside the string
    assert key_line(TWO, "tool", 1, ["local", "command", 0]) == 9
    assert key_line(TWO, "tool", 1, ["local", "cwd"]) == 8  # missing: its table's header
    assert key_line(TWO, "tool", 1, ["arguments", 0, "type"]) == 13
    assert key_line(TWO, "tool", 1, ["arguments", 1, "type"]) == 17  # a quoted key
    assert key_line(TWO, "tool", 1, ["arguments", 1, "schema", "minimum"]) == 20
    assert key_line(TWO, "tool", 1, ["arguments", 2, "type"]) == 1  # no such: the header
    assert key_line(TWO, "tool", 1, []) == 1  # the entry as a whole
    assert key_line(TWO, "tool", 22, ["local", "command"]) == 24  # a dotted key
    assert key_line(TWO, "tool", 22, ["timeout"]) == 22  # not the first entry's


def test_check_points_at_the_field(toolctl: Toolctl, tmp_path: Path) -> None:
    write_files(tmp_path, {"bad.toml": TWO})
    done = toolctl("check", "bad.toml")
    assert done.returncode == 3
    lines = [line.split(": error")[0] for line in done.stdout.splitlines() if "error" in line]
    assert lines == ["bad.toml:6", "bad.toml:17", "bad.toml:19", "bad.toml:24"], done.stdout


@given(st.text(alphabet='[]."\'= \n#abtool:,{}0', max_size=200), st.lists(
    st.one_of(st.sampled_from(["tool", "a", "b", "local"]), st.integers(0, 3)), max_size=4
))  # fmt: skip
def test_any_text_gives_a_line_of_the_file(text: str, loc: list[str | int]) -> None:
    count = len(text.splitlines())
    for header in (1, max(1, count)):
        assert 1 <= key_line(text, "tool", header, loc) <= max(1, count)


STRINGS = '''\
[[tool]]
name = "q"
description = 'quote: """ here'  # a literal string: no multi-line string opens
notes = "escaped \\"\\"\\" too"  # """ in a comment opens none either
timeout = 0

[[tool]]
name = "r"
description = """
[[tool]]
timeout = "inside the string"
"""
timeout = "ten"
tool.local.command = 5
'''


def test_strings_and_comments_are_read_as_toml_reads_them() -> None:
    assert key_line(STRINGS, "tool", 1, ["timeout"]) == 5
    assert key_line(STRINGS, "tool", 7, ["timeout"]) == 13  # the one after the string
    assert key_line(STRINGS, "tool", 7, ["tool"]) == 14  # dotted under an unknown key


def test_u2028_is_no_line_break(toolctl: Toolctl, tmp_path: Path) -> None:
    """TOML's lines end at LF: a U+2028 in a comment moved every finding a line down."""
    write_files(
        tmp_path,
        {
            "reg/t.toml": '# a\u2028b\n[[tool]]\nname = "t"\n\ntimeout = 0\n[tool.local]\ncommand = ["true"]\n'
        },
    )
    done = toolctl("check", "-r", "reg")
    assert "reg/t.toml:5: error: tool 't': timeout:" in done.stdout, done.stdout


def test_a_header_inside_a_string_is_no_header(toolctl: Toolctl, tmp_path: Path) -> None:
    write_files(tmp_path, {"reg/t.toml": STRINGS.replace("tool.local.command = 5\n", "")})
    done = toolctl("check", "-r", "reg")
    lines = [line.split(": error")[0] for line in done.stdout.splitlines() if "error" in line]
    assert lines == ["reg/t.toml:4", "reg/t.toml:5", "reg/t.toml:13"], done.stdout


def test_a_bom_before_a_byte_that_is_not_utf8_keeps_its_place(tmp_path: Path) -> None:
    from toolctl.registry.loader import parse_file

    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'\xef\xbb\xbf[[tool]]\nname = "nb"\ndescription = "caf\xe9 ok"\n')
    (problem,) = parse_file(str(bad)).problems
    assert problem.message == "not UTF-8: byte 0xe9 at line 3, column 19; save it as UTF-8"
