"""The joke service from TrustGraph's tool-services spec: ``invoke(config, arguments, user)``.

`toolctl worker joke-service` hosts this on the service's Pulsar request queue.
"""

from __future__ import annotations

from typing import Any

JOKES = {
    "pun": {
        "programming": "I would tell you a UDP joke, but you might not get it.",
        "animals": "What do you call a sleeping bull? A bulldozer.",
        "food": "I'm on a seafood diet: I see food and I eat it.",
    },
    "one-liner": {
        "programming": "There are 10 kinds of people: those who read binary and those who don't.",
        "animals": "A cat's job is to sit on whatever you are using.",
        "food": "Broccoli is just a tree you can eat.",
    },
}


def invoke(config: dict[str, Any], arguments: dict[str, Any], user: str) -> str:
    style = str(config.get("style", "pun"))
    topic = str(arguments.get("topic", "")).strip().lower()
    jokes = JOKES.get(style, JOKES["pun"])
    joke = (
        jokes.get(topic) or f"I tried to think of a joke about {topic or 'nothing'}; no punchline."
    )
    return f"Hey {user}! Here's a {style} for you:\n\n{joke}"
