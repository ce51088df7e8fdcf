"""`toolctl serve` says where it serves, the MCP endpoint included, and an MCP client
reaches the tools there."""

from __future__ import annotations

import re

import anyio

from tests.serve.mcp_clients import http_session
from tests.serve.serve_support import StartServe


def test_serve_prints_its_mcp_url(serve: StartServe) -> None:
    served = serve()
    line = next(line for line in served.log.read_text().splitlines() if "serving" in line)
    found = re.fullmatch(
        r"toolctl: serving \d+ tools at (http://[^,]+), MCP at (\S+); SIGTERM stops it", line
    )
    assert found, line
    assert found[1] == served.url
    assert found[2] == f"{served.url}/mcp"

    async def main() -> None:
        async with http_session(found[2].removesuffix("/mcp")) as session:
            assert (await session.list_tools()).tools

    anyio.run(main)
