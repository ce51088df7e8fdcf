"""The old HTTP+SSE transport against real servers (the probe on the official SDK 1.x and 2.x,
the TypeScript reference server): the transport itself, and a config that names an SSE
server imported, pinned, run and checked live through the CLI."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomli_w

from tests.conftest import Toolctl
from toolctl.errors import TimedOut
from toolctl.mcp import Progress, ProtocolError, map_result
from toolctl.mcp.sse import connect_remote, connect_sse

from .conftest import free_port


def test_probe_over_sse(probe_sse_url: str) -> None:
    with connect_sse(probe_sse_url, timeout=30) as session:
        assert session.protocol_version in ("2025-11-25", "2025-06-18")
        assert {"echo", "fail", "hang"} <= {tool["name"] for tool in session.list_tools(30)}
        assert map_result(session.call_tool("echo", {"text": "hé"}, 30)).output == "hé"
        assert map_result(session.call_tool("fail", {"message": "boom"}, 30)).is_error
        seen: list[Progress] = []
        session.call_tool("progress", {"steps": 3}, 30, on_progress=seen.append)
        assert [p.progress for p in seen] == [1, 2, 3]
        # the server asks us for sampling mid-call: our refusal travels back as a POST
        sampled = map_result(session.call_tool("ask_sampling", {"prompt": "x"}, 30))
        assert (
            sampled.output
            == "sampling refused: toolctl declined sampling: no model answers it here"
        )
        with pytest.raises(TimedOut):
            session.call_tool("hang", {"seconds": 30}, 1)


def test_everything_over_sse(everything_sse_url: str) -> None:
    with connect_sse(everything_sse_url, timeout=30) as session:
        assert map_result(session.call_tool("echo", {"message": "hi"}, 30)).output == "Echo: hi"


def test_a_url_that_does_not_say_falls_back_to_sse(probe_sse_url: str) -> None:
    """Streamable HTTP first; the SSE endpoint refuses a POST with a 4xx, so the old
    transport is tried, as the specification's backwards compatibility section says."""
    with connect_remote(probe_sse_url, timeout=30) as session:
        assert type(session.transport).__name__ == "SseTransport"
        assert map_result(session.call_tool("echo", {"text": "x"}, 30)).output == "x"


@pytest.fixture
def hostile_sse() -> Iterator[str]:
    """An SSE endpoint that names a message endpoint on another host."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b"event: endpoint\ndata: http://elsewhere.invalid/messages\n\n")
            self.wfile.flush()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/sse"
    server.shutdown()


def test_an_endpoint_on_another_origin_is_refused(hostile_sse: str) -> None:
    with pytest.raises(ProtocolError, match="another origin"):
        connect_sse(hostile_sse, headers={"Authorization": "Bearer x"}, timeout=10)


def test_an_sse_server_in_a_config_imports_pins_runs_and_checks_live(
    toolctl: Toolctl, tmp_path: Path, probe_sse_url: str
) -> None:
    token = "TESTSECRET0a1b2c3d4e5f6g7h8"
    config = {
        "mcpServers": {
            "probe": {"type": "sse", "url": f"{probe_sse_url}?token={token}"},
            "guess": {"url": probe_sse_url},  # no type: found out when it runs
            "broken": {"args": ["no command"]},
        }
    }
    (tmp_path / ".mcp.json").write_text(json.dumps(config))
    reg = str(tmp_path / "reg")
    done = toolctl("import", "mcp-config", str(tmp_path / ".mcp.json"), "-r", reg)
    assert done.returncode == 3  # 'broken' is listed; the others are imported
    assert "server 'broken': neither 'command'" in done.stderr
    written = (tmp_path / "reg/services/probe.toml").read_text()
    assert token not in written and "?token=${env:PROBE_TOKEN}" in written
    env = {"PROBE_TOKEN": token}
    for service in ("probe", "guess"):
        imported = toolctl("import", "mcp", service, "-r", reg, "--tool", "echo", env=env)
        assert imported.returncode == 0, imported.stderr
        ran = toolctl("run", f"{service}.echo", "-r", reg, "--arg", "text=over sse", env=env)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip() == "over sse"
    live = toolctl("check", "--live", "-r", reg, env=env)
    assert live.returncode == 0, live.stdout + live.stderr
    assert "offers" in live.stdout  # the probe's other tools, not imported
    missing = toolctl("run", "probe.echo", "-r", reg, "--arg", "text=x")
    assert missing.returncode == 2 and "PROBE_TOKEN is not set" in missing.stderr


def test_a_secret_in_the_url_path_never_shows_in_an_error(
    toolctl: Toolctl, tmp_path: Path, probe_sse_url: str
) -> None:
    """Zapier-style URLs carry the key in the path: messages show *** in its place."""
    secret = "sk-ak-TOPSECRET0123456789abcdef"
    dead = f"http://127.0.0.1:{free_port()}"
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg/s.toml").write_text(
        tomli_w.dumps(
            {
                "service": [
                    {"name": "down", "mcp": {"url": dead + "/mcp/${env:ZAP}/sse"}},
                    {"name": "wrong", "mcp": {"url": probe_sse_url + "/${env:ZAP}"}},
                ],
                "tool": [
                    {"name": "down.t", "service": "down", "mcp": {"name": "t"}},
                    {"name": "wrong.t", "service": "wrong", "mcp": {"name": "t"}},
                ],
            }
        )
    )
    for tool in ("down.t", "wrong.t"):
        done = toolctl("run", tool, "-r", str(tmp_path / "reg"), env={"ZAP": secret})
        assert done.returncode == 5, done.stderr
        assert "TOPSECRET" not in done.stderr and "/***" in done.stderr, done.stderr
