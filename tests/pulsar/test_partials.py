"""Progress over Pulsar: partial responses before the final one, only to a request that asks.

A worker hosting a local tool turns the tool's ``toolctl:progress``/``toolctl:log`` stderr
lines into partial responses; `toolctl run` shows them as the process runner's sink does,
and `mcp serve` sends them on as MCP progress notifications (its pipelined path). A request
without the ``progress`` property (TrustGraph's, an older toolctl's) gets one answer only.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from tests.conftest import Toolctl, write_files
from tests.pulsar.pulsar_support import Project, StartWorker, handler_services
from tests.serve.mcp_clients import stdio_session, texts
from toolctl.pulsar.wire import (
    decode_response,
    encode_log,
    encode_progress,
    encode_request,
    request_properties,
    takes_progress,
)

STEPS = """
import json, sys
text = json.load(sys.stdin)["text"]
print("plain noise", file=sys.stderr, flush=True)
for step in (1, 2, 3):
    print(f"toolctl:progress {step}/3 step {step}", file=sys.stderr, flush=True)
print("toolctl:log info almost done", file=sys.stderr, flush=True)
print(text.upper())
"""

HANDLER = """
import asyncio
from toolctl.pulsar.worker import report_log, report_progress

def counted(config, arguments, user):
    for step in range(arguments["n"]):
        report_progress(step + 1, arguments["n"])
    return f"counted {arguments['n']}"

async def waited(config, arguments, user):
    report_progress(0.5, None, "half")
    await asyncio.sleep(0)
    report_log("warning", "careful")
    return "waited"
"""

PARTIALS = [
    b'{"error": null, "response": "", "end_of_stream": false, '
    b'"progress": {"progress": 1.0, "total": 3.0, "message": "step 1"}}',
    b'{"error": null, "response": "", "end_of_stream": false, '
    b'"progress": {"progress": 2.0, "total": 3.0, "message": "step 2"}}',
    b'{"error": null, "response": "", "end_of_stream": false, '
    b'"progress": {"progress": 3.0, "total": 3.0, "message": "step 3"}}',
    b'{"error": null, "response": "", "end_of_stream": false, '
    b'"log": {"level": "info", "message": "almost done"}}',
]
FINAL = b'{"error": null, "response": "GO", "end_of_stream": true}'


def test_partial_bytes_and_the_request_property() -> None:
    assert encode_progress(1, 3, "a") == (
        b'{"error": null, "response": "", "end_of_stream": false, '
        b'"progress": {"progress": 1, "total": 3, "message": "a"}}'
    )
    assert encode_log("info", "x") == (
        b'{"error": null, "response": "", "end_of_stream": false, '
        b'"log": {"level": "info", "message": "x"}}'
    )
    partial = decode_response(encode_progress(2, None, None))
    assert (partial.progress, partial.text, partial.end_of_stream) == ((2.0, None, None), "", False)
    assert decode_response(encode_log("error", "e")).log == ("error", "e")
    # malformed reports are no reports; a final answer never carries one
    assert (
        decode_response(b'{"end_of_stream": false, "progress": {"progress": "x"}}').progress is None
    )
    assert decode_response(b'{"end_of_stream": false, "log": {"level": 1}}').log is None
    assert decode_response(b'{"response": "a", "progress": {"progress": 1}}').progress is None
    assert takes_progress(request_properties("id", 5, progress=True))
    assert "progress" not in request_properties("id", 5)
    assert not takes_progress({"progress": "yes"})


@pytest.fixture
def steps(toolctl: Toolctl, project: Project) -> Iterator[str]:
    """A local tool reporting three steps, hosted by `worker --tool`; the Pulsar tool's name."""
    suffix = project.suffix
    write_files(
        project.registry,
        {
            "steps.toml": f"""
                [[tool]]
                name = "steps-{suffix}"
                [tool.local]
                command = [{json.dumps(sys.executable)}, "-c", {json.dumps(STEPS)}]
                [[tool.arguments]]
                name = "text"

                [[service]]
                name = "steps-on-pulsar"
                [service.pulsar]
                request_queue = "non-persistent://tg/request/steps-{suffix}"
                response_queue = "non-persistent://tg/response/steps-{suffix}"

                [[tool]]
                name = "remote-steps"
                service = "steps-on-pulsar"
                timeout = 20
                [[tool.arguments]]
                name = "text"
            """
        },
    )
    registry = ("--registry", str(project.registry))
    started = toolctl("worker", "--tool", f"steps-{suffix}", "--detach", *registry)
    assert started.returncode == 0, started.stderr
    yield "remote-steps"
    toolctl("worker", "--tool", f"steps-{suffix}", "--stop")


def test_run_shows_the_progress_of_a_hosted_local_tool(
    toolctl: Toolctl, project: Project, steps: str
) -> None:
    registry = ("--registry", str(project.registry))
    done = toolctl("run", steps, "--arg", "text=go", *registry)
    assert (done.returncode, done.stdout) == (0, "GO\n"), done.stderr
    lines = done.stderr.splitlines()
    assert [line for line in lines if line.startswith("progress ")] == [
        "progress 1/3 step 1",
        "progress 2/3 step 2",
        "progress 3/3 step 3",
    ]
    assert "info: almost done" in lines
    assert "plain noise" not in done.stderr  # the hosted tool's own stderr stays with it
    # -v with JSON events: the start and done events around the same progress lines
    verbose = toolctl(
        "run", steps, "--arg", "text=go", "-v", *registry, env={"TOOLCTL_LOG": "json"}
    )
    assert verbose.returncode == 0, verbose.stderr
    shown = verbose.stderr.splitlines()
    events = [json.loads(line)["event"] for line in shown if line.startswith("{")]
    assert events == ["start", "done"]
    first, last = shown.index("progress 1/3 step 1"), shown.index("progress 3/3 step 3")
    assert shown[0].startswith("{") and first < last < len(shown) - 1
    # --json: the result alone on stdout, progress still on stderr
    as_json = toolctl("run", steps, "--arg", "text=go", "--json", *registry)
    assert json.loads(as_json.stdout)["output"] == "GO"
    assert "progress 2/3 step 2" in as_json.stderr


def _bodies(
    client: Any, request_queue: str, response_queue: str, properties: dict[str, str]
) -> list[bytes]:
    """Send one raw request; every answer body with its id, up to end_of_stream."""
    answers = client.subscribe(response_queue, f"raw-{uuid.uuid4().hex}")
    producer = client.create_producer(request_queue, batching_enabled=False)
    producer.send(encode_request("alice", {}, {"text": "go"}), properties=properties)
    bodies: list[bytes] = []
    while True:
        message = answers.receive(timeout_millis=20_000)
        if message.properties().get("id") != properties["id"]:
            continue
        bodies.append(message.data())
        if json.loads(message.data())["end_of_stream"]:
            return bodies


def test_partials_go_only_to_a_request_that_asks(
    project: Project, steps: str, raw_client: Any
) -> None:
    queues = (
        f"non-persistent://tg/request/steps-{project.suffix}",
        f"non-persistent://tg/response/steps-{project.suffix}",
    )
    # as TrustGraph's ToolServiceClient asks: the first answer is the answer
    assert _bodies(raw_client, *queues, {"id": "plain-1"}) == [FINAL]
    asked = _bodies(raw_client, *queues, {"id": "asks-1", "progress": "1"})
    assert asked == [*PARTIALS, FINAL]
    # a TrustGraph streaming client keeps the non-empty responses: the answer alone
    assert "".join(json.loads(body)["response"] for body in asked) == "GO"


def test_mcp_clients_receive_progress_notifications(project: Project, steps: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def main() -> list[str]:
        async with stdio_session(project.registry) as session:
            result = await session.call_tool(steps, {"text": "go"}, progress_callback=on_progress)
            assert not result.isError
            quiet = await session.call_tool(steps, {"text": "again"})  # no token: no progress
            assert texts(quiet) == ["AGAIN"]
            return list(texts(result))

    assert anyio.run(main) == ["GO"]
    assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


def test_a_service_handler_reports_progress(
    toolctl: Toolctl, project: Project, workers: StartWorker
) -> None:
    write_files(project.root, {"reporting.py": HANDLER})
    services = handler_services(project, "reporting", ("counted", "waited"))
    write_files(project.registry, {"reporting.toml": services})
    registry = ("--registry", str(project.registry))
    workers("counted")
    workers("waited")
    counted = toolctl("run", "counted", "--args", '{"n": 2}', *registry)
    assert (counted.returncode, counted.stdout) == (0, "counted 2\n"), counted.stderr
    assert counted.stderr.splitlines() == ["progress 1/2", "progress 2/2"]
    waited = toolctl("run", "waited", *registry)
    assert (waited.returncode, waited.stdout) == (0, "waited\n"), waited.stderr
    assert waited.stderr.splitlines() == ["progress 0.5 half", "warning: careful"]


def _hosted_sleeper(project: Project, name: str, *, sleeps: int, timeout: int) -> None:
    """Local tool ``name`` sleeping ``sleeps`` s (its timeout ``timeout``), for `worker
    --tool` to host, and `remote-NAME`'s way to it over Pulsar (timeout 50)."""
    write_files(project.registry, {f"{name}.toml": f"""
        [[tool]]
        name = "{name}"
        timeout = {timeout}
        [tool.local]
        command = [{json.dumps(sys.executable)}, "-c", "import time; time.sleep({sleeps})"]
        input = "none"

        [[service]]
        name = "{name}-on-pulsar"
        [service.pulsar]
        request_queue = "non-persistent://tg/request/{name}"
        response_queue = "non-persistent://tg/response/{name}"

        [[tool]]
        name = "remote-{name}"
        service = "{name}-on-pulsar"
        timeout = 50
        """})  # fmt: skip


def test_a_hosted_tool_past_its_timeout_is_a_call_that_timed_out(
    toolctl: Toolctl, project: Project
) -> None:
    """A tool `worker --tool` hosts, killed past its own descriptor's timeout, reached the
    caller as a tool that failed (exit 1, `tool_failed`) with advice for the worker's host
    (`run --timeout`) that could not help the caller."""
    name = f"slow-{uuid.uuid4().hex[:8]}"
    _hosted_sleeper(project, name, sleeps=30, timeout=1)
    registry = ("--registry", str(project.registry))
    started = toolctl("worker", "--tool", name, "--detach", *registry)
    assert started.returncode == 0, started.stderr
    try:
        done = toolctl("run", f"remote-{name}", "--json", *registry)
    finally:
        toolctl("worker", "--tool", name, "--stop")
    assert done.returncode == 124, done.stderr
    result = json.loads(done.stdout)
    assert result["error_code"] == "timed_out"
    assert f"tool '{name}' ran past its 1 s timeout" in result["error"]
    assert "its worker's descriptor" in result["error"]


def test_a_hosted_tool_cut_short_by_its_workers_stop_is_recorded_with_the_signal(
    toolctl: Toolctl, project: Project
) -> None:
    """SIGTERM to a `worker --tool` past its drain: its row of the call said 130 (SIGINT's)
    for SIGTERM and SIGHUP alike, and the caller recorded the tool as `failed` (exit 1),
    which `graph learn` and `stats` count against the tool on every restart."""
    import subprocess
    import time

    name = f"long-{uuid.uuid4().hex[:8]}"
    _hosted_sleeper(project, name, sleeps=40, timeout=60)
    registry = ("--registry", str(project.registry))
    started = toolctl("worker", "--tool", name, "--detach", *registry)
    assert started.returncode == 0, started.stderr
    call = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "run", f"remote-{name}", *registry],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        time.sleep(3)  # the call runs at the worker
        assert toolctl("worker", "--tool", name, "--stop").returncode == 0
        _, err = call.communicate(timeout=40)
    finally:
        call.kill()
    assert call.returncode == 5, err
    rows = json.loads(toolctl("history", "--json").stdout)["calls"]
    worker_rows = [r for r in rows if r["caller"] == "worker"]
    assert [(r["outcome"], r["exit_code"]) for r in worker_rows] == [("interrupted", 143)]
    callers = [r for r in rows if r["tool"] == f"remote-{name}"]
    assert [r["outcome"] for r in callers] == ["unavailable"]
