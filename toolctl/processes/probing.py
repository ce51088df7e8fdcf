"""The one health probe for background processes, and free ports to launch them on.

``probe(url, timeout)`` has one contract for every kind: ``UP`` when the process answers
as it should, ``DOWN`` when it refuses (nothing listens, an error status), ``BUSY`` when it
says nothing within ``timeout`` (alive, maybe serving long calls: not a reason to restart).
"""

from __future__ import annotations

import enum
import socket
from urllib.parse import urlsplit

HOST = "127.0.0.1"


class Health(enum.Enum):
    UP = "up"
    DOWN = "down"
    BUSY = "busy"


def probe(url: str, timeout: float) -> Health:
    """``http://HOST:PORT/PATH``: GET answers 2xx. ``tcp://HOST:PORT``: accepts a connection."""
    import http.client

    parts = urlsplit(url)
    if parts.scheme not in ("http", "tcp") or (parts.port is None and parts.scheme == "tcp"):
        raise ValueError(f"cannot probe {url!r}: expected http://HOST:PORT/PATH or tcp://HOST:PORT")
    host = parts.hostname or HOST
    try:
        if parts.scheme == "tcp":
            with socket.create_connection((host, parts.port or 0), timeout=timeout):
                return Health.UP
        connection = http.client.HTTPConnection(host, parts.port, timeout=timeout)
        try:
            connection.request("GET", parts.path or "/")
            status = connection.getresponse().status
        finally:
            connection.close()
    except TimeoutError:
        return Health.BUSY
    except (OSError, http.client.HTTPException):
        return Health.DOWN
    return Health.UP if 200 <= status < 300 else Health.DOWN


def free_port() -> int:
    """A port nobody listens on right now (another process may take it before we do)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port
