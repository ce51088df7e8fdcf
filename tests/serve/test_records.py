"""What `toolctl serve` records: history rows per door and session, /metrics, traceparent."""

from __future__ import annotations

import json
import os
import stat
import urllib.request
from pathlib import Path

import anyio
import httpx

from tests.conftest import Toolctl
from tests.records.promtool import check_metrics
from tests.serve.mcp_clients import http_session, texts
from tests.serve.serve_support import StartServe, wait_for

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_serve_records_rest_and_mcp_calls(serve: StartServe, toolctl: Toolctl) -> None:
    url = serve().url
    answer = httpx.post(
        f"{url}/run_tool",
        json={"tool_id": "echo", "params": {"text": "rest"}},
        headers={"traceparent": PARENT},
        timeout=30,
    )
    assert answer.status_code == 200 and answer.json()["success"]
    assert httpx.post(f"{url}/run_tool", json={"tool_id": "fail"}, timeout=30).status_code == 200

    async def main() -> None:
        async with http_session(url) as session:
            assert texts(await session.call_tool("echo", {"text": "mcp"})) == ["mcp"]

    anyio.run(main)

    def recorded() -> list[dict[str, object]]:
        found: list[dict[str, object]] = json.loads(toolctl("history", "--json").stdout)["calls"]
        return found

    assert wait_for(lambda: len(recorded()) == 3), recorded()  # written within a second
    mcp, fail, rest = recorded()
    assert (rest["caller"], rest["tool"], rest["trace_id"]) == (
        "serve",
        "echo",
        "0af7651916cd43dd8448eb211c80319c",
    )
    assert (fail["caller"], fail["outcome"]) == ("serve", "failed")
    assert mcp["caller"] == "mcp" and mcp["call_id"]
    # a digest of the Mcp-Session-Id the server gave the client, never the id, with which
    # another client could act in its session; and the history is its owner's alone
    assert str(mcp["session"]).startswith("mcp-") and len(str(mcp["session"])) == 28
    history = Path(os.environ["XDG_STATE_HOME"]) / "toolctl/history.sqlite3"
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        exposition = response.read()
    text = exposition.decode()
    assert (
        'toolctl_tool_calls_total{caller="serve",outcome="failed",runtime="local",tool="fail"} 1.0'
        in text
    )
    assert (
        'toolctl_tool_calls_total{caller="mcp",outcome="ok",runtime="local",tool="echo"} 1.0'
        in text
    )
    assert 'toolctl_tool_calls_in_flight{runtime="local",tool="echo"} 0.0' in text
    checked = check_metrics(exposition)
    assert checked.returncode == 0, checked.stdout + checked.stderr
