"""Bad input at every route and at /mcp: seeded random bodies and query strings never make
the server answer 5xx, hang, or stop answering."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx

from tests.serve.serve_support import StartServe

ROUTES = ["/health", "/tools", "/run_tool", "/recommend", "/openapi.json", "/mcp"]


def junk(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value, with the keys the routes look at showing up often."""
    kinds = ["null", "bool", "int", "float", "str"] + (["list", "dict"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice([0, -1, 2**63, rng.randint(-1000, 1000)])
    if kind == "float":
        return rng.choice([0.5, -1e308, 1e308])
    if kind == "str":
        return rng.choice(["", "echo", "fail", "\u0000", "x" * 300, "../../etc", "é✓"])
    if kind == "list":
        return [junk(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["tool_id", "params", "jsonrpc", "id", "method", "text", "name", "arguments"]
    return {rng.choice(keys): junk(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_routes_survive_junk(serve: StartServe) -> None:
    url = serve().url
    rng = random.Random(20261123)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client(timeout=30) as client:
        for _ in range(60):
            route = rng.choice(ROUTES)
            body = json.dumps(junk(rng)).encode() if rng.random() < 0.8 else rng.randbytes(40)
            method = rng.choice(["GET", "POST", "DELETE", "PUT"])
            params = {rng.choice(["action", "hops", "threshold", "x"]): str(junk(rng))}
            answer = client.request(
                method, f"{url}{route}", content=body, params=params, headers=headers
            )
            assert answer.status_code < 500, (method, route, body, answer.status_code, answer.text)
        assert client.get(f"{url}/health").json()["status"] == "ok"
        ran = client.post(f"{url}/run_tool", json={"tool_id": "echo", "params": {"text": "ok"}})
        assert ran.json()["output"] == "ok"
