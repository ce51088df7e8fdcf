"""Transcripts for the learning tests: small agent conversations in OpenAI chat JSONL.

Two domains, a file system and a social network, each with its own tools and habits (cd
before ls, authenticate before posting); a user request names what it wants in its own
words. Seeded, so every run writes the same file.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

TOOLS = {
    "cd": "Change the current working directory to the given folder",
    "ls": "List the files and folders of the current directory",
    "cat": "Display the content of a file",
    "mv": "Move or rename a file",
    "grep": "Search a file for lines matching a pattern",
    "authenticate_twitter": "Log in to Twitter with a username and password",
    "post_tweet": "Post a tweet with some content",
    "comment": "Comment on a tweet",
    "get_user_stats": "Show the statistics of a Twitter user",
}
FILES = ["cd", "ls", "cat", "mv", "grep"]
SOCIAL = ["authenticate_twitter", "post_tweet", "comment", "get_user_stats"]
REQUESTS = {
    "ls": ["Go to {f} and list what is there", "What files are in {f}?"],
    "cat": ["Go to {f} and display the report", "Show me what the notes say"],
    "mv": ["Move the draft into {f}", "Rename the file to final"],
    "grep": ["Search the log for errors", "Find the lines matching budget"],
    "post_tweet": ["Post a tweet saying we shipped", "Tweet the news"],
    "comment": ["Comment on my last tweet", "Reply with a comment under the tweet"],
    "get_user_stats": ["How many followers do I have? Show my statistics"],
}


def function(name: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"name": {"type": "string"}}}
    return {
        "type": "function",
        "function": {"name": name, "description": TOOLS[name], "parameters": parameters},
    }


def conversation(rng: random.Random, number: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    counter = 0

    def called(name: str, ok: bool = True) -> None:
        nonlocal counter
        counter += 1
        call = {
            "id": f"c{counter}",
            "type": "function",
            "function": {"name": name, "arguments": "{}"},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        content = json.dumps({"result": "ok"} if ok else {"error": "failed"})
        messages.append({"role": "tool", "tool_call_id": f"c{counter}", "content": content})

    social = number % 2 == 1
    for turn in range(rng.randint(2, 4)):
        goal = rng.choice(
            ["post_tweet", "comment", "get_user_stats"] if social else ["ls", "cat", "mv", "grep"]
        )
        text = rng.choice(REQUESTS[goal]).format(f=rng.choice(["docs", "temp", "archive"]))
        messages.append({"role": "user", "content": text})
        if social and turn == 0:
            called("authenticate_twitter")
        if not social and goal in ("ls", "cat", "mv"):
            called("cd")
        called(goal, ok=rng.random() > 0.1)
    offered = SOCIAL + FILES[:2] if social else FILES + SOCIAL[:1]
    return {
        "id": f"conv-{number}",
        "messages": messages,
        "tools": [function(name) for name in sorted(offered)],
    }


def calls_in_turn(names: list[str]) -> dict[str, Any]:
    """One conversation calling ``names`` in turn, each answered "ok" (OpenAI chat JSONL)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for number, name in enumerate(names):
        call = {"id": f"c{number}", "type": "function",
                "function": {"name": name, "arguments": "{}"}}  # fmt: skip
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": f"c{number}", "content": "ok"}]  # fmt: skip
    return {"messages": messages}


def write_transcripts(path: Path, count: int = 40, seed: int = 26) -> Path:
    rng = random.Random(seed)
    path.write_text("".join(json.dumps(conversation(rng, i)) + "\n" for i in range(count)))
    return path


def registry_toml() -> str:
    """Every tool above as a registered local tool with one argument."""
    return "".join(
        f'[[tool]]\nname = "{name}"\ndescription = "{text}"\n[tool.local]\ncommand = ["true"]\n'
        '[[tool.arguments]]\nname = "name"\ntype = "string"\ndescription = "What to act on"\n\n'
        for name, text in TOOLS.items()
    )
