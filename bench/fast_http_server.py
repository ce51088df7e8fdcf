"""A lean HTTP/1.1 keep-alive server for the HTTP benchmark: GET /health, POST /stats.

The stdlib ThreadingHTTPServer (plugins/textapi/server.py) spends ~0.7 ms of CPU per request
on this machine, so in a benchmark of the client it is the server that sets the pace. This
one is an asyncio Protocol (no StreamReader, no task per connection) on uvloop when it is
installed: ~40-90 us of CPU per request on the stdlib loop, so the client side is what gets
measured. It speaks only what the benchmark's clients send: requests with a Content-Length
(or none), answered in order on the connection they came on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any, cast


def stats(text: str) -> dict[str, Any]:
    data = {
        "letters": sum(c.isalpha() for c in text),
        "digits": sum(c.isdigit() for c in text),
        "spaces": sum(c.isspace() for c in text),
    }
    output = ", ".join(f"{count} {kind}" for kind, count in data.items())
    return {"success": True, "output": output, "data": data}


def answer(head: bytes, body: bytes) -> bytes:
    """The whole HTTP answer to one request."""
    if head.startswith(b"POST /stats"):
        payload = json.dumps(stats(str(json.loads(body or b"{}").get("text", "")))).encode()
    else:
        payload = b'{"status": "ok"}'
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(payload),
        payload,
    )


def content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


class Connection(asyncio.Protocol):
    """One keep-alive connection: requests parsed from a buffer, answers written at once."""

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        out = []
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:end]
            size = content_length(head)
            if len(self.buffer) < end + 4 + size:
                break  # the body is still on its way
            body = self.buffer[end + 4 : end + 4 + size]
            self.buffer = self.buffer[end + 4 + size :]
            out.append(answer(head, body))
        if out and self.transport is not None:
            self.transport.write(b"".join(out))


async def main(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Connection, "127.0.0.1", port, backlog=256)
    async with server:
        await server.serve_forever()


def run(port: int) -> None:
    try:
        import uvloop  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        asyncio.run(main(port))
    else:
        uvloop.run(main(port))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    run(parser.parse_args().port)
