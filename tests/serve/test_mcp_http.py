"""`toolctl serve`'s /mcp driven by the official MCP SDK client over streamable HTTP."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest
from mcp.shared.exceptions import McpError

from tests.conftest import Toolctl, write_files
from tests.serve.mcp_clients import Changes, cancel_next_call, http_session, texts
from tests.serve.serve_support import StartServe, alive, wait_for


def test_list_call_fail_timeout_cancel(serve: StartServe, tmp_path: Path) -> None:
    url = serve().url
    pidfile = tmp_path / "hang.pid"

    async def main() -> None:
        async with http_session(url) as session:
            names = [t.name for t in (await session.list_tools()).tools]
            assert names == ["annotated", "data", "echo", "fail", "hang", "missing-exe", "slow"]
            ok = await session.call_tool("echo", {"text": "over http"})
            assert texts(ok) == ["over http"]
            failed = await session.call_tool("fail", {})
            assert failed.isError and "broken on purpose" in texts(failed)[0]
            late = await session.call_tool("slow", {})
            assert late.isError and "timeout" in texts(late)[0]
            with pytest.raises(McpError):
                await session.call_tool("nope", {})
            await cancel_next_call(session, "hang", {"pidfile": str(pidfile)}, pidfile.exists)
            pid = int(pidfile.read_text())
            assert wait_for(lambda: not alive(pid)), "the cancelled call's process survived"

    anyio.run(main)


def test_a_session_ended_by_its_client_logs_no_error(serve: StartServe) -> None:
    """The SDK logs "Error in standalone SSE writer" when a client ends its session (the
    stream it writes to is closed): a normal end, not an error line in the server's log."""
    served = serve()

    async def main() -> None:
        async with http_session(served.url) as session:
            await session.list_tools()

    for _ in range(2):
        anyio.run(main)
    assert served.stop() == 0
    assert "Error" not in served.log.read_text(), served.log.read_text()


def test_list_changed_after_register(
    serve: StartServe, registry: Path, toolctl_process: Toolctl, tmp_path: Path
) -> None:
    url = serve().url
    changes = Changes()
    new = write_files(
        tmp_path / "new",
        {"n.toml": '[[tool]]\nname = "late"\n[tool.local]\ncommand = ["true"]\ninput = "none"\n'},
    )

    async def main() -> None:
        async with http_session(url, changes) as session:
            await session.list_tools()
            done = await anyio.to_thread.run_sync(
                lambda: toolctl_process(
                    "register", str(new / "n.toml"), "--registry", str(registry)
                )
            )
            assert done.returncode == 0, done.stderr
            with anyio.fail_after(30):
                await changes.seen.wait()
            assert "late" in [t.name for t in (await session.list_tools()).tools]

    anyio.run(main)


def test_lenient_initialize_and_bad_messages(serve: StartServe) -> None:
    url = serve().url
    headers = {"Accept": "application/json, text/event-stream"}
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "",
            "capabilities": {},
            "clientInfo": {"name": "f", "version": "0"},
        },
    }
    answer = httpx.post(f"{url}/mcp", json=hello, headers=headers)
    assert answer.status_code == 200
    assert '"protocolVersion":"2025-11-25"' in answer.text
    session = {**headers, "Mcp-Session-Id": answer.headers["mcp-session-id"]}
    for body in (b"not json", b"[]", b'{"jsonrpc":"2.0"}', b'{"id":1,"method":7}', b"\xff\xfe"):
        bad = httpx.post(
            f"{url}/mcp", content=body, headers={**session, "Content-Type": "application/json"}
        )
        assert 400 <= bad.status_code < 500 or bad.status_code == 202, (body, bad.status_code)
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert httpx.post(f"{url}/mcp", json=ping, headers=session).status_code == 200
    assert httpx.get(f"{url}/health").status_code == 200


def test_tools_that_do_not_run_are_not_listed_on_mcp_but_are_on_rest(
    serve: StartServe, tmp_path: Path
) -> None:
    """`/mcp` lists what `run` runs, and refuses a call of the rest as it does; tool_agent's
    `/tools` still shows each tool with its state, and `/run_tool` refuses it (422)."""
    from tests.serve.test_mcp_stdio import STATES

    registry = write_files(tmp_path / "states", {"tools.toml": STATES})
    url = serve("--registry", str(registry)).url

    async def main() -> tuple[list[str], bool]:
        async with http_session(url) as session:
            names = [t.name for t in (await session.list_tools()).tools]
            return names, (await session.call_tool("trial", {})).isError

    assert anyio.run(main) == (["live"], True)
    rest = {t["tool_id"]: t["state"] for t in httpx.get(f"{url}/tools").json()["tools"]}
    assert rest["trial"] == "staging" and rest["old"] == "deprecated"
    refused = httpx.post(f"{url}/run_tool", json={"tool_id": "trial", "params": {}})
    assert refused.status_code == 422, refused.text


def test_mcp_add_sends_the_headers_a_server_asks_for(
    serve: StartServe, toolctl: Toolctl, tmp_path: Path
) -> None:
    """`mcp add NAME --url URL -H 'Authorization: Bearer ...'` (curl's and `claude mcp
    add`'s form), against a server that wants its token: the tools are imported with the
    token given, the registry holds a ${env:...} reference in its place, and a later run
    sends the header read from the environment."""
    secret = "s3cret-" + "f00d" * 6
    url = serve("--token-env", "SERVE_TOKEN", env={"SERVE_TOKEN": secret}).url + "/mcp"
    (tmp_path / "mine").mkdir()
    added = toolctl(
        "mcp", "add", "up", "--url", url, "-H", f"Authorization: Bearer {secret}",
        "--tool", "echo", "-r", "mine",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "imported tool 'up.echo'" in added.stderr
    written = "".join(p.read_text() for p in (tmp_path / "mine").rglob("*.toml"))
    assert secret not in written + added.stdout + added.stderr
    assert "${env:UP_AUTHORIZATION}" in written and "set UP_AUTHORIZATION" in added.stderr
    ran = toolctl(
        "run", "up.echo", "-a", "text=through", "-r", "mine", env={"UP_AUTHORIZATION": secret}
    )
    assert (ran.returncode, ran.stdout) == (0, "through\n"), ran.stderr
    # a header without its name, or with a line break, is refused, never echoed
    for bad, told in ((secret, "has no NAME:"), (f"X-Key: a\r\n{secret}", "line break")):
        done = toolctl("mcp", "add", "up2", "--url", url, "-H", bad, "-r", "mine")
        assert done.returncode == 2 and told in done.stderr, done.stderr
        assert secret not in done.stderr
    stdio = toolctl("mcp", "add", "up3", "-H", "X-A: b", "-r", "mine", "--", "true")
    assert stdio.returncode == 2 and "--header goes with --url" in stdio.stderr
