"""Sessions against real servers: handshake and revisions, tools/list, tools/call, the
server's own requests (sampling) and progress, on every server and SDK we test with."""

from __future__ import annotations

import os
from typing import Any

import pytest

from toolctl.errors import TransportUnavailable
from toolctl.mcp import MODERN, Progress, ServerError, connect_stdio, map_result


def environ(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def test_probe_lists_and_calls(probe_argv: list[str]) -> None:
    with connect_stdio(probe_argv, timeout=30) as session:
        assert session.protocol_version == "2025-11-25"
        assert session.server_info["name"] == "probe"
        names = [tool["name"] for tool in session.list_tools()]
        assert {"echo", "fail", "hang", "ask_sampling"} <= set(names)
        answer = map_result(session.call_tool("echo", {"text": "héllo"}, 30))
        assert answer.output == "héllo" and not answer.is_error


def test_a_tool_that_raises_is_an_error_result(probe_argv: list[str]) -> None:
    with connect_stdio(probe_argv, timeout=30) as session:
        answer = map_result(session.call_tool("fail", {"message": "boom"}, 30))
    assert answer.is_error
    assert "fail" in answer.output


def test_unknown_tool_is_refused_by_the_server(everything_argv: list[str]) -> None:
    with connect_stdio(everything_argv, timeout=60) as session:
        try:
            answer = map_result(session.call_tool("no-such-tool", {}, 30))
        except ServerError as error:  # SDKs differ: a JSON-RPC error or an isError result
            assert error.exit_code == 1
        else:
            assert answer.is_error


def test_sampling_request_mid_call_is_refused_and_the_call_completes(
    probe_argv: list[str],
) -> None:
    with connect_stdio(probe_argv, timeout=30) as session:
        answer = map_result(session.call_tool("ask_sampling", {"prompt": "hi"}, 30))
    assert answer.output == "sampling refused: toolctl declined sampling: no model answers it here"


def test_progress_reaches_the_callback(probe_argv: list[str]) -> None:
    seen: list[Progress] = []
    with connect_stdio(probe_argv, timeout=30) as session:
        answer = map_result(
            session.call_tool("progress", {"steps": 3}, 30, on_progress=seen.append)
        )
    assert answer.output == "3 steps"
    assert [(p.progress, p.total, p.message) for p in seen] == [
        (1.0, 3.0, "step 1"),
        (2.0, 3.0, "step 2"),
        (3.0, 3.0, "step 3"),
    ]


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-03-26", "2024-11-05"])
def test_an_older_revision_the_server_answers_with_is_accepted(
    probe_argv: list[str], revision: str
) -> None:
    with connect_stdio(
        probe_argv, env=environ(PROBE_ANSWER_VERSION=revision), timeout=30
    ) as session:
        assert session.protocol_version == revision
        assert map_result(session.call_tool("echo", {"text": "x"}, 30)).output == "x"


def test_a_server_that_refuses_initialize_is_reached_statelessly(probe_argv: list[str]) -> None:
    """A 2026-07-28-only server: SDK 2.x serves it; SDK 1.x cannot, which is a clear error."""
    env = environ(PROBE_MODERN_ONLY="1")
    if "mcp2" not in probe_argv[0]:
        with pytest.raises(TransportUnavailable, match="refused initialize: Unsupported protocol"):
            connect_stdio(probe_argv, env=env, timeout=30)
        return
    with connect_stdio(probe_argv, env=env, timeout=30) as session:
        assert session.modern and session.protocol_version == MODERN
        assert "echo" in [tool["name"] for tool in session.list_tools()]
        assert map_result(session.call_tool("echo", {"text": "x"}, 30)).output == "x"


def test_prefer_modern_falls_back_to_initialize_on_a_legacy_server(
    probe_argv: list[str],
) -> None:
    with connect_stdio(probe_argv, timeout=30, prefer_modern=True) as session:
        expected = MODERN if "mcp2" in probe_argv[0] else "2025-11-25"
        assert session.protocol_version == expected
        assert map_result(session.call_tool("echo", {"text": "x"}, 30)).output == "x"


def test_time_server(time_argv: list[str]) -> None:
    with connect_stdio(time_argv, timeout=60) as session:
        assert {"get_current_time", "convert_time"} <= {t["name"] for t in session.list_tools()}
        answer = map_result(session.call_tool("get_current_time", {"timezone": "UTC"}, 30))
    assert not answer.is_error
    assert answer.data["timezone"] == "UTC"


def test_everything_server_content_kinds(everything_argv: list[str]) -> None:
    with connect_stdio(everything_argv, timeout=60) as session:
        tools = {tool["name"]: tool for tool in session.list_tools()}
        assert "echo" in tools
        echo = map_result(session.call_tool("echo", {"message": "hi"}, 30))
        image = map_result(session.call_tool("get-tiny-image", {}, 30))
        structured = map_result(
            session.call_tool("get-structured-content", {"location": "New York"}, 30)
        )
        seen: list[Progress] = []
        long = session.call_tool(
            "trigger-long-running-operation",
            {"duration": 1, "steps": 2},
            30,
            on_progress=seen.append,
        )
    assert echo.output == "Echo: hi"
    assert "[image image/png," in image.output and "iVBOR" not in image.output
    assert image.data["content"][0]["type"] == "image"
    assert set(structured.data) >= {"temperature", "conditions"}
    assert not map_result(long).is_error and len(seen) == 2


def test_results_of_the_probe_image(probe_argv: list[str]) -> None:
    with connect_stdio(probe_argv, timeout=30) as session:
        answer = map_result(session.call_tool("picture", {}, 30))
    content: list[dict[str, Any]] = answer.data["content"]
    assert answer.output.startswith("[image image/png")
    assert content[0]["mimeType"] == "image/png"


def test_tools_list_follows_next_cursor(probe_argv: list[str]) -> None:
    with connect_stdio(probe_argv, timeout=30) as session:
        whole = session.list_tools()
    with connect_stdio(probe_argv, env=environ(PROBE_PAGE_SIZE="2"), timeout=30) as session:
        cursors: list[object] = []
        send = session.transport.request

        def record(message: dict[str, Any], timeout: float) -> dict[str, Any]:
            cursors.append((message.get("params") or {}).get("cursor"))
            return send(message, timeout)

        session.transport.request = record  # type: ignore[method-assign]
        paged = session.list_tools()
    assert paged == whole
    assert cursors == [None, *(str(n) for n in range(2, len(whole), 2))]


def test_calls_from_several_threads_share_one_session(probe_argv: list[str]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with connect_stdio(probe_argv, timeout=30) as session, ThreadPoolExecutor(8) as pool:
        texts = [f"call {n}" for n in range(40)]
        answers = list(pool.map(lambda t: session.call_tool("echo", {"text": t}, 30), texts))
    assert [map_result(answer).output for answer in answers] == texts
