"""toolctl.transcripts: OpenAI chat JSONL read as sessions of calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolctl.errors import UsageError
from toolctl.transcripts import Call, read_transcripts


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def answer(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


CONVERSATION = {
    "id": "c1",
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "ls",
                "description": "List files",
                "parameters": {"type": "object", "properties": {}},
            },
        },
        {"type": "function", "function": {"name": "cat", "description": "Show a file"}},
    ],
    "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "What is here?"},
        call("a", "ls", {}),
        answer("a", '{"files": ["x.txt"]}'),
        {"role": "user", "content": [{"type": "text", "text": "Show x.txt"}]},
        call("b", "cat", {"file_name": "x.txt"}),
        answer("b", '{"error": "No such file"}'),
        call("c", "cat", {"file_name": "./x.txt"}),
        answer("c", '{"success": true, "output": "hello"}'),
        call("d", "ls", {}),
        {"role": "assistant", "content": "Done."},
    ],
}


def test_calls_carry_the_request_in_force_and_what_their_answer_says() -> None:
    [transcript] = read_transcripts([json.dumps(CONVERSATION)], "chat.jsonl")
    assert transcript.id == "c1" and transcript.where == "chat.jsonl:1"
    assert [t.name for t in transcript.tools] == ["ls", "cat"]
    assert transcript.tools[0].description == "List files"
    assert transcript.calls == (
        Call("ls", {}, "a", "What is here?", True, '{"files": ["x.txt"]}'),
        Call("cat", {"file_name": "x.txt"}, "b", "Show x.txt", False, '{"error": "No such file"}'),
        Call(
            "cat",
            {"file_name": "./x.txt"},
            "c",
            "Show x.txt",
            True,
            '{"success": true, "output": "hello"}',
        ),
        Call("ls", {}, "d", "Show x.txt", None),  # no answer: unknown
    )


@pytest.mark.parametrize(
    ("content", "extra", "success"),
    [
        ("plain text", {}, True),
        ('{"success": false, "output": ""}', {}, False),
        ('{"isError": true, "content": []}', {}, False),
        ('{"error": null, "response": "ok"}', {}, True),  # TrustGraph's shape, no error
        ('{"error": {"type": "x", "message": "y"}}', {}, False),
        ("all fine", {"is_error": True}, False),
        ("[1, 2]", {}, True),
    ],
)
def test_what_counts_as_a_failed_call(content: str, extra: dict[str, Any], success: bool) -> None:
    line = {
        "messages": [
            {"role": "user", "content": "q"},
            call("x", "t", {}),
            {**answer("x", content), **extra},
        ]
    }
    [transcript] = read_transcripts([json.dumps(line)], "f")
    assert transcript.calls[0].success is success


def test_legacy_function_call_and_function_answers() -> None:
    line = {
        "functions": [{"name": "weather", "description": "Weather by city"}],
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "function_call": {"name": "weather", "arguments": '{"city": "Oslo"}'},
            },
            {"role": "function", "name": "weather", "content": '{"success": false}'},
        ],
    }
    [transcript] = read_transcripts([json.dumps(line)], "f")
    assert transcript.tools[0].name == "weather"
    assert transcript.calls == (
        Call("weather", {"city": "Oslo"}, None, "Weather in Oslo?", False, '{"success": false}'),
    )


def test_blank_lines_are_skipped_and_line_numbers_kept() -> None:
    lines = ["\n", json.dumps({"messages": []}) + "\n", "  \n", json.dumps(CONVERSATION) + "\n"]
    found = list(read_transcripts(lines, "t.jsonl"))
    assert [(t.line, len(t.calls)) for t in found] == [(2, 0), (4, 4)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "t.jsonl:2: not JSON"),
        ('{"conversation": []}', 't.jsonl:2: not a conversation: no "messages" list'),
        ('{"messages": ["hi"]}', "t.jsonl:2: message 1 is not an object"),
        (
            '{"messages": [{"role": "assistant", "tool_calls": [{"id": "x"}]}]}',
            "t.jsonl:2: message 1: a tool call without a function name",
        ),
        (
            '{"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}]}',
            "t.jsonl:2: message 1: the arguments of 'f' are not JSON",
        ),
        (
            '{"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}]}',
            "t.jsonl:2: message 1: the arguments of 'f' are not a JSON object",
        ),
        ('{"messages": [], "tools": {"a": 1}}', 't.jsonl:2: "tools" is not a list'),
    ],
)
def test_a_bad_line_is_an_error_naming_origin_and_line(line: str, message: str) -> None:
    lines = [json.dumps({"messages": []}), line]
    with pytest.raises(UsageError) as caught:
        list(read_transcripts(lines, "t.jsonl"))
    assert caught.value.message.startswith(message)
    assert caught.value.exit_code == 2
