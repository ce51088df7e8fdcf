"""`toolctl serve` and `toolctl mcp serve` against the library they front, in one run.

Standalone: needs only what the venv has. It starts the embedded pulsar-lite broker and a
toolctl worker hosting a trivial handler (as bench/pulsar_client.py does), then measures:

(a) REST throughput: ``POST /run_tool`` of the Pulsar tool over ``--concurrency`` keep-alive
    connections against `toolctl serve --concurrency N` (a subprocess), from two load
    generators: ``wrk`` (compiled, Debian's package; installed by scripts/install-wrk.sh if
    missing; a Lua script posts and checks every answer) for ``--wrk-seconds``, the headline,
    since it leaves the cores to the server; and a few lines of asyncio in this process making
    exactly ``--calls`` calls, every answer checked. calls/s of each, against (b) the
    library's own batch of ``--calls`` calls in this process with the same concurrency; the
    ratio (a)/(b) (target: at least 0.5). The same server with its run history off
    (TOOLCTL_HISTORY=0) beside it: the ratio is what the history costs. A bare Starlette
    app on the same uvicorn stack, answering /run_tool without calling anything, is
    measured by both generators too: the ceiling this HTTP stack sets on these cores.
    With ``--baseline DIR`` the same server from another checkout is measured as well.
    Rounds alternate; figures are medians.
(c) MCP ``tools/call`` over stdio through the official SDK client against `toolctl mcp
    serve`, one call at a time; p50, against (d) a direct library call with a warm runner;
    the ratio (c)/(d) (target: at most 2).
(e) ``tools/list`` of registries of 1,000 and 10,000 local tools through the SDK client:
    median time and size; the 10,000/1,000 time ratio (linear: about 10). Beside it the
    server alone (a bare JSON-RPC client on the pipes) and the SDK's own parse of such an
    answer with no server at all: the SDK client grows worse than linearly by itself (its
    pydantic parse of 10,000 tools), toolctl's server does not.
(f) the serve process's RSS after 100 calls, after 10,000, and after the rounds of (a) (it
    grows over the first few thousand calls, allocator and client buffers warming, then
    stays flat).

Usage::

    python bench/serve.py [--calls 1000] [--concurrency 16] [--rounds 3] [--mcp-calls 300]
                          [--wrk-seconds 2] [--baseline ../main]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from pulsar_client import HANDLER, REGISTRY, SERVICE, running_worker
from timing import report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolctl.processes import free_port  # noqa: E402
from toolctl.processes.ready import read_report  # noqa: E402
from toolctl.pulsar import broker  # noqa: E402
from toolctl.registry.index import Registry  # noqa: E402
from toolctl.settings import Settings  # noqa: E402


def library_batch(settings: Settings, lines: list[str], concurrency: int) -> float:
    """calls/s of the library's own ``--batch`` (``toolctl.calls.batch``) over the Pulsar tool."""
    from toolctl.calls import batch

    registry = Registry.open(settings)
    started = time.perf_counter()
    results = list(batch(settings, registry, SERVICE, lines, concurrency=concurrency, timeout=30))
    elapsed = time.perf_counter() - started
    assert all(r.success for r in results), [r for r in results if not r.success][:1]
    return len(results) / elapsed


def rest_batch(url: str, calls: int, concurrency: int) -> float:
    """calls/s of ``calls`` POST /run_tool over ``concurrency`` keep-alive connections, every
    answer checked. The client is a few lines of asyncio: httpx's own pool, sync or async,
    tops out near 100 requests/s at this concurrency on these machines (a bare Starlette
    app measures the same), which would measure the client instead of the server."""
    import asyncio
    from urllib.parse import urlsplit

    where = urlsplit(url)
    failures: list[str] = []

    async def connection(numbers: Iterator[int]) -> None:
        reader, writer = await asyncio.open_connection(where.hostname, where.port)
        for n in numbers:
            body = json.dumps({"tool_id": SERVICE, "params": {"n": n}}).encode()
            writer.write(
                b"POST /run_tool HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            answer = json.loads(await reader.readexactly(length))
            if not head.startswith(b"HTTP/1.1 200") or answer.get("output") != str(n):
                failures.append(f"{head.splitlines()[0]!r} {answer}")
        writer.close()

    async def main() -> float:
        numbers = iter(range(calls))
        started = time.perf_counter()
        await asyncio.gather(*(connection(numbers) for _ in range(concurrency)))
        return time.perf_counter() - started

    elapsed = asyncio.run(main())
    if failures:
        raise SystemExit(f"{len(failures)} REST calls failed, e.g. {failures[0]}")
    return calls / elapsed


WRK_SCRIPT = """
-- POST /run_tool with a fresh n each time; an answer that is not 200 with
-- "success":true counts as an error (wrk counts socket errors itself)
local n = 0
errors = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function request()
  n = n + 1
  local body = '{"tool_id":"TOOL","params":{"n":' .. n .. '}}'
  return wrk.format("POST", "/run_tool", {["Content-Type"] = "application/json"}, body)
end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"success":true', 1, true) then
    errors = errors + 1
  end
end
function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do bad = bad + thread:get("errors") end
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d\\n", summary.requests, summary.duration,
    bad + e.connect + e.read + e.write + e.timeout + e.status))
end
""".replace("TOOL", SERVICE)


def find_wrk() -> str | None:
    """wrk, installed by scripts/install-wrk.sh (Debian's package) if it is missing."""
    if shutil.which("wrk") is None:
        script = ROOT / "scripts" / "install-wrk.sh"
        subprocess.run(["bash", str(script)], stdout=subprocess.DEVNULL, check=False)
    return shutil.which("wrk")


def wrk_batch(wrk: str, script: Path, url: str, seconds: int, concurrency: int) -> float:
    """calls/s of wrk posting /run_tool for ``seconds`` over ``concurrency`` connections
    (one wrk thread: it needs a fraction of a core), every answer checked."""
    command = [wrk, "-t1", f"-c{concurrency}", f"-d{seconds}s", "-s", str(script)]
    done = subprocess.run([*command, f"{url}/run_tool"], capture_output=True, text=True)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"wrk failed: {done.stderr.strip() or done.stdout.strip()}")
    requests, micros, errors = (int(x) for x in line.split()[1:])
    if errors:
        raise SystemExit(f"{errors} of {requests} REST calls from wrk failed")
    return requests / (micros / 1e6)


@contextmanager
def running_serve(
    registry: Path,
    pulsar_url: str,
    concurrency: int,
    tree: Path = ROOT,
    extra_env: dict[str, str] | None = None,
) -> Iterator[tuple[str, int]]:
    """`toolctl serve` of the checkout ``tree`` (its package first on the path)."""
    ready = registry.parent / f"serve-{tree.name}-{len(extra_env or {})}.ready"
    ready.unlink(missing_ok=True)
    port = free_port()
    command = [sys.executable, "-m", "toolctl", "serve", "--port", str(port)]
    command += ["--ready-file", str(ready)]
    command += ["--registry", str(registry), "--pulsar-url", pulsar_url]
    command += ["--concurrency", str(concurrency), "--queue", "4096"]
    env = {**os.environ, "PYTHONPATH": str(tree), **(extra_env or {})}
    child = subprocess.Popen(command, cwd=tree, env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while read_report(ready) is not True:
            if child.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("toolctl serve did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}", child.pid
    finally:
        child.terminate()
        child.wait(timeout=30)


FLOOR_APP = """
import json, sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
async def run_tool(request):
    body = json.loads(await request.body())
    answer = {"success": True, "output": str(body["params"]["n"])}
    return Response(json.dumps(answer, separators=(",", ":")), media_type="application/json")
app = Starlette(routes=[Route("/run_tool", run_tool, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


@contextmanager
def running_floor() -> Iterator[str]:
    """A bare Starlette app on uvicorn answering /run_tool without calling anything: what
    this HTTP stack costs per request on this machine, the ceiling for (a)."""
    port = free_port()
    child = subprocess.Popen([sys.executable, "-c", FLOOR_APP, str(port)])
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.post(f"http://127.0.0.1:{port}/run_tool", json={"params": {"n": 0}})
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise SystemExit("the floor app did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        child.terminate()
        child.wait(timeout=10)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def mcp_session(registry: Path, *extra: str) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolctl", "mcp", "serve", "--registry", str(registry), *extra],
        env=dict(os.environ),
    )
    return stdio_client(params, errlog=open(os.devnull, "w"))


def mcp_call_p50(registry: Path, pulsar_url: str, calls: int) -> float:
    async def main() -> float:
        async with (
            mcp_session(registry, "--pulsar-url", pulsar_url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            samples = []
            for n in range(calls + 20):
                started = time.perf_counter()
                result = await session.call_tool(SERVICE, {"n": n})
                elapsed = time.perf_counter() - started
                assert not result.isError and result.content[0].text == str(n)  # type: ignore[union-attr]
                if n >= 20:
                    samples.append(elapsed)
            return statistics.median(samples)

    return anyio.run(main)


def library_call_p50(settings: Settings, calls: int) -> float:
    """p50 of ``toolctl.calls.Caller.call`` by name, its runner kept warm between calls."""
    from toolctl.calls import Caller

    samples = []
    with Caller(settings, Registry.open(settings)) as caller:
        for n in range(calls + 20):
            started = time.perf_counter()
            result = caller.call(SERVICE, {"n": n})
            elapsed = time.perf_counter() - started
            assert result.success and result.output == str(n)
            if n >= 20:
                samples.append(elapsed)
    return statistics.median(samples)


def age(registry: Path) -> None:
    """An hour old: a file changed within the last seconds is re-read on every lookup."""
    for path in registry.iterdir():
        os.utime(path, (time.time() - 3600, time.time() - 3600))


def big_registry(directory: Path, tools: int) -> Path:
    registry = directory / f"registry-{tools}"
    registry.mkdir()
    per_file = 500
    for start in range(0, tools, per_file):
        text = "".join(
            f'[[tool]]\nname = "tool-{n:05d}"\ndescription = "Tool number {n}"\n'
            f'[tool.local]\ncommand = ["true"]\n[[tool.arguments]]\nname = "text"\n\n'
            for n in range(start, min(tools, start + per_file))
        )
        (registry / f"tools-{start // per_file:03d}.toml").write_text(text)
    age(registry)
    return registry


def tools_list(registry: Path, repeat: int = 7) -> tuple[float, int, int]:
    async def main() -> tuple[float, int, int]:
        async with mcp_session(registry) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            samples, size, count = [], 0, 0
            for _ in range(repeat + 1):
                started = time.perf_counter()
                listed = await session.list_tools()
                samples.append(time.perf_counter() - started)
                size = len(listed.model_dump_json(by_alias=True, exclude_none=True))
                count = len(listed.tools)
            return statistics.median(samples[1:]), size, count

    return anyio.run(main)


def listing_of(tools: int) -> dict[str, Any]:
    """A tools/list result of ``tools`` tools, in the shape the server sends."""
    return {
        "tools": [
            {
                "name": f"tool-{n:05d}",
                "description": f"Tool number {n}",
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                    "additionalProperties": False,
                },
            }
            for n in range(tools)
        ]
    }


def dumps_time(tools: int, repeat: int = 7) -> float:
    """The stdlib's json.dumps of a listing of ``tools`` tools: what linear looks like here."""
    listing = listing_of(tools)
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        json.dumps(listing)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def sdk_parse_time(tools: int, repeat: int = 5) -> float:
    """The SDK client's own parse of such an answer (JSON-RPC message, then ListToolsResult),
    without any server: the part of the SDK client's tools/list that is not toolctl's."""
    from mcp.types import JSONRPCMessage, ListToolsResult

    text = json.dumps({"jsonrpc": "2.0", "id": 1, "result": listing_of(tools)})
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        message = JSONRPCMessage.model_validate_json(text)
        ListToolsResult.model_validate(message.root.result)  # type: ignore[union-attr]
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def raw_list_time(registry: Path, repeat: int = 7) -> float:
    """tools/list through a bare JSON-RPC client on the pipes: the server's own time."""
    child = subprocess.Popen(
        [sys.executable, "-m", "toolctl", "mcp", "serve", "--registry", str(registry)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    def ask(message: dict[str, Any]) -> bytes:
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()
        return stdout.readline() if "id" in message else b""

    hello = {"protocolVersion": "2025-11-25", "capabilities": {}}
    ask(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {**hello, "clientInfo": {"name": "b", "version": "0"}},
        }
    )
    ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
    samples = []
    for number in range(repeat + 1):
        started = time.perf_counter()
        ask({"jsonrpc": "2.0", "id": number + 1, "method": "tools/list"})
        samples.append(time.perf_counter() - started)
    stdin.close()
    child.wait(timeout=30)
    return statistics.median(samples[1:])


def rest_rounds(
    options: argparse.Namespace,
    settings: Settings,
    servers: dict[str, str],
    wrk: str | None,
    script: Path,
) -> dict[str, float]:
    """Median calls/s of each server under each load generator, and of the library's batch,
    the rounds alternating between them."""
    lines = [json.dumps({"n": n}) for n in range(options.calls)]
    samples: dict[str, list[float]] = {}
    for _ in range(options.rounds):
        for name, url in servers.items():
            if wrk is not None:
                rate = wrk_batch(wrk, script, url, options.wrk_seconds, options.concurrency)
                samples.setdefault(f"{name}, wrk", []).append(rate)
            rate = rest_batch(url, options.calls, options.concurrency)
            samples.setdefault(f"{name}, Python client", []).append(rate)
        rate = library_batch(settings, lines, options.concurrency)
        samples.setdefault("library", []).append(rate)
    return {name: statistics.median(values) for name, values in samples.items()}


def rest_report(options: argparse.Namespace, rates: dict[str, float], wrk: bool) -> None:
    library = rates["library"]
    rows = [("load average (1 min)", f"{os.getloadavg()[0]:8.2f} on {os.cpu_count()} cores")]
    for client in ("wrk", "Python client"):
        if f"serve, {client}" not in rates:
            rows.append((f"POST /run_tool, {client}", "     n/a (scripts/install-wrk.sh)"))
            continue
        rate = rates[f"serve, {client}"]
        headline = " (the headline)" if client == "wrk" or not wrk else ""
        how = f"{options.wrk_seconds:g} s of calls" if client == "wrk" else f"{options.calls} calls"
        rows += [
            (f"POST /run_tool, {client}", f"{rate:8.0f} calls/s ({how}, no errors)"),
            (f"  ratio to library batch{headline}", f"{rate / library:8.2f} (target >= 0.5)"),
            ("  ratio to bare Starlette app", f"{rate / rates[f'bare app, {client}']:8.2f}"),
        ]
        if f"baseline, {client}" in rates:
            base = rates[f"baseline, {client}"]
            rows.append(
                (
                    f"  baseline {options.baseline}",
                    f"{base:8.0f} calls/s, ratio {base / library:.2f}",
                )
            )
        if f"no history, {client}" in rates:
            off = rates[f"no history, {client}"]
            rows.append(
                (
                    "  with history off (TOOLCTL_HISTORY=0)",
                    f"{off:8.0f} calls/s; with it on at {rate / off:.2f} of that",
                )
            )
        rows.append(
            (f"  bare Starlette app, {client}", f"{rates[f'bare app, {client}']:8.0f} calls/s")
        )
    rows.append(("library batch", f"{library:8.0f} calls/s ({options.calls} calls)"))
    title = f"(a)/(b) POST /run_tool of a Pulsar tool at concurrency {options.concurrency}"
    report(title, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mcp-calls", type=int, default=300)
    parser.add_argument("--wrk-seconds", type=int, default=2)
    parser.add_argument("--baseline", metavar="DIR", help="another checkout to compare with")
    options = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    wrk = find_wrk()
    with tempfile.TemporaryDirectory(prefix="toolctl-bench-serve-") as temporary:
        work = Path(temporary)
        project = work / "project"
        (project / "registry").mkdir(parents=True)
        (project / "registry" / "bench.toml").write_text(REGISTRY)
        (project / "benchecho.py").write_text(HANDLER)
        age(project / "registry")
        script = work / "run_tool.lua"
        script.write_text(WRK_SCRIPT)
        os.environ["XDG_CACHE_HOME"] = str(work / "cache")
        os.environ["XDG_STATE_HOME"] = str(work / "state")
        with (
            broker.running_in(work / "broker") as url,
            running_worker(project, url, options.concurrency),
            ExitStack() as servers,
        ):
            settings = Settings.load([project / "registry"], pulsar_url=url)
            registry = project / "registry"
            base, pid = servers.enter_context(running_serve(registry, url, options.concurrency))
            urls = {"serve": base}
            urls["no history"] = servers.enter_context(  # TOOLCTL_HISTORY=0: its cost
                running_serve(
                    registry, url, options.concurrency, extra_env={"TOOLCTL_HISTORY": "0"}
                )
            )[0]
            if options.baseline:
                tree = Path(options.baseline).resolve()
                urls["baseline"] = servers.enter_context(
                    running_serve(registry, url, options.concurrency, tree)
                )[0]
            urls["bare app"] = servers.enter_context(running_floor())
            for each in urls.values():
                rest_batch(each, 100, options.concurrency)  # warm: connections, threads
            memory = [("after 100 calls", f"{rss_kib(pid) / 1024:8.1f} MiB")]
            rest_batch(base, 9_900, options.concurrency)
            memory.append(("after 10,000 calls", f"{rss_kib(pid) / 1024:8.1f} MiB"))
            rates = rest_rounds(options, settings, urls, wrk, script)
            rest_report(options, rates, wrk is not None)
            made = 10_000 + options.rounds * options.calls
            if wrk is not None:  # wrk's calls, at the rate it measured
                made += int(options.rounds * options.wrk_seconds * rates["serve, wrk"])
            memory.append((f"after ~{made:,} calls", f"{rss_kib(pid) / 1024:8.1f} MiB"))
            servers.close()
            mcp = mcp_call_p50(project / "registry", url, options.mcp_calls)
            direct = library_call_p50(settings, options.mcp_calls)
            report(
                f"(c)/(d) tools/call p50 over {options.mcp_calls} sequential calls",
                [
                    ("MCP over stdio (SDK client)", f"{mcp * 1000:8.3f} ms"),
                    ("direct library call", f"{direct * 1000:8.3f} ms"),
                    ("ratio", f"{mcp / direct:8.2f} (target <= 2)"),
                ],
            )
        report("(f) serve RSS", memory)
        listing = {n: tools_list(big_registry(work, n)) for n in (1000, 10000)}
        rows = [
            (f"{n} tools", f"{t * 1000:8.1f} ms, {size / 1e6:6.2f} MB, {count} listed")
            for n, (t, size, count) in listing.items()
        ]
        raw = {n: raw_list_time(work / f"registry-{n}") for n in (1000, 10000)}
        floor = {n: dumps_time(n) for n in (1000, 10000)}
        parse = {n: sdk_parse_time(n) for n in (1000, 10000)}
        rows += [
            (f"{n} tools, server alone", f"{raw[n] * 1000:8.1f} ms (a bare JSON-RPC client)")
            for n in raw
        ]
        rows += [
            *(
                (f"{n} tools, SDK's parse alone", f"{parse[n] * 1000:8.1f} ms (no server)")
                for n in parse
            ),
            ("SDK client ratio 10k/1k", f"{listing[10000][0] / listing[1000][0]:8.1f}"),
            ("SDK's parse alone ratio 10k/1k", f"{parse[10000] / parse[1000]:8.1f}"),
            ("server alone ratio 10k/1k", f"{raw[10000] / raw[1000]:8.1f}"),
            ("json.dumps ratio 10k/1k", f"{floor[10000] / floor[1000]:8.1f} (linear, here)"),
        ]
        report("(e) tools/list", rows)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
