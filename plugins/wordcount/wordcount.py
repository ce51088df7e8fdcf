"""Count the words, lines and characters of the text given as JSON on stdin.

Answers in ToolResult shape, so toolctl takes ``output`` as the observation and ``data`` as
the structured result.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    arguments = json.load(sys.stdin)
    text = arguments["text"]
    counts = {"words": len(text.split()), "lines": len(text.splitlines()), "chars": len(text)}
    output = f"{counts['words']} words, {counts['lines']} lines, {counts['chars']} characters"
    json.dump({"success": True, "output": output, "data": counts}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
