"""`toolctl serve` as the router of the ``tool-agent`` runtime: another registry's
tool-agent tools call it, and what its /run_tool answers is their result, failures too."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.conftest import Toolctl, write_files
from tests.serve.serve_support import StartServe

SERVED = """
[[tool]]
name = "greets"
description = "Says hi"
[tool.local]
command = ["sh", "-c", "echo hi"]
input = "none"

[[tool]]
name = "fails"
description = "Always fails"
[tool.local]
command = ["sh", "-c", "echo oops >&2; exit 3"]
input = "none"
"""


def client_registry(tmp_path: Path, router: str) -> Path:
    tools = "".join(
        f'[[tool]]\nname = "via-{name}"\ndescription = "through the router"\n'
        f'runtime = "tool-agent"\noptions = {{ router = "{router}", tool_id = "{name}" }}\n\n'
        for name in ("greets", "fails")
    )
    return write_files(tmp_path / "client", {"tools.toml": tools})


def test_a_gateway_result_is_the_result_its_failure_too(
    tmp_path: Path, serve: StartServe, toolctl: Toolctl
) -> None:
    served = write_files(tmp_path / "served", {"tools.toml": SERVED})
    router = serve("--registry", str(served)).url
    registry = client_registry(tmp_path, router)

    ok = toolctl("run", "via-greets", "-r", str(registry))
    assert (ok.returncode, ok.stdout) == (0, "hi\n"), ok.stderr  # the output, not the JSON

    failed = toolctl("run", "via-fails", "-r", str(registry))
    assert failed.returncode == 1, failed.stdout
    assert failed.stderr.splitlines()[-1] == "toolctl: error: the tool failed: exit status 3: oops"

    result = json.loads(toolctl("run", "via-fails", "--json", "-r", str(registry)).stdout)
    assert result["success"] is False and result["transport"] == "tool-agent"
    assert (result["exit_code"], result["error_code"]) == (3, "tool_failed")

    history = toolctl("history", "--tool", "via-fails", "--json")
    assert {call["outcome"] for call in json.loads(history.stdout)["calls"]} == {"failed"}


class _Answers(BaseHTTPRequestHandler):
    """A router answering /run_tool with the JSON named by the call's tool_id."""

    answers: ClassVar[dict[str, object]] = {}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answer = json.dumps(self.answers[body["tool_id"]]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("answer", "code", "expected"),
    [
        # success false decides, whatever else the answer holds
        ({"success": False, "error": "boom", "hint": "x"}, 1, {"error": "boom"}),
        ({"success": False, "error": {"message": "boom"}}, 1, {"error": '{"message": "boom"}'}),
        # what contradicts success is not kept
        (
            {"success": True, "output": "hi", "exit_code": 3, "error_code": "timed_out"},
            0,
            {"output": "hi", "exit_code": 0, "error_code": None},
        ),
        ({"success": False, "exit_code": -1}, 1, {"exit_code": 1}),  # as any failure
        (
            {"success": False, "exit_code": True, "error_code": "x" * 65},
            1,
            {"exit_code": 1, "error_code": "tool_failed"},
        ),
        # no boolean success: an answer, the call's data
        ({"success": "false", "n": 1}, 0, {"data": {"success": "false", "n": 1}}),
    ],
)
def test_a_gateway_answer_of_any_shape(
    tmp_path: Path, toolctl: Toolctl, answer: dict[str, Any], code: int, expected: dict[str, Any]
) -> None:
    _Answers.answers = {"odd": answer}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        router = f"http://127.0.0.1:{server.server_address[1]}"
        registry = write_files(
            tmp_path / "reg",
            {"t.toml": f'[[tool]]\nname = "odd"\nruntime = "tool-agent"\n'
                       f'options = {{ router = "{router}" }}\n'},
        )  # fmt: skip
        ran = toolctl("run", "odd", "--json", "-r", str(registry))
    finally:
        server.shutdown()
        server.server_close()
    assert ran.returncode == code, ran.stderr
    result = json.loads(ran.stdout)
    assert result["success"] is (code == 0)
    for key, value in expected.items():
        assert result.get(key) == value, (key, result)


def test_a_tool_whose_router_is_the_gateway_itself_is_refused_at_once(
    tmp_path: Path, serve: StartServe
) -> None:
    """tool_agent's router port is `serve`'s default: tools imported from tool_agent and
    served with both defaults called the gateway itself, which called itself again (one
    call, a dozen nested, every slot held until the timeout, then 504). The gateway knows
    its own calls: the inner one is refused (409), the outer one fails saying why, at once."""
    import httpx

    from toolctl.processes import free_port

    port = free_port()
    loop = (
        '[[tool]]\nname = "loop"\nruntime = "tool-agent"\ntimeout = 30\n'
        f'options = {{ router = "http://127.0.0.1:{port}", tool_id = "loop" }}\n'
    )
    registry = write_files(tmp_path / "looping", {"tools.toml": loop})
    serve("--registry", str(registry), "--port", str(port))  # (the later --port counts)
    url = f"http://127.0.0.1:{port}"
    answer = httpx.post(f"{url}/run_tool", json={"tool_id": "loop", "params": {}}, timeout=20)
    assert answer.status_code == 200
    result = answer.json()
    assert result["success"] is False
    assert result["error"].startswith(
        "tool_agent router answered HTTP 409: the call to 'loop' came from this gateway"
    ), result
