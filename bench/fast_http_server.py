"""A lean HTTP/1.1 keep-alive server on asyncio for the HTTP benchmark: GET /health, POST /stats.

The stdlib ThreadingHTTPServer (plugins/textapi/server.py) spends ~0.7 ms of CPU per request
on this machine, so in a benchmark of the client it is the server that sets the pace. This
one answers the same /stats in a fraction of that, so the client side is what gets measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any


def stats(text: str) -> dict[str, Any]:
    data = {
        "letters": sum(c.isalpha() for c in text),
        "digits": sum(c.isdigit() for c in text),
        "spaces": sum(c.isspace() for c in text),
    }
    output = ", ".join(f"{count} {kind}" for kind, count in data.items())
    return {"success": True, "output": output, "data": data}


async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            headers = {
                k.strip().lower(): v.strip()
                for k, _, v in (line.partition(":") for line in header_lines if line)
            }
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if request_line.startswith("POST /stats"):
                answer = stats(str(json.loads(body or b"{}").get("text", "")))
            else:
                answer = {"status": "ok"}
            payload = json.dumps(answer).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(serve_connection, "127.0.0.1", port, backlog=256)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    asyncio.run(main(parser.parse_args().port))
