"""`toolctl serve`'s REST routes through httpx: shapes, every error status, limits, tokens."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate

from tests.conftest import Toolctl
from tests.serve.serve_support import StartServe, wait_for


def test_health_tools_and_run(serve: StartServe) -> None:
    url = serve().url
    health = httpx.get(f"{url}/health").json()
    assert health["status"] == "ok" and health["tools"] == 7
    table = httpx.get(f"{url}/tools").json()
    assert set(table) == {"backend_runtimes", "groups", "tools"}
    assert {"backend_runtime": "local", "name": "Local subprocess", "tool_count": 7} in table[
        "backend_runtimes"
    ]
    assert table["groups"] == [
        {
            "group_id": "texty",
            "name": "texty",  # its title, else its name (as a tool's), never its description
            "description": "Text tools",
            "tool_ids": ["echo", "data"],
            "usage_order": ["data", "echo"],
        }
    ]
    echo = next(t for t in table["tools"] if t["tool_id"] == "echo")
    assert echo == {
        "tool_id": "echo",
        "name": "echo",
        "category": "text",
        "backend_runtime": "local",
        "group_ids": ["texty"],
        "state": "ready",
    }
    ran = httpx.post(f"{url}/run_tool", json={"tool_id": "echo", "params": {"text": "hi"}})
    assert ran.status_code == 200
    assert ran.json()["success"] is True and ran.json()["output"] == "hi"
    assert httpx.post(f"{url}/run_tool", json={"tool_id": "data"}).json()["data"] == {"words": 2}


MCP_TOOL = f"""
[[service]]
name = "far"
description = "An MCP server nobody connects to here"
[service.mcp]
command = ["{sys.executable}", "-c", "pass"]

[[tool]]
name = "far.echo"
description = "An MCP tool"
service = "far"
[tool.mcp]
name = "echo"
"""


def test_tools_names_each_runtime_as_the_table_of_runtimes_does(
    serve: StartServe, registry: Path
) -> None:
    """tool_agent's four runtimes always, in its order; then the others tools use, by their
    display names (an MCP tool's runtime is "MCP server", not "mcp")."""
    (registry / "mcp.toml").write_text(MCP_TOOL)
    table = httpx.get(f"{serve().url}/tools").json()
    assert table["backend_runtimes"] == [
        {"backend_runtime": "local", "name": "Local subprocess", "tool_count": 7},
        {"backend_runtime": "container", "name": "Container (docker/podman)", "tool_count": 0},
        {"backend_runtime": "http", "name": "HTTP service", "tool_count": 0},
        {"backend_runtime": "pulsar", "name": "Apache Pulsar service", "tool_count": 0},
        {"backend_runtime": "mcp", "name": "MCP server", "tool_count": 1},
    ]


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"tool_id": "fail"}, 200, "exit status 1: broken on purpose"),
        ({"tool_id": "ecko", "params": {}}, 404, "did you mean: echo"),
        ({"tool_id": "echo", "params": {"text": 3}}, 422, "argument 'text'"),
        ({"tool_id": "missing-exe"}, 503, "not found"),
        ({"tool_id": "slow"}, 504, "timeout"),
        ({"tool_id": "echo", "params": [1]}, 400, "params must be a JSON object"),
        ({"params": {}}, 400, "tool_id"),
    ],
)
def test_run_tool_statuses(serve: StartServe, body: object, status: int, error: str) -> None:
    answer = httpx.post(f"{serve().url}/run_tool", json=body, timeout=30)
    assert answer.status_code == status
    assert answer.json()["success"] is False and error in answer.json()["error"]


def test_registry_refused_is_409(serve: StartServe, registry: Path) -> None:
    url = serve("--strict").url
    (registry / "broken.toml").write_text("[[tool]]\nname = 'x'\n")  # no runtime: an error

    def refused() -> bool:
        answer = httpx.post(f"{url}/run_tool", json={"tool_id": "echo", "params": {"text": "a"}})
        return answer.status_code == 409

    assert wait_for(refused), "a --strict server kept calling tools in a broken registry"


def test_a_look_alike_is_refused_as_run_refuses_it(
    serve: StartServe, registry: Path, toolctl: Toolctl
) -> None:
    """`Echo` beside `echo`: `/run_tool` said 404 not_found (exit_code 4) where `toolctl
    run` says 3 name_conflict, naming the earlier holder; serving.md says they match."""
    (registry / "zz.toml").write_text(
        '[[tool]]\nname = "Echo"\n[tool.local]\ncommand = ["true"]\ninput = "none"\n'
    )
    ran = toolctl("run", "Echo", "--json", "-r", str(registry))
    url = serve().url
    answer = httpx.post(f"{url}/run_tool", json={"tool_id": "Echo", "params": {}}, timeout=30)
    body = answer.json()
    assert (answer.status_code, body["error_code"], body["exit_code"]) == (409, "name_conflict", 3)
    assert (ran.returncode, json.loads(ran.stdout)["error_code"]) == (3, "name_conflict")
    assert "is confusable with 'echo'" in body["error"]


def test_recommend_and_openapi(serve: StartServe, registry: Path, toolctl: Toolctl) -> None:
    url = serve().url
    got = httpx.get(f"{url}/recommend", params={"action": "start", "hops": 1})
    expected = toolctl(
        "recommend", "--action", "start", "--hops", "1", "--json", "--registry", str(registry)
    )
    assert got.status_code == 200 and got.json() == json.loads(expected.stdout)
    assert httpx.get(f"{url}/recommend", params={"action": "nope"}).status_code == 404
    assert httpx.get(f"{url}/recommend", params={"action": "start", "hops": "x"}).status_code == 422
    assert httpx.get(f"{url}/recommend").status_code == 422
    validate(httpx.get(f"{url}/openapi.json").json())


def test_recommend_tells_only_of_the_tools_served(serve: StartServe) -> None:
    """`serve --tool echo`: /recommend keeps the actions (no tool of theirs runs) but lists
    no tool and no Call edge of a tool not served (it told of every tool in force)."""
    url = serve("--tool", "echo").url
    got = httpx.get(f"{url}/recommend", params={"action": "start", "hops": 1}).json()
    assert sorted(a["name"] for a in got["actions"]) == ["later", "start"]
    assert [t["name"] for t in got["tools"]] == ["echo"]
    assert {e["to"] for e in got["edges"] if e["kind"] == "call"} == {"echo"}


def test_body_limit(serve: StartServe) -> None:
    url = serve().url
    big = {"tool_id": "echo", "params": {"text": "x" * (1024 * 1024)}}
    assert httpx.post(f"{url}/run_tool", json=big).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is counted as the body arrives
        for _ in range(20):
            yield b"x" * 65536

    assert httpx.post(f"{url}/run_tool", content=chunks()).status_code == 413


def call_hang(url: str, pidfile: Path) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the server is stopped under it
        httpx.post(
            f"{url}/run_tool",
            json={"tool_id": "hang", "params": {"pidfile": str(pidfile)}},
            timeout=60,
        )


def test_full_queue_is_503(serve: StartServe, tmp_path: Path) -> None:
    url = serve("--concurrency", "1", "--queue", "0").url
    pidfile = tmp_path / "hang.pid"
    threading.Thread(target=call_hang, args=(url, pidfile), daemon=True).start()
    assert wait_for(pidfile.exists)
    answer = httpx.post(f"{url}/run_tool", json={"tool_id": "echo", "params": {"text": "a"}})
    assert answer.status_code == 503 and "retry" in answer.json()["error"]
    # shed load shows where it is watched, never under the name the request gave
    httpx.post(f"{url}/run_tool", json={"tool_id": "nothing-such", "params": {}})
    from prometheus_client.parser import text_string_to_metric_families

    families = {f.name: f for f in text_string_to_metric_families(httpx.get(f"{url}/metrics").text)}
    [shed] = [s for s in families["toolctl_server_calls_shed"].samples if s.name.endswith("_total")]
    assert shed.value == 2 and shed.labels == {}


def test_token(serve: StartServe, toolctl: Toolctl) -> None:
    refused = toolctl("serve", "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 2 and "--token-env" in refused.stderr
    unset = toolctl("serve", "--token-env", "TOOLCTL_TEST_UNSET_TOKEN", "--port", "0")
    assert unset.returncode == 2 and "not set" in unset.stderr
    short = toolctl(
        "serve", "--host", "0.0.0.0", "--token-env", "T", "--port", "0", env={"T": "abc"}
    )  # beyond loopback, a token that can be guessed is none
    assert short.returncode == 2 and "a token of 3 characters can be guessed" in short.stderr
    url = serve("--token-env", "SERVE_TOKEN", env={"SERVE_TOKEN": "s3cret"}).url
    assert httpx.get(f"{url}/tools").status_code == 401
    assert httpx.get(f"{url}/tools", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert httpx.get(f"{url}/tools", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    refused_mcp = httpx.post(f"{url}/mcp", json={})
    assert refused_mcp.status_code == 401
    assert refused_mcp.json() == {  # what an MCP client reads: a JSON-RPC error
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "missing or wrong bearer token"},
    }
    assert httpx.get(f"{url}/tools").json()["error"] == "missing or wrong bearer token"
    assert httpx.get(f"{url}/health").status_code == 200


def test_foreign_origin_and_host(serve: StartServe) -> None:
    url = serve().url
    evil = {"Origin": "http://evil.example"}
    assert httpx.get(f"{url}/tools", headers=evil).status_code == 403
    assert httpx.post(f"{url}/mcp", json={}, headers=evil).status_code == 403
    port = url.rsplit(":", 1)[1]
    same = {"Origin": f"http://localhost:{port}"}
    assert httpx.get(f"{url}/tools", headers=same).status_code == 200
    other_port = {"Origin": "http://localhost:6274"}  # another site on this machine
    assert httpx.get(f"{url}/tools", headers=other_port).status_code == 403
    https = {"Origin": f"https://localhost:{port}"}
    assert httpx.get(f"{url}/tools", headers=https).status_code == 403
    assert httpx.get(f"{url}/tools", headers={"Host": "evil.example"}).status_code == 421


def test_one_log_line_per_call_without_arguments(serve: StartServe) -> None:
    served = serve()
    secret = "do-not-log-this"
    httpx.post(f"{served.url}/run_tool", json={"tool_id": "echo", "params": {"text": secret}})
    httpx.post(f"{served.url}/run_tool", json={"tool_id": "fail"})
    served.stop()
    text = served.log.read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert [(line["tool"], line["status"]) for line in lines] == [
        ("echo", "ok"),
        ("fail", "failed"),
    ]
    assert secret not in text


def test_serves_without_uvloop_and_httptools(serve: StartServe, tmp_path: Path) -> None:
    """Both are dependencies, but a server where they do not import falls back to asyncio's
    loop and h11, answering the same."""
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for name in ("uvloop", "httptools"):
        (blocked / f"{name}.py").write_text("raise ImportError('blocked by the test')\n")
    served = serve(env={"PYTHONPATH": str(blocked)})
    answer = httpx.post(
        f"{served.url}/run_tool", json={"tool_id": "echo", "params": {"text": "hi"}}
    )
    assert answer.status_code == 200 and answer.json()["output"] == "hi"
    mapped = Path(f"/proc/{served.child.pid}/maps").read_text()
    assert "uvloop" not in mapped and "httptools" not in mapped


def test_an_mcp_servers_session_outlives_each_call_the_gateway_makes(
    serve: StartServe, registry: Path, tmp_path: Path
) -> None:
    """The gateway's calls to a stdio MCP server share one session: the sweep after each
    call (which ends what a call left running) spares the server the runner keeps open.
    It killed it, so every second call failed with 'exited with code -9' (503)."""
    from tests.mcp.conftest import PROBE

    pids = tmp_path / "probe.pids"
    (registry / "probe.toml").write_text(
        f"""
[[service]]
name = "probe"
[service.mcp]
command = ["{sys.executable}", "{PROBE}"]
env = {{ PROBE_PID_FILE = "{pids}" }}

[[tool]]
name = "probe.echo"
description = "Echo"
service = "probe"
parameters = {{ type = "object", properties = {{ text = {{ type = "string" }} }} }}
[tool.mcp]
name = "echo"
"""
    )
    url = serve().url
    started = []
    for text in ("a", "b", "c", "d"):
        ran = httpx.post(
            f"{url}/run_tool", json={"tool_id": "probe.echo", "params": {"text": text}}, timeout=60
        )
        assert (ran.status_code, ran.json()["output"]) == (200, text), ran.text
        started.append(pids.read_text().split()[0])
    assert len(set(started)) == 1  # one server for the four calls, never restarted

    # the service's definition changes (a secret rotated, a command replaced): the session
    # opened for the old one is not used again
    moved = tmp_path / "moved.pids"
    text = (registry / "probe.toml").read_text().replace(str(pids), str(moved))
    (registry / "probe.toml").write_text(text)
    assert wait_for(lambda: _answers(url, "e") and moved.exists(), seconds=30)
    assert moved.read_text().split()[0] != started[0]


def _answers(url: str, text: str) -> bool:
    ran = httpx.post(
        f"{url}/run_tool", json={"tool_id": "probe.echo", "params": {"text": text}}, timeout=60
    )
    return ran.status_code == 200 and ran.json()["output"] == text


def test_allow_origin_answers_a_browsers_cors(serve: StartServe) -> None:
    """A page on an --allow-origin origin can call the server: its preflight is answered
    (without a token, which a preflight never carries), and each answer names the origin,
    so the browser lets the page read it (and the MCP session id). Others get neither."""
    app = "http://app.example:3000"
    url = serve("--allow-origin", app, "--token-env", "T", env={"T": "s3cret"}).url
    preflight = httpx.options(
        f"{url}/mcp",
        headers={
            "Origin": app,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == app
    assert "Authorization" in preflight.headers["access-control-allow-headers"]
    called = httpx.post(
        f"{url}/run_tool",
        json={"tool_id": "echo", "params": {"text": "hi"}},
        headers={"Origin": app, "Authorization": "Bearer s3cret"},
    )
    assert called.status_code == 200 and called.headers["access-control-allow-origin"] == app
    unauthorized = httpx.get(f"{url}/tools", headers={"Origin": app})
    assert unauthorized.status_code == 401  # told, and readable by the page
    assert unauthorized.headers["access-control-allow-origin"] == app
    evil = httpx.options(
        f"{url}/mcp",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert evil.status_code in (401, 403) and "access-control-allow-origin" not in evil.headers


def test_allow_origin_takes_an_origin_and_refuses_null_and_star(
    serve: StartServe, toolctl: Toolctl
) -> None:
    """`null` (what any sandboxed page or file sends) and `*` would let every page in;
    an origin is taken as a browser sends it (lower case, no trailing slash)."""
    for given in ("null", "*", "ftp://x"):
        refused = toolctl("serve", "--port", "0", "--allow-origin", given)
        assert refused.returncode == 2 and "not an origin" in refused.stderr, refused.stderr
    url = serve("--allow-origin", "http://App.Example:3000/").url
    seen = httpx.get(f"{url}/tools", headers={"Origin": "http://app.example:3000"})
    assert seen.status_code == 200
    assert seen.headers["access-control-allow-origin"] == "http://app.example:3000"
