"""A Pulsar tool declaring ``output = "mcp"`` keeps its content blocks on every path: a
single `run`, the pipelined `run --batch`, and the pipelined MCP door (`mcp serve`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import types

from tests.conftest import Toolctl, write_files
from tests.pulsar.pulsar_support import Project, StartWorker, handler_services
from tests.serve.mcp_clients import stdio_session

PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
BLOCKS = [
    {"type": "text", "text": "a red pixel"},
    {"type": "image", "data": PIXEL, "mimeType": "image/png"},
]
HANDLER = f"""
def picture(config, arguments, user):
    return {BLOCKS!r}

def refusal(config, arguments, user):
    return {{"content": [{{"type": "text", "text": "no picture today"}}], "isError": True}}
"""


def _registry(project: Project) -> Path:
    write_files(project.root, {"pictures.py": HANDLER})
    services = handler_services(
        project, "pictures", ("picture", "refusal"), 'output = "mcp"\ntimeout = 10'
    )
    write_files(project.registry, {"pictures.toml": services})
    return project.registry


def test_run_and_batch_read_the_blocks(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    registry = ("--registry", str(_registry(project)))
    workers("picture")
    workers("refusal")
    single = json.loads(toolctl("run", "picture", "--json", *registry).stdout)
    assert single["mcp"] == {"content": BLOCKS}
    lines = tmp_path / "calls.jsonl"
    lines.write_text("{}\n{}\n")
    batch = toolctl("run", "picture", "--batch", str(lines), "--concurrency", "2", *registry)
    assert batch.returncode == 0, batch.stderr
    results = [json.loads(line) for line in batch.stdout.splitlines()]
    assert [result["mcp"] for result in results] == [{"content": BLOCKS}] * 2
    assert [result["output"] for result in results] == [single["output"]] * 2
    # an isError result is a failure on both paths
    refused = json.loads(toolctl("run", "refusal", "--json", *registry).stdout)
    batch = toolctl("run", "refusal", "--batch", str(lines), *registry)
    (first, second) = [json.loads(line) for line in batch.stdout.splitlines()]
    assert (refused["success"], first["success"], second["success"]) == (False, False, False)
    assert first["error"] == refused["error"] == "no picture today"


def test_mcp_serve_passes_the_blocks_on(project: Project, workers: StartWorker) -> None:
    registry = _registry(project)
    workers("picture")
    workers("refusal")

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with stdio_session(registry) as session:
            return (
                await session.call_tool("picture", {}),
                await session.call_tool("refusal", {}),
            )

    picture, refusal = anyio.run(main)
    assert [block.model_dump(exclude_none=True) for block in picture.content] == BLOCKS
    assert not picture.isError
    assert refusal.isError
    assert [block.model_dump(exclude_none=True) for block in refusal.content] == [
        {"type": "text", "text": "no picture today"}
    ]


def test_worker_tool_passes_a_hosted_tools_blocks_on(toolctl: Toolctl, project: Project) -> None:
    """`worker --tool` of a local tool declaring ``output = "mcp"`` answers with its
    content blocks, which a Pulsar tool declaring it too reads intact."""
    suffix = project.suffix
    printer = f"import json; print(json.dumps({BLOCKS!r}))"
    write_files(
        project.registry,
        {
            "printer.toml": f"""
                [[tool]]
                name = "printer-{suffix}"
                output = "mcp"
                [tool.local]
                command = [{json.dumps(sys.executable)}, "-c", {json.dumps(printer)}]

                [[service]]
                name = "printer-on-pulsar"
                [service.pulsar]
                request_queue = "non-persistent://tg/request/printer-{suffix}"
                response_queue = "non-persistent://tg/response/printer-{suffix}"

                [[tool]]
                name = "remote-printer"
                service = "printer-on-pulsar"
                output = "mcp"
                timeout = 20
                parameters = {{ type = "object" }}
            """
        },
    )
    registry = ("--registry", str(project.registry))
    started = toolctl("worker", "--tool", f"printer-{suffix}", "--detach", *registry)
    assert started.returncode == 0, started.stderr
    try:
        done = toolctl("run", "remote-printer", "--json", *registry)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["mcp"] == {"content": BLOCKS}
    finally:
        toolctl("worker", "--tool", f"printer-{suffix}", "--stop")
