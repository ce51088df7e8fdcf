"""`import chat2graph --as-loaded` + `recommend` answer what Chat2Graph itself answers.

The cases were computed by Chat2Graph's own loader and ``recommend_subgraph`` on its
default agent file (see ``data/README.md``); that file is read from ``../shared/data``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Toolctl
from tests.interchange.test_shared_data import SHARED
from toolctl.graph import Toolkit, recommend
from toolctl.interchange import read_import
from toolctl.interchange.slugs import slug

CASES = json.loads((Path(__file__).parent / "data" / "chat2graph_recommend_cases.json").read_text())
DEFAULT_AGENT = SHARED / "chat2graph" / "app_core_sdk_chat2graph.yml"


def toolkit(as_loaded: bool) -> Toolkit:
    if not DEFAULT_AGENT.is_file():
        pytest.skip(f"{DEFAULT_AGENT} is absent (CI has ../shared beside the checkout)")
    imported = read_import("chat2graph", [DEFAULT_AGENT], as_loaded=as_loaded)
    actions = [e.definition.data for e in imported.entries if e.definition.kind == "action"]
    tools = {e.definition.name: "local" for e in imported.entries if e.definition.kind == "tool"}
    return Toolkit.from_data(actions, tools, [])


def answer(kit: Toolkit, case: dict[str, Any]) -> dict[str, Any]:
    found = recommend(kit, [slug(s) for s in case["start"]], case["hops"], case["threshold"])
    data = found.to_json()
    return {
        "actions": [a["name"] for a in data["actions"]],
        "tools": [t["name"] for t in data["tools"]],
        "edges": sorted([e["from"], e["to"], e["kind"]] for e in data["edges"]),
    }


def expected(case: dict[str, Any]) -> dict[str, Any]:
    return {
        "actions": sorted(slug(a) for a in case["actions"]),
        "tools": sorted(slug(t) for t in case["tools"]),
        "edges": sorted([slug(u), slug(v), kind] for u, v, kind in case["edges"]),
    }


def test_as_loaded_answers_every_case_as_chat2graph_does() -> None:
    kit = toolkit(as_loaded=True)
    assert len(CASES) == 330
    wrong = [c for c in CASES if answer(kit, c) != expected(c)]
    assert wrong == []


def test_separate_chains_stay_the_default_and_do_differ() -> None:
    kit = toolkit(as_loaded=False)
    differ = sum(answer(kit, c) != expected(c) for c in CASES)
    assert differ == 158
    for case in CASES:
        if case["hops"] == 0:  # without hops only the start's own Call edges count
            assert answer(kit, case) == expected(case)


def test_an_action_naming_an_undefined_tool_points_at_as_loaded(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    config = tmp_path / "agent.yml"
    config.write_text(
        "tools:\n  - {name: Known, type: LOCAL_TOOL, module_path: app.tools}\n"
        "actions:\n  - {name: act, tools: [{name: Known}, {name: Phantom}]}\n"
    )
    refused = toolctl("import", "chat2graph", str(config), "-r", str(tmp_path / "reg"))
    assert refused.returncode == 3
    assert "action 'act' calls unknown tool 'Phantom'" in refused.stderr
    assert "'toolctl import chat2graph --as-loaded' imports the file as it does" in refused.stderr
    loaded = toolctl(
        "import", "chat2graph", str(config), "--as-loaded", "-r", str(tmp_path / "reg")
    )
    assert loaded.returncode == 0, loaded.stderr
