"""Parsing and validating one registry file: definitions, lines, problems."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_files
from toolctl.registry.loader import ParsedFile, parse_file, walk

TOOLS = """
    # two tools
    [[tool]]
    name = "word-count"
    description = "Count words"
    [tool.local]
    command = ["wc", "-w"]
    [[tool.arguments]]
    name = "text"
    type = "string"

    [[tool]]
    name = "shout"
    [tool.local]
    command = ["echo", "{text}"]
    input = "none"
    [[tool.arguments]]
    name = "text"
    [[tool.arguments]]
    name = "times"
    type = "integer"
    default = 1
"""


def parse(tmp_path: Path, text: str) -> ParsedFile:
    write_files(tmp_path, {"r/file.toml": text})
    return parse_file(str(tmp_path / "r/file.toml"))


def test_definitions_carry_their_header_line(tmp_path: Path) -> None:
    parsed = parse(tmp_path, TOOLS)
    assert [(d.name, d.line) for d in parsed.definitions] == [("word-count", 2), ("shout", 11)]
    assert parsed.problems == []


def test_schema_is_derived_once_from_arguments(tmp_path: Path) -> None:
    shout = parse(tmp_path, TOOLS).definitions[1]
    assert shout.data["schema"] == {
        "type": "object",
        "properties": {"text": {"type": "string"}, "times": {"type": "integer", "default": 1}},
        "required": ["text"],
        "additionalProperties": False,
    }
    assert shout.data["runtime"] == "local"


def test_parameters_json_schema_is_taken_as_given(tmp_path: Path) -> None:
    parsed = parse(
        tmp_path,
        """
        [[tool]]
        name = "t"
        parameters = { type = "object", properties = { n = { type = "integer", minimum = 1 } } }
        [tool.local]
        command = ["true"]
        """,
    )
    schema = parsed.definitions[0].data["schema"]
    assert schema["properties"]["n"] == {"type": "integer", "minimum": 1}


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    parsed = parse(tmp_path, '[[tool]]\nname = "x"\n[tool.local\ncommand = ["a"]\n')
    (problem,) = parsed.problems
    assert problem.line == 3
    assert problem.skipped
    assert "TOML syntax error" in problem.message


def test_validation_error_names_entry_and_field_path(tmp_path: Path) -> None:
    parsed = parse(
        tmp_path,
        """
        [[tool]]
        name = "ok"
        [tool.local]
        command = ["true"]

        [[tool]]
        name = "bad"
        [tool.local]
        command = ["true"]
        [[tool.arguments]]
        name = "n"
        type = "float"
        """,
    )
    assert [d.name for d in parsed.definitions] == ["ok"]
    (problem,) = parsed.problems
    assert problem.line == 12  # the field, not the [[tool]] header (line 6)
    assert problem.message.startswith("tool 'bad': arguments.0.type:")


def test_missing_runtime_is_reported(tmp_path: Path) -> None:
    parsed = parse(tmp_path, '[[tool]]\nname = "nothing"\n')
    (problem,) = parsed.problems
    assert "missing runtime" in problem.message


@pytest.mark.parametrize(
    "body, expected",
    [
        ('name = "a b"\n[tool.local]\ncommand = ["x"]', "name"),
        ('name = "t"\n[tool.local]\ncommand = []', "local.command"),
        ('name = "t"\n[tool.local]\ncommand = ["x"]\n[tool.http]\nurl = "http://h"', "exactly one"),
        ('name = "t"\n[tool.http]\nurl = "ftp://h"', "absolute http"),
        ('name = "t"\nsurprise = 1\n[tool.local]\ncommand = ["x"]', "surprise"),
    ],
)
def test_invalid_tools(tmp_path: Path, body: str, expected: str) -> None:
    parsed = parse(tmp_path, "[[tool]]\n" + body + "\n")
    assert parsed.definitions == []
    assert expected in parsed.problems[0].message


def test_trustgraph_spellings_are_aliases(tmp_path: Path) -> None:
    parsed = parse(
        tmp_path,
        """
        [[service]]
        id = "joke-service"
        [service.pulsar]
        request-queue = "non-persistent://tg/request/joke"
        response-queue = "non-persistent://tg/response/joke"
        config-params = [{ name = "style", required = true }]
        """,
    )
    (service,) = parsed.definitions
    assert service.name == "joke-service"
    assert service.data["pulsar"]["request_queue"] == "non-persistent://tg/request/joke"
    assert service.data["pulsar"]["config_params"] == [{"name": "style", "required": True}]


def test_malformed_topic_is_an_error(tmp_path: Path) -> None:
    parsed = parse(
        tmp_path,
        """
        [[service]]
        name = "s"
        [service.pulsar]
        request_queue = "tg/request/joke"
        response_queue = "non-persistent://tg/response/joke"
        """,
    )
    assert "malformed Pulsar topic" in parsed.problems[0].message
    assert "pulsar.request_queue" in parsed.problems[0].message


def test_unknown_table_and_single_table(tmp_path: Path) -> None:
    parsed = parse(tmp_path, '[tools]\nx = 1\n[tool]\nname = "x"\n')
    messages = [p.message for p in parsed.problems]
    assert any("unknown table 'tools'" in m for m in messages)
    assert any("write [[tool]]" in m for m in messages)


def test_walk_orders_files_bytewise_and_roots_in_path_order(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/b.toml": "", "a/B.toml": "", "a/sub/a.toml": "", "b/a.toml": ""})
    (tmp_path / "a/.hidden.toml").write_text("")
    (tmp_path / "a/notes.txt").write_text("")
    files, dirs = walk((tmp_path / "a", tmp_path / "missing", tmp_path / "b"))
    names = [Path(f.path).relative_to(tmp_path).as_posix() for f in files]
    assert names == ["a/B.toml", "a/b.toml", "a/sub/a.toml", "b/a.toml"]
    assert [f.root for f in files] == [0, 0, 0, 2]
    assert (str(tmp_path / "missing"), -1, -1) in dirs


def test_a_bom_is_read_past_and_a_byte_that_is_not_utf8_is_placed(tmp_path: Path) -> None:
    """A UTF-8 BOM (Windows editors save one) was a TOML syntax error at line 1, column 1,
    invisible in the editor; a Latin-1 byte was told at line 1 by its byte offset."""
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b'\xef\xbb\xbf[[tool]]\nname = "bom"\n[tool.local]\ncommand = ["true"]\n')
    parsed = parse_file(str(bom))
    assert [d.name for d in parsed.definitions] == ["bom"] and parsed.problems == []
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'[[tool]]\nname = "l"\ndescription = "caf\xe9"\n')
    (problem,) = parse_file(str(latin)).problems
    assert (problem.line, problem.message) == (
        3,
        "not UTF-8: byte 0xe9 at line 3, column 19; save it as UTF-8",
    )
