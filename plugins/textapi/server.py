"""A small HTTP text service: /health, POST /stats, GET /slug. Standard library only.

toolctl starts it with ``--port {port}`` on a free port and waits for ``/health``.
"""

from __future__ import annotations

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


def stats(arguments: dict[str, Any]) -> dict[str, Any]:
    text = str(arguments.get("text", ""))
    data = {
        "letters": sum(c.isalpha() for c in text),
        "digits": sum(c.isdigit() for c in text),
        "spaces": sum(c.isspace() for c in text),
    }
    output = ", ".join(f"{count} {kind}" for kind, count in data.items())
    return {"success": True, "output": output, "data": data}


def slug(arguments: dict[str, Any]) -> dict[str, Any]:
    words = re.findall(r"[a-z0-9]+", str(arguments.get("title", "")).lower())
    return {"success": True, "output": "-".join(words), "data": {"slug": "-".join(words)}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: with Nagle on, the body waits for the client's
    # delayed ACK (~40 ms) on every keep-alive request
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/health":
            self._answer(200, {"status": "ok"})
        elif url.path == "/slug":
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            self._answer(200, slug(query))
        else:
            self._answer(404, {"error": f"no such path: {url.path}"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            arguments = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._answer(400, {"error": "the body is not JSON"})
            return
        if urlsplit(self.path).path == "/stats":
            self._answer(200, stats(arguments))
        else:
            self._answer(404, {"error": f"no such path: {self.path}"})

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: toolctl keeps this process's output as its log


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 resets connections when a batch opens 16 at once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    Server((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
