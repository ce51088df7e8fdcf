"""The conformance suite's tools as plain local tools: ``python3 conformance_tools.py NAME``.

Content tools print MCP content blocks as JSON (their descriptors say ``output = "mcp"``);
logging and progress go to stderr in toolctl's line protocol (``toolctl:log LEVEL TEXT``,
``toolctl:progress DONE/TOTAL``); the error tool exits 1 with its reason on stderr.
"""

from __future__ import annotations

import json
import sys
import time

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAAAAgAB4iErwAAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA="


def emit(blocks: list[dict[str, object]]) -> None:
    print(json.dumps(blocks))


def report(line: str) -> None:
    sys.stderr.write(f"toolctl:{line}\n")
    sys.stderr.flush()


def main(name: str) -> int:
    if name == "image":
        emit([{"type": "image", "data": PNG, "mimeType": "image/png"}])
    elif name == "audio":
        emit([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])
    elif name == "embedded":
        resource = {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content.",
        }
        emit([{"type": "resource", "resource": resource}])
    elif name == "mixed":
        resource = {
            "uri": "test://mixed-content-resource",
            "mimeType": "application/json",
            "text": json.dumps({"test": "data", "value": 123}),
        }
        emit([
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "resource", "resource": resource},
        ])  # fmt: skip
    elif name == "logging":
        for step, text in enumerate(
            ("Tool execution started", "Tool processing data", "Tool execution completed")
        ):
            time.sleep(0.05 if step else 0)
            report(f"log info {text}")
        print("Logged three messages")
    elif name == "progress":
        for step in (0, 50, 100):
            report(f"progress {step}/100")
            time.sleep(0.05)
        print("Progress reported")
    elif name == "error":
        sys.stderr.write("This tool intentionally returns an error for testing\n")
        return 1
    else:
        sys.stderr.write(f"unknown tool {name}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
