"""BFCL multi-turn base as OpenAI chat transcripts (JSONL on stdout).

Run by ``bench/learn_bfcl.py`` with the Python of a venv holding ``bfcl-eval`` (it needs
nothing of toolctl). For each of the 200 conversations of ``BFCL_v4_multi_turn_base.json``:
the user turns become user messages (the query); each ground-truth call of
``possible_answer/BFCL_v4_multi_turn_base.json`` becomes an assistant message with one
``tool_calls`` entry, executed in order on BFCL's own backend classes (loaded with the
conversation's ``initial_config``) so that its ``tool`` message holds the real result; the
functions of the involved classes (``multi_turn_func_doc``, less ``excluded_function``)
become the top-level ``tools`` list of OpenAI function definitions. A result that BFCL's
backend reports as an error is written as ``{"error": ...}`` (none of the ground truth does).
"""

from __future__ import annotations

import ast
import copy
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import bfcl_eval
from bfcl_eval.constants.executable_backend_config import (
    CLASS_FILE_PATH_MAPPING,
    MULTI_TURN_FUNC_DOC_FILE_MAPPING,
    STATELESS_CLASSES,
)

DATA = Path(bfcl_eval.__file__).parent / "data"
CATEGORY = "BFCL_v4_multi_turn_base.json"


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def openai_tool(doc: dict[str, Any]) -> dict[str, Any]:
    parameters = copy.deepcopy(doc["parameters"])
    parameters["type"] = "object"  # BFCL writes "dict"
    function = {"name": doc["name"], "description": doc["description"], "parameters": parameters}
    return {"type": "function", "function": function}


def parse_call(text: str, docs: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """``mv(source='a', destination='b')`` → ("mv", {...}); positional arguments named in
    the order the function's documentation lists its parameters."""
    node = ast.parse(text, mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a call: {text}")
    name = node.func.id
    order = list(docs[name]["parameters"].get("properties", {}))
    arguments = {order[i]: ast.literal_eval(arg) for i, arg in enumerate(node.args)}
    arguments.update({k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg})
    return name, arguments


def execute(instances: list[Any], name: str, arguments: dict[str, Any]) -> str:
    method = next((getattr(i, name) for i in instances if hasattr(i, name)), None)
    if method is None or name.startswith("_"):
        return json.dumps({"error": f"no function {name}"})
    try:
        result = method(**arguments)
    except Exception as exc:  # BFCL's own executor turns any exception into an error result
        return json.dumps({"error": f"Error during execution: {exc}"})
    return json.dumps(result, sort_keys=True, default=str)


def conversation(entry: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    docs: dict[str, dict[str, Any]] = {}
    instances = []
    for name in entry["involved_classes"]:
        documented = DATA / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[name]
        for doc in load_jsonl(documented):
            if doc["name"] not in entry.get("excluded_function", []):
                docs[doc["name"]] = doc
        instance = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[name]), name)()
        if name not in STATELESS_CLASSES:
            config = copy.deepcopy(entry["initial_config"].get(name, {}))
            instance._load_scenario(config, long_context=False)
        instances.append(instance)
    messages: list[dict[str, Any]] = []
    for turn, calls in zip(entry["question"], answer["ground_truth"], strict=True):
        messages += [{"role": m["role"], "content": m["content"]} for m in turn]
        for text in calls:
            name, arguments = parse_call(text, docs)
            call_id = f"call_{sum(1 for m in messages if m['role'] == 'tool') + 1}"
            function = {"name": name, "arguments": json.dumps(arguments, sort_keys=True)}
            call = {"id": call_id, "type": "function", "function": function}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            result = execute(instances, name, arguments)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    tools = [openai_tool(docs[name]) for name in sorted(docs)]
    return {"id": entry["id"], "messages": messages, "tools": tools}


def main() -> None:
    answers = {a["id"]: a for a in load_jsonl(DATA / "possible_answer" / CATEGORY)}
    for entry in load_jsonl(DATA / CATEGORY):
        line = conversation(entry, answers[entry["id"]])
        sys.stdout.write(json.dumps(line, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
