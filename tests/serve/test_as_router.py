"""`toolctl serve` as the router of the ``tool-agent`` runtime: another registry's
tool-agent tools call it, and what its /run_tool answers is their result, failures too."""

from __future__ import annotations

import json
from pathlib import Path

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
