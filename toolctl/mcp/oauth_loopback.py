"""Where `toolctl mcp login` meets the browser: the authorization URL opened where a
browser can be, and the redirect's listener on 127.0.0.1 that takes the code back."""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from toolctl.errors import TransportUnavailable

LOGIN_SECONDS = 300.0
"""How long `mcp login` waits for the browser to come back."""


def open_browser(url: str) -> None:
    """Open ``url`` where a browser can be opened; the printed URL does the rest."""
    if os.environ.get("BROWSER") == "" or not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform == "darwin"
    ):
        return
    import webbrowser

    with contextlib.suppress(webbrowser.Error):
        webbrowser.open(url)


class Loopback:
    """The redirect's listener on 127.0.0.1 (a free port): each ``wait`` takes the next
    ``code`` (a step-up in one login is a second authorization)."""

    def __init__(self) -> None:
        self._answers: queue.Queue[tuple[str, str | None] | str] = queue.Queue()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                code, state = query.get("code", [None])[0], query.get("state", [None])[0]
                if code:
                    outer._answers.put((code, state))
                    text = "toolctl: logged in; you can close this page."
                else:
                    error = (query.get("error") or ["no code"])[0]
                    outer._answers.put(error)
                    text = f"toolctl: login failed: {error}"
                body = text.encode()
                self.send_response(200 if code else 400)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = HTTPServer(("127.0.0.1", 0), Handler)
        self.redirect_uri = f"http://127.0.0.1:{self._server.server_address[1]}/callback"

    def __enter__(self) -> Loopback:
        # a short poll: shutdown() waits for serve_forever's next look (0.5 s by default)
        serving = functools.partial(self._server.serve_forever, poll_interval=0.05)
        threading.Thread(target=serving, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    async def wait(self) -> tuple[str, str | None]:
        import anyio

        def take() -> tuple[str, str | None] | str | None:
            try:
                return self._answers.get(timeout=LOGIN_SECONDS)
            except queue.Empty:
                return None

        answer = await anyio.to_thread.run_sync(take)
        if answer is None:
            raise TransportUnavailable(f"no login came back in {LOGIN_SECONDS:g} s")
        if isinstance(answer, str):
            raise TransportUnavailable(f"the authorization server refused: {answer}")
        return answer
